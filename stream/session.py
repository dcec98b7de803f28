"""One client's pipeline: newest frame -> hw_sim -> detector (in an executor) -> voting -> results.

Every transport (WebRTC, websocket, replay) feeds a :class:`Session` with
:meth:`Session.submit` and receives the same result messages through ``send``.

With an emulated device profile, hw_sim's :class:`DeviceTimeline` decides in
media time which frames the phone starts and drops; the detector really runs
here, and a real-time session then waits until the phone would have finished.
A session that is not real time (replay ``--fast``) skips the waiting and gets
the same schedule and the same messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from detectors.core import ConfirmingDetector, Detector, FocusingDetector, ImageBGR
from hw_sim import (
    DeviceSimulator,
    DeviceTimeline,
    Start,
    camera_view,
    confirm_received,
    to_received,
)
from stream.focus import Focus
from stream.slot import LatestFrameSlot
from voting import Voter, VoteUpdate

log = logging.getLogger(__name__)

Message = dict[str, object]
Send = Callable[[Message], Awaitable[None]]

ARRIVAL_GRACE = 0.005
"""Seconds a real-time session waits past a media time before it takes all frames up to it as in."""
MAX_LAG = 0.25
"""Seconds a real-time session may fall behind the emulated phone before it skips frames."""
REANCHOR_S = 1.0
"""A frame arriving this far from its media time moves the session's media clock (bounds waits)."""


