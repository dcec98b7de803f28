"""Replay a recorded video through the same Session pipeline as live clients, JSON Lines out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import TextIO

from clients.sources import SourceError, video_frames
from stream.images import video_frame_decoder
from stream.pipelines import Pipelines, SessionOptions
from stream.session import Message


async def replay(path: str, profile: str, out: TextIO, fast: bool) -> None:
    """Run ``path`` through a session, writing each result message as one JSON line to ``out``.

    Real time by default (frames are offered at their presentation times, so a
    slow device drops frames as it would live); ``fast`` offers each frame only
    once the previous one is processed.
    """
    pipelines = Pipelines.from_models()

    async def send(message: Message) -> None:
        out.write(json.dumps(message, ensure_ascii=False) + "\n")

    session = pipelines.open(SessionOptions(profile), send)
    runner = asyncio.create_task(session.run())
    loop = asyncio.get_running_loop()
    frames = video_frames(path)
    start = loop.time()
    try:
        while (item := await asyncio.to_thread(next, frames, None)) is not None:
            t, frame = item
            if fast:
                await session.wait_idle()
            else:
                await asyncio.sleep(max(0.0, start + t - loop.time()))
            session.submit(video_frame_decoder(frame), t)
        await session.wait_idle()
    finally:
        session.close()
        await runner
        pipelines.shutdown()
        out.flush()


def replay_main(video: str, profile: str, jsonl: str, fast: bool) -> int:
    if not Path(video).exists():
        print(f"replay: no such file: {video}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        out = sys.stdout if jsonl == "-" else stack.enter_context(open(jsonl, "w"))
        try:
            asyncio.run(replay(video, profile, out, fast))
        except SourceError as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
    return 0
