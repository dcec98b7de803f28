"""Driving a :class:`hw_sim.DeviceTimeline` as a session does: run each start, then settle it."""

from collections.abc import Callable

from hw_sim import DeviceTimeline, Start


def one_run(index: int) -> int:
    return 1


def settled(
    timeline: DeviceTimeline, starts: list[Start], runs: Callable[[int], int] = one_run
) -> list[tuple[Start, float]]:
    """``(start, latency)`` of each of ``starts`` and of every start that settling them opens."""
    done = []
    queue = list(starts)
    while queue:
        start = queue.pop(0)
        latency, more = timeline.settle(runs(start.index))
        done.append((start, latency))
        queue += more
    return done
