"""One client's pipeline: newest frame -> hw_sim -> detector (in an executor) -> voting -> results.

Every transport (WebRTC, websocket, replay) feeds a :class:`Session` with
:meth:`Session.submit` and receives the same result messages through ``send``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from detectors.core import Detections, Detector, ImageBGR
from hw_sim import DeviceSimulator
from stream.slot import LatestFrameSlot
from voting import Voter, VoteUpdate

log = logging.getLogger(__name__)

Message = dict[str, object]
Send = Callable[[Message], Awaitable[None]]


class FrameError(ValueError):
    """A submitted frame cannot be decoded; ``code`` is the stable error code sent to the client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


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
    detections: Detections
    host_latency: float


def error_message(code: str, message: str) -> Message:
    return {"type": "error", "code": code, "message": message}


class Session:
    """Runs frames through the pipeline one at a time; at most one frame ever waits.

    Call :meth:`submit` for every received frame (it never blocks), run
    :meth:`run` as a task, and :meth:`close` when the client goes away.
    """

    def __init__(
        self,
        detector: Detector,
        voter: Voter,
        simulator: DeviceSimulator,
        send: Send,
        executor: Executor | None = None,
    ) -> None:
        self.detector = detector
        self.voter = voter
        self.simulator = simulator
        self._send = send
        self._executor = executor
        self._slot: LatestFrameSlot[PendingFrame] = LatestFrameSlot()
        self._received = 0
        self.processed = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def dropped(self) -> int:
        return self._slot.dropped

    def submit(self, decode: Callable[[], ImageBGR], t: float) -> None:
        """Offer the frame at media time ``t``; ``decode`` turns it into a BGR image when taken."""
        self._slot.put(PendingFrame(self._received, t, decode, time.perf_counter()))
        self._received += 1
        self._idle.clear()

    async def wait_idle(self) -> None:
        """Return once every submitted frame was processed or dropped."""
        await self._idle.wait()

    def close(self) -> None:
        self._slot.close()
        self._idle.set()

    async def run(self) -> None:
        """Process frames until :meth:`close`; never raises for a bad frame (it reports it)."""
        loop = asyncio.get_running_loop()
        while (pending := await self._slot.get()) is not None:
            try:
                done = await loop.run_in_executor(self._executor, self._process, pending)
            except FrameError as exc:
                await self._send(error_message(exc.code, str(exc)))
            else:
                emulated = self.simulator.latency(done.host_latency, pending.t)
                if emulated > done.host_latency:
                    await asyncio.sleep(emulated - done.host_latency)
                update = self.voter.update(done.detections, pending.t)
                await self._publish(done, update, emulated)
            if self._slot.empty:
                self._idle.set()

    def _process(self, pending: PendingFrame) -> ProcessedFrame:
        """Decode and detect; runs in the executor."""
        started = time.perf_counter()
        image = pending.decode()
        detections = self.detector.detect(image)
        return ProcessedFrame(
            pending, image.shape[1], image.shape[0], detections, time.perf_counter() - started
        )

    async def _publish(self, done: ProcessedFrame, update: VoteUpdate, emulated: float) -> None:
        self.processed += 1
        await self._send(
            {
                "type": "frame",
                "frame": done.pending.index,
                "t": round(done.pending.t, 3),
                "width": done.width,
                "height": done.height,
                "detections": [d.to_json() for d in update.detections],
                "device": {
                    "profile": self.simulator.profile.name,
                    "tier": self.detector.tier,
                    "latency_ms": round(emulated * 1000, 1),
                    "dropped": self.dropped,
                },
                "server_ms": round((time.perf_counter() - done.pending.received) * 1000, 1),
            }
        )
        for event in update.events:
            await self._send(event.to_json())
