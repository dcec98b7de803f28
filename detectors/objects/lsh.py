"""Locality-sensitive hashing of 256-bit binary descriptors, vectorised in numpy.

Each of ``tables`` hash tables keys a descriptor by ``key_bits`` of its bits
(chosen at random, fixed by ``seed``); two descriptors a small Hamming distance
apart share a key in at least one table with high probability. The tables are
sorted arrays, so a batch of queries is a handful of ``searchsorted`` calls and
one vectorised Hamming computation over the candidates (``np.bitwise_count``):
no per-query Python work and no hash-map lookups. OpenCV's FLANN LSH spends
about 10 µs a query in bucket lookups, which is over budget for 1400 queries a
frame; this does the same batch in a few milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from detectors.objects.features import Descriptors

Ints = npt.NDArray[np.int64]
_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Per query: the nearest candidate, its distance, and the distance of the nearest
    candidate of *another* group (``NO_MATCH`` when there is none)."""

    index: Ints  # -1: no candidate at all
    distance: Ints
    other_distance: Ints


NO_MATCH = 257
"""A distance larger than any between two 256-bit descriptors."""


class BinaryLsh:
    """An immutable LSH index over ``descriptors`` (N x 32 uint8), each in group ``groups[i]``.

    Each table is the descriptors' rows (each packed with its group) sorted by
    key, in random order within a key, plus, for every possible key, where its
    bucket starts: a lookup is two array reads.

    Args:
        tables: hash tables; more find more true neighbours and cost more.
        key_bits: bits per key, at most 16 (bucket starts are a table of 2**key_bits).
        max_bucket: at most this many entries of one bucket are compared (a random
            sample of it), so a bucket of very common descriptors cannot blow up the
            cost. At 100 targets 6 compares 17 % fewer candidates than 8 for as
            many target frames found in ``eval-targets`` (84.2 vs 84.4 %); 4: 82.8 %.
    """

    def __init__(
        self,
        descriptors: Descriptors,
        groups: Ints,
        tables: int = 16,
        key_bits: int = 16,
        max_bucket: int = 6,
        seed: int = 0,
    ) -> None:
        if not 1 <= key_bits <= 16:
            raise ValueError(f"key_bits must be 1..16, got {key_bits}")
        rng = np.random.default_rng(seed)
        self.size = len(descriptors)
        self.max_bucket = max_bucket
        self._bits = np.stack([rng.choice(256, key_bits, replace=False) for _ in range(tables)])
        # float32: the product runs in BLAS (a quarter faster), exact for keys below 2**24.
        self._weights = (2.0 ** np.arange(key_bits)).astype(np.float32)
        self._words = _words(descriptors)
        self.groups = np.asarray(groups, np.int64)
        keys = self._keys(descriptors)  # tables x N
        # Within a bucket, entries in random order (another in each table): the max_bucket
        # compared are then a fair sample of a common bucket, not always the descriptors of
        # the first targets registered (which cost later ones recall).
        shuffled = np.stack([rng.permutation(self.size) for _ in range(tables)])
        order = np.take_along_axis(
            shuffled,
            np.argsort(np.take_along_axis(keys, shuffled, axis=1), axis=1, kind="stable"),
            axis=1,
        )
        sorted_keys = np.take_along_axis(keys, order, axis=1)
        # table t's entries at [t * N, (t + 1) * N), each its group << 32 | its row
        self._entries = ((self.groups[order] << 32) | order).ravel()
        every_key = np.arange((1 << key_bits) + 1)
        self._first = np.concatenate(  # flat: table t's bucket starts at [t * (2**bits + 1), ...)
            [np.searchsorted(row, every_key) + t * self.size for t, row in enumerate(sorted_keys)]
        )
        self._stride = len(every_key)

    def _keys(self, descriptors: Descriptors) -> Ints:
        out = np.empty((len(self._bits), len(descriptors)), np.int64)
        for start in range(0, len(descriptors), _CHUNK):
            bits = np.unpackbits(descriptors[start : start + _CHUNK], axis=1)
            chosen = np.take(bits, self._bits, axis=1).astype(np.float32)
            out[:, start : start + _CHUNK] = (chosen @ self._weights).T
        return out

    def query(self, descriptors: Descriptors) -> Neighbours:
        """Approximate nearest neighbours of every row of ``descriptors``."""
        n = len(descriptors)
        index = np.full(n, -1, np.int64)
        best = np.full(n, NO_MATCH, np.int64)
        other = best.copy()
        if n == 0 or self.size == 0:
            return Neighbours(index, best, other)
        keys = self._keys(descriptors)
        # (numpy's take is several times faster than fancy indexing: it matters here.)
        slots = (keys + np.arange(len(self._bits))[:, None] * self._stride).T.ravel()
        start = np.take(self._first, slots)  # query-major: all tables of query 0, then 1...
        count = np.minimum(np.take(self._first, slots + 1) - start, self.max_bucket)
        total = int(count.sum())
        if total == 0:
            return Neighbours(index, best, other)
        offset = np.cumsum(count) - count
        entry = np.take(self._entries, np.repeat(start - offset, count) + np.arange(total))
        candidate = entry & 0xFFFFFFFF
        per_query = count.reshape(n, -1).sum(axis=1)
        differ = np.take(self._words, candidate, axis=0)
        differ ^= np.repeat(_words(descriptors), per_query, axis=0)
        distance = np.bitwise_count(differ[:, 0]).astype(np.int64)
        for column in range(1, 4):  # column by column: much faster than .sum(axis=1)
            distance += np.bitwise_count(differ[:, column])
        # Rows are grouped by query: one reduceat finds each query's nearest (distance, index).
        asked = np.flatnonzero(per_query)
        heads = np.cumsum(per_query)[asked] - per_query[asked]
        packed = (distance << 32) | candidate
        nearest = np.minimum.reduceat(packed, heads)
        index[asked] = nearest & 0xFFFFFFFF
        best[asked] = nearest >> 32
        # Nearest of another group: the same, with rows of the nearest's group masked out.
        same = entry >> 32 == np.repeat(np.take(self.groups, index[asked]), per_query[asked])
        masked = np.where(same, np.int64(NO_MATCH) << 32, packed)
        other[asked] = np.minimum.reduceat(masked, heads) >> 32
        return Neighbours(index, best, other)


def _words(descriptors: Descriptors) -> npt.NDArray[np.uint64]:
    return np.ascontiguousarray(descriptors, np.uint8).view(np.uint64).reshape(-1, 4)
