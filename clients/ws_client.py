"""A small Python client for the websocket API, and the CLI behind ``python run.py client``.

async with ScanClient.connect("ws://127.0.0.1:8080/ws", profile="mid") as client:
    await client.send_frame(jpeg_bytes)
    async for message in client.results():
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import cv2
from websockets.asyncio.client import ClientConnection, connect

from clients.sources import SourceError, bgr_frames
from detectors.core import ImageBGR


class ScanError(RuntimeError):
    """The server refused the session (its ``error`` message is attached)."""

    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(f"{message.get('code')}: {message.get('message')}")
        self.message = message


@dataclass
class ScanClient:
    """One websocket session. Create with :meth:`connect`; ``ready`` holds the server's limits."""

    ws: ClientConnection
    ready: dict[str, Any] = field(default_factory=dict)

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str, **options: Any) -> AsyncIterator[ScanClient]:
        """Open a session; ``options`` go into the ``start`` message (profile, tier, preset...).

        Raises:
            ScanError: the server answered ``start`` with an error.
        """
        async with connect(url, max_size=2**22) as ws:
            await ws.send(json.dumps({"type": "start", **options}))
            ready = json.loads(await ws.recv())
            if ready.get("type") != "ready":
                raise ScanError(ready)
            yield cls(ws, ready)

    async def send_frame(self, encoded: bytes, t: float | None = None) -> None:
        """Send one JPEG or PNG frame, at media time ``t`` (seconds) if given, else at its
        arrival time on the server; results arrive through :meth:`results`."""
        if t is not None:
            await self.ws.send(json.dumps({"type": "timestamp", "t": t}))
        await self.ws.send(encoded)

    async def results(self) -> AsyncIterator[dict[str, Any]]:
        """Every message the server sends, until the connection closes."""
        async for raw in self.ws:
            yield json.loads(raw)


def encode_jpeg(image: ImageBGR, quality: int = 85) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("could not encode frame as JPEG")
    return bytes(data)


async def stream_source(
    url: str, frames: Iterator[tuple[float, ImageBGR]], out: TextIO, options: dict[str, Any]
) -> None:
    """Send ``frames`` at their own pace and write every result as a JSON line to ``out``."""
    loop = asyncio.get_running_loop()
    async with ScanClient.connect(url, **options) as client:

        async def printer() -> None:
            async for message in client.results():
                out.write(json.dumps(message, ensure_ascii=False) + "\n")
                out.flush()

        reader = asyncio.create_task(printer())
        start = loop.time()
        while (item := await asyncio.to_thread(next, frames, None)) is not None:
            t, image = item
            await asyncio.sleep(max(0.0, start + t - loop.time()))
            await client.send_frame(await asyncio.to_thread(encode_jpeg, image), t)
        await asyncio.sleep(1.0)  # let the last results arrive
        await client.ws.close()
        await reader


def client_main(url: str, source: str, fps: float, options: dict[str, Any]) -> int:
    try:
        asyncio.run(stream_source(url, bgr_frames(source, fps), sys.stdout, options))
    except (SourceError, ScanError, OSError) as exc:
        print(f"client: {exc}", file=sys.stderr)
        return 2
    return 0
