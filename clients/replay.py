"""Replay a recorded video through the same Session pipeline as live clients, JSON Lines out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import av

from stream.images import video_frame_decoder
from stream.pipelines import Pipelines, SessionOptions
from stream.session import Message


class ReplayError(RuntimeError):
    """The input cannot be read as video."""


def video_frames(path: str) -> Iterator[tuple[float, av.VideoFrame]]:
    """Decoded frames of ``path`` with their presentation time (seconds, first frame = 0).

    Raises:
        ReplayError: the file is missing or holds no decodable video.
    """
    try:
        container = av.open(path)
    except (av.FFmpegError, OSError) as exc:
        raise ReplayError(f"cannot open {path}: {exc}") from exc
    with container:
        if not container.streams.video:
            raise ReplayError(f"{path} has no video stream")
        first: float | None = None
        try:
            for index, frame in enumerate(container.decode(video=0)):
                t = float(frame.time) if frame.time is not None else index / 30.0
                first = t if first is None else first
                yield t - first, frame
        except av.FFmpegError as exc:
            raise ReplayError(f"{path}: video data is corrupt: {exc}") from exc


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
        except ReplayError as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
    return 0
