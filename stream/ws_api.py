"""The websocket API (docs/api.md): a JSON ``start`` message, then binary JPEG/PNG frames.

Results come back on the same socket as the result messages of DESIGN.md. Every
bad message gets an ``error`` message with a stable code and the session stays
usable; only transport-level violations (an oversized message, text that is not UTF-8)
close the socket.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from stream import metrics
from stream.admission import SHUTTING_DOWN, Admission, ServerConfig, refuse
from stream.client_json import parse_object
from stream.images import MAX_FRAME_BYTES, MAX_PIXELS, image_decoder
from stream.pipelines import Pipelines, SessionOptions
from stream.session import (
    FrameError,
    Message,
    Session,
    SessionError,
    error_message,
    run_or_close,
)
from stream.targets_api import TARGET_MESSAGES, TargetMessages

PROTOCOL_VERSION = 1
MAX_FPS = 60.0
"""Sustained frames per second a session may send (bursts up to one second's worth are fine);
frames beyond that are refused with ``rate_limited``."""
HEARTBEAT_S = 20.0
"""Seconds without any message from the client before the server pings; a client that does
not answer within half of that (aiohttp's pong timeout) is disconnected: 30 s in all."""
MAX_TIMESTAMP_S = 1e10
"""Largest client timestamp: room for Unix time (float64 still resolves microseconds there),
and far enough from float range that the emulated device's ``t * fps`` cannot overflow."""
TRANSPORT = "websocket"
CLOSE_GOING_AWAY = 1001
CLOSE_INTERNAL_ERROR = 1011
CLOSE_TRY_AGAIN_LATER = 1013


@dataclass(slots=True)
class TokenBucket:
    """Allows ``rate`` events per second on average and bursts of up to ``burst``."""

    rate: float
    burst: float
    tokens: float = -1.0
    updated: float = 0.0

    def take(self, now: float) -> bool:
        """Spend one token at time ``now`` if there is one."""
        if self.tokens < 0:
            self.tokens = self.burst
        else:
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class WebsocketConnection:
    """The state of one websocket client: its session (after ``start``) and its frame clock."""

    def __init__(self, ws: web.WebSocketResponse, pipelines: Pipelines, profile: str) -> None:
        self.ws = ws
        self.pipelines = pipelines
        self.default_profile = profile
        self.session: Session | None = None
        self.runner: asyncio.Task[None] | None = None
        self.started_at = 0.0
        self.next_t: float | None = None  # client timestamp for the next frame
        self.last_t = float("-inf")
        self.last_arrival = 0.0  # monotonic time the frame at last_t arrived
        self.frame_budget = TokenBucket(rate=MAX_FPS, burst=MAX_FPS)
        self.targets = TargetMessages(pipelines.targets, pipelines.executor)

    async def send(self, message: Message) -> None:
        if not self.ws.closed:
            metrics.observe(TRANSPORT, message)
            await self.ws.send_str(json.dumps(message))

    async def on_text(self, text: str) -> None:
        request = parse_object(text, "the text message")
        kind = request.get("type")
        if not isinstance(kind, str):  # a list or object would not even hash
            raise FrameError("unknown_type", "'type' must be a string naming the message type")
        if kind == "start":
            await self.start(request)
        elif kind == "timestamp":
            t = request.get("t")
            if (
                isinstance(t, bool)
                or not isinstance(t, int | float)
                or not 0 <= t <= MAX_TIMESTAMP_S
            ):
                raise FrameError(
                    "bad_field",
                    f"timestamp 't' must be a number of seconds, 0 to {MAX_TIMESTAMP_S:g}",
                )
            self.next_t = float(t)
        elif kind in TARGET_MESSAGES:
            reply = await self.targets.on_text(request)
            if reply is not None:
                await self.send(reply)
        else:
            raise FrameError("unknown_type", f"unknown message type {kind!r}")

    async def start(self, request: dict[str, Any]) -> None:
        if self.session is not None:
            raise FrameError("already_started", "this connection already has a session")
        options = SessionOptions.from_json(request, self.default_profile)
        self.session = self.pipelines.open(options, self.send)
        self.runner = asyncio.create_task(run_or_close(self.session, self.close_failed))
        self.started_at = time.monotonic()
        await self.send(
            {
                "type": "ready",
                "protocol": PROTOCOL_VERSION,
                "profile": options.profile,
                "tier": self.session.detector.tier,
                "limits": {
                    "max_frame_bytes": MAX_FRAME_BYTES,
                    "max_pixels": MAX_PIXELS,
                    "max_fps": MAX_FPS,
                },
            }
        )

    async def on_binary(self, data: bytes) -> None:
        """A camera frame, or the reference photo a ``register_target`` announced."""
        if self.targets.waiting:
            await self.send(await self.targets.on_image(data))
        else:
            self.on_frame(data)

    def on_frame(self, data: bytes) -> None:
        if self.session is None:
            raise FrameError("not_started", "send {'type': 'start'} before frames")
        now = time.monotonic()
        t, self.next_t = (self._arrival_time(now) if self.next_t is None else self.next_t), None
        if not self.frame_budget.take(now):
            raise FrameError("rate_limited", f"more than {MAX_FPS:g} frames per second")
        if t < self.last_t:
            raise FrameError("bad_field", f"timestamp {t} is before the previous frame's")
        decode = image_decoder(data)
        self.last_t, self.last_arrival = t, now
        self.session.submit(decode, t)

    def _arrival_time(self, now: float) -> float:
        """Media time of a frame sent without a timestamp: the last frame's plus the time
        between their arrivals, so that it continues the client's clock if it had one."""
        if self.last_t == float("-inf"):
            return now - self.started_at
        return self.last_t + (now - self.last_arrival)

    async def close_failed(self) -> None:
        """End a connection whose session failed (it has sent ``internal``)."""
        await self.ws.close(code=CLOSE_INTERNAL_ERROR, message=b"internal error")

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            metrics.DROPPED.labels(TRANSPORT).inc(self.session.dropped)
        if self.runner is not None:
            self.runner.cancel()


async def close_at_once(
    ws: web.WebSocketResponse, request: web.Request, code: int, reason: str
) -> web.WebSocketResponse:
    """Upgrade, then close at once with ``code`` and ``reason``, holding no slot.

    Not an HTTP status: a browser's WebSocket cannot read the status of a refused upgrade,
    so the demo page could not tell a full server from one it cannot reach; it can read a
    close code.
    """
    await ws.prepare(request)
    await ws.close(code=code, message=reason.encode())
    return ws


class WebsocketApi:
    """The aiohttp handler of ``GET /ws``; :meth:`close_all` is for shutdown."""

    def __init__(self, pipelines: Pipelines, config: ServerConfig, admission: Admission) -> None:
        self.pipelines = pipelines
        self.config = config
        self.admission = admission
        self.open: set[web.WebSocketResponse] = set()
        self.shutting_down = False

    async def handle(self, request: web.Request) -> web.StreamResponse:
        # No permessage-deflate: JPEG does not compress, and zlib state costs ~40 KiB a socket.
        ws = web.WebSocketResponse(
            max_msg_size=MAX_FRAME_BYTES + 1024, heartbeat=HEARTBEAT_S, compress=False
        )
        if not ws.can_prepare(request).ok:  # before admission: a plain GET must take no slot
            return refuse(400, "this endpoint speaks websocket only: connect with a websocket")
        if self.shutting_down:  # close_all has run: nobody would close a socket opened now
            return await close_at_once(ws, request, CLOSE_GOING_AWAY, SHUTTING_DOWN)
        ticket = await self.admission.enter(request.remote or "?")
        if isinstance(ticket, str):
            metrics.REFUSED.inc()
            return await close_at_once(ws, request, CLOSE_TRY_AGAIN_LATER, ticket)
        connection = WebsocketConnection(ws, self.pipelines, self.config.default_profile)
        metrics.session_opened(TRANSPORT)
        try:
            await ws.prepare(request)
            self.open.add(ws)
            async for msg in ws:
                try:
                    if msg.type == WSMsgType.TEXT:
                        await connection.on_text(msg.data)
                    elif msg.type == WSMsgType.BINARY:
                        await connection.on_binary(msg.data)
                except FrameError as exc:
                    await connection.send(error_message(exc.code, str(exc)))
                except SessionError:  # a frame raced the failed session's own close
                    await connection.close_failed()  # 1011 either way, not the default 1000
                    break
        finally:
            self.open.discard(ws)
            try:
                connection.close()
                await ws.close()  # also stops the heartbeat timer, which would keep ws alive
            finally:  # whatever failed above, the slot is given back
                ticket.release()
                metrics.session_closed(TRANSPORT)
        return ws

    async def close_all(self) -> None:
        """Close every open websocket, and every one opened from now on (for the app's shutdown)."""
        self.shutting_down = True
        reason = SHUTTING_DOWN.encode()
        await asyncio.gather(*(ws.close(code=CLOSE_GOING_AWAY, message=reason) for ws in self.open))
