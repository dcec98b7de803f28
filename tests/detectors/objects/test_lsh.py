import numpy as np
import pytest

from detectors.objects.lsh import NO_MATCH, BinaryLsh


def _flip(descriptors, bits, rng):
    """Copies of ``descriptors`` with ``bits`` random bits flipped in each."""
    out = np.unpackbits(descriptors, axis=1)
    for row in out:
        row[rng.choice(256, bits, replace=False)] ^= 1
    return np.packbits(out, axis=1)


def _hamming(a, b):
    return int(np.unpackbits(a ^ b).sum())


@pytest.mark.parametrize(("bits", "min_found"), [(0, 1.0), (10, 0.9), (25, 0.5)])
def test_near_copies_find_their_original(bits, min_found):
    rng = np.random.default_rng(bits)
    base = rng.integers(0, 256, (2000, 32), np.uint8)
    lsh = BinaryLsh(base, np.arange(2000) // 100)
    queries = _flip(base[:200], bits, rng)
    near = lsh.query(queries)
    found = near.index == np.arange(200)
    assert found.mean() >= min_found
    assert (near.distance[found] == bits).all()


def test_distances_are_exact_and_other_group_is_farther_or_absent():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 256, (500, 32), np.uint8)
    base[250:] = _flip(base[:250], 4, rng)  # every descriptor has a near twin in group 1
    groups = np.r_[np.zeros(250, int), np.ones(250, int)]
    lsh = BinaryLsh(base, groups)
    near = lsh.query(base[:50])
    assert (near.index == np.arange(50)).all() and (near.distance == 0).all()
    twins = near.other_distance < NO_MATCH
    assert twins.mean() > 0.8
    assert (near.other_distance[twins] == 4).all()
    i = int(np.flatnonzero(twins)[0])
    assert _hamming(base[i], base[250 + i]) == 4


@pytest.mark.parametrize("size", [0, 1])
def test_empty_and_tiny_indexes(size):
    base = np.zeros((size, 32), np.uint8)
    near = BinaryLsh(base, np.zeros(size, int)).query(np.zeros((3, 32), np.uint8))
    assert list(near.index) == ([-1] * 3 if size == 0 else [0] * 3)
    assert (near.other_distance == NO_MATCH).all()


def test_bucket_size_is_bounded():
    same = np.zeros((1000, 32), np.uint8)  # one huge bucket in every table
    lsh = BinaryLsh(same, np.arange(1000), tables=4, max_bucket=5)
    near = lsh.query(same[:2])
    assert (near.distance == 0).all()
    assert (near.index < 1000).all()


def test_a_full_bucket_is_sampled_fairly_not_by_registration_order():
    same = np.zeros((1000, 32), np.uint8)  # one bucket of 1000 in every table
    found = [
        int(
            BinaryLsh(same, np.arange(1000), tables=4, max_bucket=5, seed=seed)
            .query(same[:1])
            .index[0]
        )
        for seed in range(5)
    ]
    assert max(found) >= 5  # not always the first max_bucket descriptors
