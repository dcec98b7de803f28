"""Which frames the emulated phone starts, when, and which it drops: a pure schedule in media time.

The phone's camera delivers frames at its own rate (faster input is decimated,
counted in ``camera_skipped``). A frame that arrives while the device is idle
starts at once; one that arrives while it is busy waits, and a newer arrival
replaces it (counted in ``dropped``). When the device finishes at media time
``c`` it starts the newest frame that arrived at or before ``c``.

The schedule depends only on arrival media times and the latency function, so
a real-time session and one that runs as fast as the host allows get the
same one. A real-time caller must offer every frame that arrived at or before
``c`` before it calls :meth:`DeviceTimeline.advance` with ``c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

LatencyModel = Callable[[int, float], float]
"""``latency(index, start)``: seconds the device needs for frame ``index`` started at ``start``."""


@dataclass(frozen=True, slots=True)
class Start(Generic[T]):
    """The device starts ``frame`` (arrived at ``t``) at ``start``; it is done at ``finish``.

    ``dropped`` and ``camera_skipped`` count the frames skipped before this start.
    """

    frame: T
    index: int
    t: float
    start: float
    latency: float
    dropped: int = 0
    camera_skipped: int = 0

    @property
    def finish(self) -> float:
        return self.start + self.latency


@dataclass(frozen=True, slots=True)
class _Waiting(Generic[T]):
    frame: T
    index: int
    t: float


class DeviceTimeline(Generic[T]):
    """Feed arrivals with :meth:`offer`; collect the returned :class:`Start` s in order.

    Args:
        latency: the device's latency model, called once per started frame, in
            start order.
        camera_fps: the camera's frame rate; 0 keeps every arrival.
    """

    def __init__(self, latency: LatencyModel, camera_fps: float = 0.0) -> None:
        if camera_fps < 0:
            raise ValueError(f"camera_fps must be >= 0, got {camera_fps}")
        self._latency = latency
        self._camera_fps = camera_fps
        self._last_tick: int | None = None
        self._last_t = -math.inf
        self._waiting: _Waiting[T] | None = None
        self.free_at = -math.inf
        self.dropped = 0
        self.camera_skipped = 0
        self.started = 0

    @property
    def last_arrival(self) -> float:
        """Media time of the newest arrival (-inf before the first)."""
        return self._last_t

    @property
    def has_waiting(self) -> bool:
        return self._waiting is not None

    @property
    def decision_time(self) -> float | None:
        """Media time at which the waiting frame starts unless a newer one arrives by then."""
        return self.free_at if self._waiting is not None else None

    def offer(self, frame: T, index: int, t: float) -> list[Start[T]]:
        """Frame ``index`` arrived at media time ``t``; returns the frames that start up to ``t``.

        Times are clamped to be non-decreasing. The result holds the waiting
        frame if the device freed before ``t``, and this frame if the device is
        free at ``t``.
        """
        t = max(t, self._last_t)
        self._last_t = t
        started = self._commit(t, inclusive=False)
        if not self._captured(t):
            self.camera_skipped += 1
            return started
        if self.free_at <= t:
            if self._waiting is not None:  # arrived with the device freeing at t: newest wins
                self.dropped += 1
                self._waiting = None
            started.append(self._start(frame, index, t, t))
        else:
            if self._waiting is not None:
                self.dropped += 1
            self._waiting = _Waiting(frame, index, t)
        return started

    def advance(self, now: float) -> list[Start[T]]:
        """Every arrival up to media time ``now`` was offered: start the waiting frame if due."""
        return self._commit(now, inclusive=True)

    def flush(self) -> list[Start[T]]:
        """End of stream: the waiting frame, if any, starts when the device frees."""
        return self._commit(math.inf, inclusive=True)

    def _commit(self, now: float, inclusive: bool) -> list[Start[T]]:
        waiting = self._waiting
        if waiting is None or self.free_at > now or (self.free_at == now and not inclusive):
            return []
        self._waiting = None
        return [self._start(waiting.frame, waiting.index, waiting.t, max(self.free_at, waiting.t))]

    def _start(self, frame: T, index: int, t: float, start: float) -> Start[T]:
        latency = self._latency(index, start)
        if latency < 0:
            raise ValueError(f"latency model returned {latency} for frame {index}")
        self.free_at = start + latency
        self.started += 1
        return Start(frame, index, t, start, latency, self.dropped, self.camera_skipped)

    def _captured(self, t: float) -> bool:
        """Whether the camera delivers a frame at ``t``: one per camera tick, the first in it."""
        if self._camera_fps <= 0:
            return True
        tick = math.floor(t * self._camera_fps + 1e-6)
        if self._last_tick is not None and tick <= self._last_tick:
            return False
        self._last_tick = tick
        return True