class FrameError(ValueError):
    """A submitted frame cannot be decoded; ``code`` is the stable error code sent to the client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class SessionError(RuntimeError):
    """Processing a frame failed for a reason other than the frame (a bug, a voter refusing a
    timestamp): the session closed itself. The original exception is the ``__cause__``."""


@runtime_checkable
class HalvableDecode(Protocol):
    """A deferred decode that can also decode at half size, for less (a JPEG's DCT scaling)."""

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    def __call__(self) -> ImageBGR: ...

    def half(self) -> ImageBGR: ...


ViewSide = Callable[[], int]
"""The longest frame side, in pixels, that a session's detection can still use."""


@dataclass(frozen=True, slots=True)
class PendingFrame:
    """A received frame not yet decoded: decoding runs in the executor, and only if processed."""

    index: int
    t: float
    decode: Callable[[], ImageBGR]
    received: float  # host monotonic time of arrival, for server-side latency


@dataclass(frozen=True, slots=True)
class ProcessedFrame:
    pending: PendingFrame
    width: int
    height: int
    update: VoteUpdate
    runs: float
    """Network runs the phone pays for: the detector's, and any checks the voter asked for."""
    host_latency: float


def decode_for(decode: Callable[[], ImageBGR], side: int | None) -> tuple[ImageBGR, int, int]:
    """The frame's image and its size as received. A :class:`HalvableDecode` frame whose
    longer side is at least twice ``side`` (what the detector uses; ``None``: unknown) is
    decoded at half size: the detector would shrink it anyway."""
    if isinstance(decode, HalvableDecode) and side and max(decode.width, decode.height) >= 2 * side:
        return decode.half(), decode.width, decode.height
    image = decode()
    return image, image.shape[1], image.shape[0]


def error_message(code: str, message: str) -> Message:
    return {"type": "error", "code": code, "message": message}


async def run_or_close(session: Session, close: Callable[[], Awaitable[object]]) -> None:
    """Run ``session`` (a transport's task); if processing fails, ``close`` the connection.

    The session has told the client (``internal``) and logged why; what is left is to end
    the connection rather than keep one whose frames nobody processes.
    """
    try:
        await session.run()
    except SessionError:
        await close()


Job = tuple[PendingFrame, Start[PendingFrame] | None]
"""A frame to process, with the emulated device's start (``None`` for a pass-through profile)."""


class Session:
    """Runs frames through the pipeline one at a time; at most one frame ever waits.

    Call :meth:`submit` for every received frame (it never blocks), run
    :meth:`run` as a task, and :meth:`close` when the client goes away. At the
    end of a recorded stream call :meth:`flush`, then :meth:`wait_idle`. If
    processing fails, the session closes and :meth:`run`, :meth:`wait_idle` and
    :meth:`submit` raise :class:`SessionError` (no waiter is left hanging).

    Args:
        realtime: wait, in real (event-loop) time, until the emulated phone
            would have finished each frame. ``False`` runs as fast as the host
            allows, with the same schedule; the caller must then await
            :meth:`wait_idle` before each :meth:`submit` (that bounds the work
            queued), and call :meth:`flush` at the end.
        arrival_grace: seconds past a media time after which a real-time
            session takes every frame up to that time as arrived.
        max_lag: seconds a real-time session may run behind the emulated
            phone (a host stall) before it skips the frames the phone would
            have finished: short stalls only delay messages, and the queue
            stays bounded (about ``max_lag`` x frame rate) whatever the host.
        view_side: asked per frame; a :class:`HalvableDecode` frame whose longer
            side is at least twice it is decoded at half size (the detector would
            shrink it anyway). ``None``: every frame at full size. Sizes and boxes
            in messages stay in pixels of the frame as received.
    """

    def __init__(
        self,
        detector: Detector,
        voter: Voter,
        simulator: DeviceSimulator,
        send: Send,
        executor: Executor | None = None,
        *,
        realtime: bool = True,
        arrival_grace: float = ARRIVAL_GRACE,
        max_lag: float = MAX_LAG,
        view_side: ViewSide | None = None,
    ) -> None:
        self.detector = detector
        self._checker = detector if isinstance(detector, ConfirmingDetector) else None
        self._focusing = detector if isinstance(detector, FocusingDetector) else None
        self._focus = Focus()
        self.voter = voter
        self.simulator = simulator
        self._send = send
        self._executor = executor
        self._realtime = realtime
        self._grace = arrival_grace
        self._max_lag = max_lag
        self._view_side = view_side
        self._slot: LatestFrameSlot[PendingFrame] = LatestFrameSlot()
        self._timeline: DeviceTimeline[PendingFrame] | None = (
            simulator.timeline() if simulator.emulated else None
        )
        self._starts: deque[Start[PendingFrame]] = deque()
        self._wake = asyncio.Event()
        self._origin: float | None = None  # event-loop time of media time 0
        self._closed = False
        self._failure: Exception | None = None
        self._running = False
        self._received = 0
        self.processed = 0
        self.host_behind = 0  # emulated starts this host was too slow to run (real time only)
        self.host_slower = 0  # frames whose real inference took longer than the emulated phone
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def dropped(self) -> int:
        if self._timeline is None:
            return self._slot.dropped
        return self._timeline.dropped + self.host_behind

    @property
    def camera_skipped(self) -> int:
        """Frames faster than the emulated camera's rate, never seen by the device."""
        return self._timeline.camera_skipped if self._timeline is not None else 0

    def submit(self, decode: Callable[[], ImageBGR], t: float) -> None:
        """Offer the frame at media time ``t``; ``decode`` turns it into a BGR image when taken.

        Raises:
            SessionError: processing failed earlier; the session takes no more frames.
        """
        self._raise_failure()
        pending = PendingFrame(self._received, t, decode, time.perf_counter())
        self._received += 1
        if self._timeline is None:
            self._slot.put(pending)
        else:
            origin = asyncio.get_running_loop().time() - t
            # The least-delayed frame anchors the media clock: anchored on a late first
            # frame (a slow first keyframe), every later frame would wait out that delay.
            # A sender's clock that jumps by more than REANCHOR_S moves it either way.
            if self._origin is None or origin < self._origin or origin > self._origin + REANCHOR_S:
                self._origin = origin
            self._enqueue(self._timeline.offer(pending, pending.index, t))
        self._check_idle()

    def flush(self) -> None:
        """End of stream: let the emulated device take the frame still waiting for it."""
        if self._timeline is not None:
            self._enqueue(self._timeline.flush())
        self._check_idle()

    async def wait_idle(self) -> None:
        """Return once every submitted frame was processed or dropped.

        A session that is not real time may still hold the newest frame for the
        emulated device (its fate depends on the next arrival): see :meth:`flush`.

        Raises:
            SessionError: processing failed (the session closed itself).
        """
        await self._idle.wait()
        self._raise_failure()

    def close(self) -> None:
        self._slot.close()
        self._closed = True
        self._starts.clear()
        self._wake.set()
        self._idle.set()

    async def run(self) -> None:
        """Process frames until :meth:`close`; never raises for a bad frame (it reports it).

        Raises:
            SessionError: anything else failed; the session is closed, so that
                :meth:`wait_idle` returns (and raises this too) instead of hanging.
        """
        try:
            await self._run()
        except Exception as exc:
            log.exception("session failed")  # a bug, not a bad frame: keep the traceback
            self._failure = exc
            self.close()
            with contextlib.suppress(Exception):  # best effort: the client may be gone
                await self._send(
                    error_message("internal", "frame processing failed; this session is closed")
                )
            self._raise_failure()

    def _raise_failure(self) -> None:
        # A fresh exception per raise: one instance re-raised from several places
        # would pile every raiser's traceback onto it.
        if self._failure is not None:
            failure = self._failure
            raise SessionError(
                f"frame processing failed: {type(failure).__name__}: {failure}"
            ) from failure

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while (job := await self._next_job()) is not None:
            pending, start = job
            self._running = True
            try:
                done = await loop.run_in_executor(self._executor, self._process, pending)
            except FrameError as exc:
                self._settle(1)  # the phone spent a frame's work on it all the same
                await self._send(error_message(exc.code, str(exc)))
            else:
                # The phone pays for every network run made (close-ups, the voter's checks).
                emulated = self._settle(done.runs)
                latency = await self._wait_for_device(done, start, emulated)
                await self._publish(done, latency, start)
            self._running = False
            self._check_idle()

    def _settle(self, runs: float) -> float | None:
        """The open start took ``runs`` network runs: its emulated latency (None: pass-through).

        Only now does the timeline know when the phone frees, so only now are
        the frames that arrived meanwhile decided.
        """
        if self._timeline is None or not self._timeline.is_open:
            return None
        latency, after = self._timeline.settle(runs)
        self._enqueue(after)
        return latency

    def _enqueue(self, starts: list[Start[PendingFrame]]) -> None:
        self._starts.extend(starts)
        if starts:
            self._wake.set()
            if self._realtime:
                self._skip_overdue()

    def _check_idle(self) -> None:
        if self._timeline is None:
            busy = not self._slot.empty or self._running
        else:
            parked = self._realtime and self._timeline.has_waiting
            busy = bool(self._starts) or self._running or parked
        if busy and not self._closed:
            self._idle.clear()
        else:
            self._idle.set()

    async def _next_job(self) -> Job | None:
        """The next frame to process: the newest (pass-through), or the device's next start."""
        if self._timeline is None:
            pending = await self._slot.get()
            return None if pending is None else (pending, None)
        loop = asyncio.get_running_loop()
        while not self._starts:
            if self._closed:
                return None
            self._wake.clear()
            due = self._timeline.decision_time if self._realtime else None
            if due is None or self._origin is None:
                await self._wake.wait()
                continue
            try:
                deadline = self._origin + due + self._grace
                await asyncio.wait_for(self._wake.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                self._enqueue(self._timeline.advance(due))
            if self._realtime:  # skipping an overdue start may leave none yet: wait again
                self._skip_overdue()
        if self._closed:
            return None
        start = self._starts.popleft()
        return start.frame, start

    def _skip_overdue(self) -> None:
        """Skip the start the phone would have begun more than ``max_lag`` ago while newer
        frames wait: settle it as one run, unrun. Now, in media time, is at least the last
        arrival's.

        Only a host slower than the emulated phone leaves such starts; then
        timing is the host's, not the phone's, and a warning says so.
        """
        if self._origin is None or self._timeline is None:
            return
        now = max(asyncio.get_running_loop().time() - self._origin, self._timeline.last_arrival)
        while (
            self._starts
            and self._timeline.has_waiting
            and self._starts[0].start + self._max_lag < now
        ):
            self._starts.popleft()
            self._starts.extend(self._timeline.settle(1)[1])
            self.host_behind += 1
            if self.host_behind == 1:
                log.warning(
                    "host behind emulated profile %r: frames dropped, timing is the host's",
                    self.simulator.profile.name,
                )

    async def _wait_for_device(
        self, done: ProcessedFrame, start: Start[PendingFrame] | None, emulated: float | None
    ) -> float:
        """Seconds the device took for ``done`` (``emulated``, or the host's for a pass-through
        profile); a real-time session waits until the phone is done."""
        if start is None or emulated is None:
            return done.host_latency
        if done.host_latency > emulated:
            self.host_slower += 1
            if self.host_slower == 1:
                log.warning(
                    "host inference (%.1f ms) slower than emulated %r (%.1f ms)",
                    done.host_latency * 1000,
                    self.simulator.profile.name,
                    emulated * 1000,
                )
        if self._realtime and self._origin is not None:
            loop = asyncio.get_running_loop()
            await asyncio.sleep(max(0.0, self._origin + start.start + emulated - loop.time()))
        return emulated

    def _process(self, pending: PendingFrame) -> ProcessedFrame:
        """Decode, detect and vote; runs in the executor (the voter may ask the detector to
        check a detection). One frame of a session is processed at a time."""
        started = time.perf_counter()
        side = self._view_side() if self._view_side else None
        image, width, height = decode_for(pending.decode, side)
        view, scale = camera_view(self.simulator.profile, image)
        scale *= image.shape[1] / width  # decoded smaller than received
        if self._focusing is None:
            found = self.detector.detect(view)
        else:
            found = self._focusing.detect_in(view, self._focus.context(pending.t, scale))
        detections = to_received(found, scale, (width, height))
        own = None if self._checker is None else self._checker.confirmer(view)
        confirm = None if own is None else confirm_received(own, scale)
        update = self.voter.update(detections, pending.t, confirm)
        self._focus.update(update, detections)
        runs = detections.runs + (0.0 if confirm is None else confirm.runs)
        return ProcessedFrame(pending, width, height, update, runs, time.perf_counter() - started)

    async def _publish(
        self, done: ProcessedFrame, latency: float, start: Start[PendingFrame] | None
    ) -> None:
        update = done.update
        self.processed += 1
        device: dict[str, object] = {
            "profile": self.simulator.profile.name,
            "tier": self.detector.tier,
            "latency_ms": round(latency * 1000, 1),
            "dropped": self.dropped,
        }
        if start is not None:  # emulated: skipped before this start; when it ran, media time
            device["dropped"] = start.dropped + self.host_behind
            device["camera_skipped"] = start.camera_skipped
            device["start_t"] = round(start.start, 4)
            device["done_t"] = round(start.start + latency, 4)
        await self._send(
            {
                "type": "frame",
                "frame": done.pending.index,
                "t": round(done.pending.t, 3),
                "width": done.width,
                "height": done.height,
                "detections": [d.to_json() for d in update.detections],
                "device": device,
                "server_ms": round((time.perf_counter() - done.pending.received) * 1000, 1),
            }
        )
        for event in update.events:
            await self._send(event.to_json())
