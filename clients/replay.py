"""Replay a recorded video through the same Session pipeline as live clients, JSON Lines out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TextIO

from clients.sources import SourceError, video_frames
from detectors.core import ImageBGR
from stream.images import video_frame_decoder
from stream.pipelines import OptionError, Pipelines, SessionOptions
from stream.session import Message, Session

TimedFrames = AsyncIterator[tuple[float, Callable[[], ImageBGR]]]
"""``(media time, decode)`` of each frame of a stream, in order."""


async def feed(session: Session, frames: TimedFrames, realtime: bool) -> None:
    """Run ``session`` over ``frames`` to the end, then close it.

    Real time offers each frame at its media time (a slow device drops frames
    as it would live). Otherwise each frame is offered once the session is
    idle: as fast as the host allows, with the real-time schedule when the
    session's profile is emulated (every frame, for the pass-through host).
    """
    runner = asyncio.create_task(session.run())
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        async for t, decode in frames:
            if realtime:
                await asyncio.sleep(max(0.0, start + t - loop.time()))
            else:
                await session.wait_idle()
            session.submit(decode, t)
        session.flush()
        await session.wait_idle()
    finally:
        session.close()
        await runner


async def video_source(path: str) -> TimedFrames:
    frames = video_frames(path)
    while (item := await asyncio.to_thread(next, frames, None)) is not None:
        t, frame = item
        yield t, video_frame_decoder(frame)


async def replay(
    path: str, profile: str, out: TextIO, fast: bool, seed: int = 0, tier: str | None = None
) -> None:
    """Run ``path`` through a session, writing each result message as one JSON line to ``out``.

    ``fast`` runs as fast as the host allows, with the same processed frames
    and events as a real-time run with the same ``seed`` (see :func:`feed`).
    """
    pipelines = Pipelines.from_models()

    async def send(message: Message) -> None:
        out.write(json.dumps(message, ensure_ascii=False) + "\n")

    try:
        session = pipelines.open(SessionOptions(profile, tier, seed), send, realtime=not fast)
        await feed(session, video_source(path), realtime=not fast)
    finally:
        pipelines.shutdown()
        out.flush()


def replay_main(
    video: str, profile: str, jsonl: str, fast: bool, seed: int = 0, tier: str | None = None
) -> int:
    if not Path(video).exists():
        print(f"replay: no such file: {video}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        out = sys.stdout if jsonl == "-" else stack.enter_context(open(jsonl, "w"))
        try:
            asyncio.run(replay(video, profile, out, fast, seed, tier))
        except (SourceError, OptionError) as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
    return 0
