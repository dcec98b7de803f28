"""A small Python client for the websocket API, and the CLI behind ``python run.py client``.

async with ScanClient.connect("ws://127.0.0.1:8080/ws", profile="mid") as client:
    await client.send_frame(jpeg_bytes)
    async for message in client.results():
        ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import cv2
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI, WebSocketException

from clients.sources import SourceError, bgr_frames, opened
from detectors.core import ImageBGR
from stream.cli_types import positive_number

DEFAULT_URL = "ws://127.0.0.1:8080/ws"
STATUS_HINTS = {
    401: "missing or wrong token: pass --token",
    403: "origin not allowed",
    404: "no websocket API at this path: it is /ws",
    503: "service unavailable",
}
"""Why a server refuses the websocket upgrade with these statuses (docs/api.md, 5.)."""


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
    async def connect(
        cls, url: str, *, token: str | None = None, **options: Any
    ) -> AsyncIterator[ScanClient]:
        """Open a session; ``options`` go into the ``start`` message (profile, tier, preset...).

        Args:
            token: the server's ``--token``, sent as ``Authorization: Bearer``.

        Raises:
            ScanError: the server answered ``start`` with an error.
            websockets.exceptions.WebSocketException: not a websocket URL, the server
                refused the upgrade (:func:`connection_problem` says why), or closed.
        """
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with connect(url, max_size=2**22, additional_headers=headers) as ws:
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


def connection_problem(url: str, exc: WebSocketException | OSError) -> str:
    """One line for a user on why the websocket to ``url`` failed."""
    if isinstance(exc, InvalidURI):
        return f"{url} is not a websocket URL (ws://HOST:PORT/ws or wss://...)"
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        hint = STATUS_HINTS.get(status, "not a websocket endpoint: the API is at /ws")
        return f"server refused the websocket at {url}: HTTP {status} ({hint})"
    if isinstance(exc, ConnectionClosed) and exc.rcvd is not None and exc.rcvd.code == 1013:
        # A full server upgrades, then closes with 1013 and its reason (docs/api.md, 5.).
        return f"server busy at {url}: {exc.rcvd.reason or 'no session free'}; try again later"
    if isinstance(exc, OSError):
        return f"cannot connect to {url}: {exc.strerror or str(exc) or type(exc).__name__}"
    return f"websocket to {url} failed: {exc}"


def encode_jpeg(image: ImageBGR, quality: int = 85) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("could not encode frame as JPEG")
    return bytes(data)


async def stream_source(
    url: str,
    frames: Iterator[tuple[float, ImageBGR]],
    out: TextIO,
    options: dict[str, Any],
    token: str | None = None,
) -> None:
    """Send ``frames`` at their own pace and write every result as a JSON line to ``out``."""
    loop = asyncio.get_running_loop()
    async with ScanClient.connect(url, token=token, **options) as client:

        async def printer() -> None:
            async for message in client.results():
                out.write(json.dumps(message, ensure_ascii=False) + "\n")
                out.flush()

        reader = asyncio.create_task(printer())
        try:
            start = loop.time()
            while (item := await asyncio.to_thread(next, frames, None)) is not None:
                t, image = item
                await asyncio.sleep(max(0.0, start + t - loop.time()))
                await client.send_frame(await asyncio.to_thread(encode_jpeg, image), t)
            await asyncio.sleep(1.0)  # let the last results arrive
            await client.ws.close()
        except BaseException:
            # A source failing mid-stream: the reader must not outlive the connection
            # and die later with "Task exception was never retrieved".
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            raise
        await reader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", help="video file, folder of images, or webcam (0, /dev/video0, /dev/v4l/...)"
    )
    parser.add_argument(
        "--url", default=DEFAULT_URL, help="the server's websocket API (default: %(default)s)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("FUSCAN_TOKEN"),
        help="the server's --token, if it has one (default: $FUSCAN_TOKEN; none)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        metavar="NAME",
        help="device profile to emulate (default: the server's)",
    )
    parser.add_argument("--tier", default=None, help="model tier (default: the profile's choice)")
    parser.add_argument(
        "--fps",
        type=positive_number,
        default=15.0,
        help="pace of image folders, > 0 (default: %(default)s)",
    )


def client_main(
    url: str, source: str, fps: float, options: dict[str, Any], token: str | None = None
) -> int:
    """Exit status: 0, or 2 with one line on stderr for a bad source, URL, token or server."""
    try:
        frames = opened(bgr_frames(source, fps))  # before connecting: a bad source is no session
        asyncio.run(stream_source(url, frames, sys.stdout, options, token))
    except (SourceError, ScanError) as exc:
        print(f"client: {exc}", file=sys.stderr)
        return 2
    except (WebSocketException, OSError) as exc:
        print(f"client: {connection_problem(url, exc)}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    options = {k: v for k, v in (("profile", args.profile), ("tier", args.tier)) if v}
    return client_main(args.url, args.source, args.fps, options, args.token)
