"""``stream.prefork``'s pure parts (the processes themselves: ``test_workers``)."""

from __future__ import annotations

import pytest

from stream.prefork import worker_cores


@pytest.mark.parametrize(
    ("slot", "count", "usable", "cores"),
    [
        pytest.param(0, 2, [0, 1], {0}, id="one-core-each-first"),
        pytest.param(1, 2, [0, 1], {1}, id="one-core-each-second"),
        pytest.param(1, 8, list(range(16)), {2, 3}, id="two-cores-each"),
        pytest.param(2, 3, [0, 1, 2, 3], {2}, id="a-core-left-over"),
        pytest.param(0, 2, [7, 3, 5, 1], {1, 3}, id="in-core-order-from-a-cpuset"),
        pytest.param(0, 1, [4, 5], {4, 5}, id="one-worker-every-core"),
    ],
)
def test_each_worker_gets_its_own_equal_share_of_the_cores(slot, count, usable, cores):
    assert worker_cores(slot, count, usable) == cores


def test_more_workers_than_cores_cannot_be_pinned():
    with pytest.raises(ValueError, match="3 workers cannot each have a core of their own: 2"):
        worker_cores(0, 3, [0, 1])
