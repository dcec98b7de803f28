"""Session slots shared by every process of one host: a small table in a memory-mapped file.

``serve --workers N`` gives each worker the same file, so ``--max-sessions`` and
``--max-sessions-per-client`` hold for the host, not per worker. Each taken slot records
the process that took it and a digest of the client's address; a process that dies
(``kill -9`` included) leaves its rows behind, and :meth:`HostCounter.reclaim` frees them
(the parent calls it when it reaps a worker). Writers take an ``flock`` on the file, which
the kernel drops when its holder dies, so a worker killed mid-update never wedges the rest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stream.admission import Refusal

_ROW = np.dtype([("pid", "<i8"), ("client", "<i8")])
"""One slot: the process holding it (0: free) and the client's address digest."""


def client_key(client: str) -> int:
    """A 63-bit digest of a client's address (never 0, so it cannot look free)."""
    digest = hashlib.blake2b(client.encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "little") >> 1) or 1


class HostCounter:
    """A :class:`stream.admission.SessionCounter` over ``path``, for at most ``slots`` sessions.

    :meth:`create` makes the file (the parent, once); every process then opens its own
    ``HostCounter(path)``. Call from one thread per process (the event loop's).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(self._fd, 0)
        except BaseException:
            os.close(self._fd)
            raise
        self._rows: npt.NDArray[np.void] = np.ndarray(
            (len(self._map) // _ROW.itemsize,), _ROW, self._map
        )

    @staticmethod
    def create(path: Path, slots: int) -> None:
        """A fresh table of ``slots`` free slots at ``path`` (replacing any)."""
        path.write_bytes(bytes(_ROW.itemsize * max(1, slots)))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def take(self, client: str, max_total: int, max_per_client: int) -> Refusal | None:
        key = client_key(client)
        with self._locked():
            pids, clients = self._rows["pid"], self._rows["client"]
            taken = pids != 0
            if int(taken.sum()) >= min(max_total, len(self._rows)):
                return "full"
            if int((taken & (clients == key)).sum()) >= max_per_client:
                return "client"
            free = int(np.argmin(taken))
            pids[free], clients[free] = os.getpid(), key
        return None

    def give_back(self, client: str) -> None:
        key = client_key(client)
        with self._locked():
            pids, clients = self._rows["pid"], self._rows["client"]
            mine = np.flatnonzero((pids == os.getpid()) & (clients == key))
            if len(mine):
                pids[mine[0]] = 0

    def total(self) -> int:
        return int(np.count_nonzero(self._rows["pid"]))

    def held(self) -> dict[int, int]:
        """How many slots each process holds (pid: count), those holding any."""
        pids, counts = np.unique(self._rows["pid"], return_counts=True)
        return {int(pid): int(n) for pid, n in zip(pids, counts, strict=True) if pid}

    def reclaim(self, pid: int) -> int:
        """Free every slot of process ``pid`` (it has died); how many there were."""
        with self._locked():
            pids = self._rows["pid"]
            held = pids == pid
            pids[held] = 0
        return int(held.sum())

    def close(self) -> None:
        del self._rows
        self._map.close()
        os.close(self._fd)
