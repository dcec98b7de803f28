"""The websocket API: a JSON ``start`` message, then binary JPEG/PNG frames; results come back."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import WSMsgType, web

from stream.images import MAX_FRAME_BYTES, MAX_PIXELS, image_decoder
from stream.pipelines import Pipelines, SessionOptions
from stream.session import FrameError, Message, Session, error_message

PROTOCOL_VERSION = 1


class WebsocketApi:
    def __init__(self, pipelines: Pipelines, default_profile: str) -> None:
        self.pipelines = pipelines
        self.default_profile = default_profile

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_FRAME_BYTES + 1024, heartbeat=20.0)
        await ws.prepare(request)

        async def send(message: Message) -> None:
            if not ws.closed:
                await ws.send_str(json.dumps(message))

        session: Session | None = None
        runner: asyncio.Task[None] | None = None
        started_at = 0.0
        try:
            async for msg in ws:
                try:
                    if msg.type == WSMsgType.TEXT:
                        request_json = _parse(msg.data)
                        if request_json.get("type") != "start":
                            raise FrameError("unknown_type", "expected {'type': 'start', ...}")
                        if session is not None:
                            raise FrameError("already_started", "session already started")
                        options = SessionOptions.from_json(request_json, self.default_profile)
                        session = self.pipelines.open(options, send)
                        runner = asyncio.create_task(session.run())
                        started_at = time.monotonic()
                        await send(
                            {
                                "type": "ready",
                                "protocol": PROTOCOL_VERSION,
                                "profile": options.profile,
                                "tier": session.detector.tier,
                                "limits": {
                                    "max_frame_bytes": MAX_FRAME_BYTES,
                                    "max_pixels": MAX_PIXELS,
                                },
                            }
                        )
                    elif msg.type == WSMsgType.BINARY:
                        if session is None:
                            raise FrameError("not_started", "send {'type': 'start'} first")
                        session.submit(image_decoder(msg.data), time.monotonic() - started_at)
                except FrameError as exc:
                    await send(error_message(exc.code, str(exc)))
        finally:
            if session is not None:
                session.close()
            if runner is not None:
                runner.cancel()
        return ws


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise FrameError("bad_json", "text messages must be JSON objects") from None
    if not isinstance(value, dict):
        raise FrameError("bad_json", "text messages must be JSON objects")
    return value
