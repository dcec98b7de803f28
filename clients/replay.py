"""Replay recorded videos (or image folders, or a webcam) through the same Session pipeline as
live clients: result messages as JSON Lines, and optionally scores against labels, an HTML
report with a timeline per clip, and an annotated video."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from tqdm import tqdm

from clients.annotate import annotate
from clients.labels import LabelError, ReplayScore, read_labels, score_replay
from clients.report import ClipResult, write_report
from clients.sources import SourceError, bgr_frames, frame_count, source_rate, video_frames
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


async def source_frames(source: str, fps: float, progress: tqdm) -> TimedFrames:
    """Frames of any source, decoded lazily for video files (only processed frames convert)."""
    frames: Iterator[tuple[float, Any]]
    if Path(source).is_file():
        frames = ((t, video_frame_decoder(frame)) for t, frame in video_frames(source))
    else:
        frames = ((t, partial(lambda image: image, image)) for t, image in bgr_frames(source, fps))
    while (item := await asyncio.to_thread(next, frames, None)) is not None:
        progress.update()
        yield item


async def replay_source(
    pipelines: Pipelines,
    source: str,
    options: SessionOptions,
    fast: bool,
    fps: float,
    tag: bool,
    out: TextIO,
) -> list[dict[str, Any]]:
    """One source through one session; returns its messages (also written to ``out``)."""
    messages: list[dict[str, Any]] = []

    async def send(message: Message) -> None:
        if tag:
            message = {**message, "source": source}
        messages.append(message)
        out.write(json.dumps(message, ensure_ascii=False) + "\n")

    session = pipelines.open(options, send, realtime=not fast)
    with tqdm(
        total=frame_count(source), desc=Path(source).name, unit="frame", disable=None, leave=False
    ) as progress:
        await feed(session, source_frames(source, fps, progress), realtime=not fast)
    return messages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="VIDEO",
        help="video files (anything FFmpeg reads), image folders, or a webcam index",
    )
    parser.add_argument("--profile", default="host")
    parser.add_argument("--tier", default=None, help="model tier (default: the profile's choice)")
    parser.add_argument("--preset", default="balanced", help="voting preset")
    parser.add_argument("--seed", type=int, default=0, help="seed of the emulated latency jitter")
    parser.add_argument(
        "--fast", action="store_true", help="as fast as the host allows, same schedule as real time"
    )
    parser.add_argument("--fps", type=float, default=15.0, help="frame rate of image folders")
    parser.add_argument("--jsonl", default="-", help="result messages, '-' for stdout")
    parser.add_argument("--labels", type=Path, help="ground truth JSON (see clients/labels.py)")
    parser.add_argument("--report", type=Path, help="write an HTML report with timelines")
    parser.add_argument(
        "--annotate", type=Path, help="write the video with results drawn on it (one source only)"
    )


def summary(total: ReplayScore) -> str:
    delays = np.array(total.delays)
    lines = [
        f"events: precision {total.event_precision:.1%}, recall {total.event_recall:.1%} "
        f"({total.true_events} right, {total.false_events} wrong, {total.missed_ranges} missed)",
        "time to decision: "
        + (
            f"median {np.median(delays):.2f} s, p95 {np.percentile(delays, 95):.2f} s"
            if delays.size
            else "-"
        ),
    ]
    if total.frame_tp + total.frame_fp + total.frame_fn:
        precision = total.frame_tp / max(1, total.frame_tp + total.frame_fp)
        recall = total.frame_tp / max(1, total.frame_tp + total.frame_fn)
        lines.append(f"frames: precision {precision:.1%}, recall {recall:.1%}")
    return "\n".join(lines)


async def replay_all(args: argparse.Namespace, out: TextIO) -> list[ClipResult]:
    labels = read_labels(args.labels) if args.labels else {}
    options = SessionOptions(args.profile, args.tier, args.seed, args.preset)
    pipelines = Pipelines.from_models()
    results = []
    try:
        for source in args.sources:
            messages = await replay_source(
                pipelines, source, options, args.fast, args.fps, len(args.sources) > 1, out
            )
            truth = labels.get(Path(source).name)
            score = score_replay(messages, truth) if truth else None
            results.append(ClipResult(source, messages, truth, score))
    finally:
        pipelines.shutdown()
        out.flush()
    return results


def replay_main(args: argparse.Namespace) -> int:
    if args.annotate and len(args.sources) != 1:
        print("replay: --annotate takes exactly one source", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        out = sys.stdout if args.jsonl == "-" else stack.enter_context(open(args.jsonl, "w"))
        try:
            results = asyncio.run(replay_all(args, out))
        except (SourceError, OptionError, LabelError) as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
    scored = [r.score for r in results if r.score is not None]
    total = None
    if args.labels:
        total = ReplayScore()
        for score in scored:
            total.add(score)
        missing = [r.source for r in results if r.score is None]
        print(summary(total), file=sys.stderr)
        if missing:
            print(f"no labels for: {', '.join(missing)}", file=sys.stderr)
    if args.report:
        write_report(args.report, results, total)
    if args.annotate:
        source = args.sources[0]
        annotate(source, results[0].messages, args.annotate, source_rate(source, args.fps))
    return 0
