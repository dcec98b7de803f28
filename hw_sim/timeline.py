"""Which frames the emulated phone starts, when, and which it drops: a pure schedule in media time.

The phone's camera delivers frames at its own rate (faster input is decimated,
counted in ``camera_skipped``). A frame that arrives while the device is idle
starts at once; one that arrives while it is busy waits, and a newer arrival
replaces it (counted in ``dropped``). When the device finishes at media time
``c`` it starts the newest frame that arrived at or before ``c``.

What a started frame costs is only known once it has been run: a two-pass
detector makes one more network run per close-up of a candidate. So a start
stays *open* until the caller :meth:`~DeviceTimeline.settle` s it with the runs
it took; meanwhile nothing else is decided and arrivals are held (bounded), to
be replayed in order once the device's next free time is known.

The schedule depends only on arrival media times, runs and the latency
function, so a real-time session and one that runs as fast as the host allows
get the same one. A real-time caller must offer every frame that arrived at or
before ``c`` before it calls :meth:`DeviceTimeline.advance` with ``c``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

LatencyModel = Callable[[int, float, float], float]
"""``latency(index, start, runs)``: seconds the device needs for frame ``index``, started at
``start``, that took ``runs`` network runs (fractions for runs at a smaller input)."""

MAX_HELD = 8
"""Arrivals held while a start is open; beyond it the oldest is dropped. Only a caller that
takes longer than several frame intervals to settle (a host slower than the phone) gets there."""


@dataclass(frozen=True, slots=True)
class Start(Generic[T]):
    """The device starts ``frame`` (arrived at ``t``) at ``start``.

    ``dropped`` and ``camera_skipped`` count the frames skipped before this start.
    """

    frame: T
    index: int
    t: float
    start: float
    dropped: int = 0
    camera_skipped: int = 0


@dataclass(frozen=True, slots=True)
class _Arrival(Generic[T]):
    frame: T
    index: int
    t: float


class DeviceTimeline(Generic[T]):
    """Feed arrivals with :meth:`offer`; run each returned :class:`Start`, then :meth:`settle` it.

    Args:
        latency: the device's latency model, called once per started frame when
            it is settled, in start order.
        camera_fps: the camera's frame rate; 0 keeps every arrival.
    """

    def __init__(self, latency: LatencyModel, camera_fps: float = 0.0) -> None:
        if camera_fps < 0:
            raise ValueError(f"camera_fps must be >= 0, got {camera_fps}")
        self._latency = latency
        self._camera_fps = camera_fps
        self._last_tick: int | None = None
        self._last_t = -math.inf
        self._waiting: _Arrival[T] | None = None
        self._open: Start[T] | None = None
        self._held: deque[_Arrival[T]] = deque()
        self._ended = False
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
        """A frame waits for the device, or arrivals wait for the open start to be settled."""
        return self._waiting is not None or bool(self._held)

    @property
    def is_open(self) -> bool:
        """A start was returned and not settled yet."""
        return self._open is not None

    @property
    def decision_time(self) -> float | None:
        """Media time at which the waiting frame starts unless a newer one arrives by then.

        ``None`` when no frame waits, or while a start is open (the device's free time is
        not known yet).
        """
        if self._waiting is None or self._open is not None:
            return None
        return self.free_at

    def offer(self, frame: T, index: int, t: float) -> list[Start[T]]:
        """Frame ``index`` arrived at media time ``t``; returns the frames that start up to ``t``.

        Times are clamped to be non-decreasing. The result holds the waiting
        frame if the device freed before ``t``, or else this frame if the device
        is free at ``t``: at most one start, which is open until :meth:`settle`.
        """
        t = max(t, self._last_t)
        self._last_t = t
        if self._open is not None:
            if len(self._held) == MAX_HELD:
                self._held.popleft()
                self.dropped += 1
            self._held.append(_Arrival(frame, index, t))
            return []
        return self._arrive(_Arrival(frame, index, t))

    def settle(self, runs: float = 1.0) -> tuple[float, list[Start[T]]]:
        """The open start took ``runs`` network runs: its latency, and what starts next.

        The held arrivals are replayed in order until one of them opens a start.

        Raises:
            RuntimeError: no start is open.
            ValueError: ``runs`` < 1, or the latency model gave a negative latency.
        """
        opened = self._open
        if opened is None:
            raise RuntimeError("settle() without an open start")
        if runs < 1:
            raise ValueError(f"a started frame takes at least one run, got {runs}")
        latency = self._latency(opened.index, opened.start, runs)
        if latency < 0:
            raise ValueError(f"latency model returned {latency} for frame {opened.index}")
        self._open = None
        self.free_at = opened.start + latency
        started: list[Start[T]] = []
        while self._held and not started:
            started = self._arrive(self._held.popleft())
        if self._ended and not started:
            started = self._commit(math.inf, inclusive=True)
        return latency, started

    def advance(self, now: float) -> list[Start[T]]:
        """Every arrival up to media time ``now`` was offered: start the waiting frame if due."""
        return self._commit(now, inclusive=True)

    def flush(self) -> list[Start[T]]:
        """End of stream: the waiting frame, if any, starts when the device frees.

        With a start open, that happens when it is settled.
        """
        self._ended = True
        return self._commit(math.inf, inclusive=True)

    def _arrive(self, arrival: _Arrival[T]) -> list[Start[T]]:
        """Decide an arrival; no start is open."""
        started = self._commit(arrival.t, inclusive=False)
        if started:  # its cost decides whether this arrival waits or starts: hold it
            self._held.appendleft(arrival)
            return started
        # Counted after the commit: a start's camera_skipped covers only what came before it.
        if not self._captured(arrival.t):
            self.camera_skipped += 1
            return []
        if self.free_at <= arrival.t:
            if self._waiting is not None:  # arrived with the device freeing at t: newest wins
                self.dropped += 1
                self._waiting = None
            return [self._start(arrival, arrival.t)]
        if self._waiting is not None:
            self.dropped += 1
        self._waiting = arrival
        return []

    def _commit(self, now: float, inclusive: bool) -> list[Start[T]]:
        waiting = self._waiting
        if waiting is None or self._open is not None:
            return []
        if self.free_at > now or (self.free_at == now and not inclusive):
            return []
        self._waiting = None
        return [self._start(waiting, max(self.free_at, waiting.t))]

    def _start(self, arrival: _Arrival[T], start: float) -> Start[T]:
        self.started += 1
        self._open = Start(
            arrival.frame, arrival.index, arrival.t, start, self.dropped, self.camera_skipped
        )
        return self._open

    def _captured(self, t: float) -> bool:
        """Whether the camera delivers a frame at ``t``: one per camera tick, the first in it."""
        if self._camera_fps <= 0:
            return True
        tick = math.floor(t * self._camera_fps + 1e-6)
        if self._last_tick is not None and tick <= self._last_tick:
            return False
        self._last_tick = tick
        return True
