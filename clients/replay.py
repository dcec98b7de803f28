"""Replay recorded videos (or image folders, or a webcam) through the same Session pipeline as
live clients: result messages as JSON Lines, and optionally scores against labels, an HTML
report with a timeline per clip, and an annotated video."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sized
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from tqdm import tqdm

from clients.annotate import annotate
from clients.clips import VideoPathError, check_video_path
from clients.labels import ClipLabels, LabelError, ReplayScore, read_labels, score_replay
from clients.report import ClipResult, write_report
from clients.sources import (
    SourceError,
    bgr_frames,
    camera_device,
    frame_count,
    opened,
    source_rate,
    video_frames,
)
from detectors.core import ImageBGR
from stream.cli_types import positive_number
from stream.images import video_frame_decoder
from stream.pipelines import OptionError, Pipelines, SessionOptions
from stream.session import Message, Session, SessionError

Frame = tuple[float, Callable[[], ImageBGR]]
"""``(media time, decode)`` of one frame of a stream."""
TimedFrames = AsyncIterator[Frame]


async def feed(session: Session, frames: TimedFrames, realtime: bool) -> None:
    """Run ``session`` over ``frames`` to the end, then close it.

    Real time offers each frame at its media time (a slow device drops frames
    as it would live). Otherwise each frame is offered once the session is
    idle: as fast as the host allows, with the real-time schedule when the
    session's profile is emulated (every frame, for the pass-through host).

    Raises:
        SessionError: processing a frame failed; the replay ends there.
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
        await runner  # raises the session's failure, if any


def open_source(source: str, fps: float, skipped: list[Path]) -> Iterator[Frame]:
    """Frames of any source, opened now (:class:`SourceError` here, before any output), decoded
    lazily for video files (only processed frames convert); unreadable images go to ``skipped``."""
    frames: Iterator[Frame]
    if Path(source).is_file():
        frames = ((t, video_frame_decoder(frame)) for t, frame in video_frames(source))
    else:
        frames = (
            (t, functools.partial(lambda image: image, image))
            for t, image in bgr_frames(source, fps, skipped)
        )
    return opened(frames)


async def timed_frames(frames: Iterator[Frame], progress: tqdm, skipped: Sized) -> TimedFrames:
    """``frames`` read off the event loop (decoding a video blocks). The progress bar's total
    (the files of a folder) loses each image in ``skipped``: they show up only as read."""
    files = progress.total
    while True:
        item = await asyncio.to_thread(next, frames, None)
        if files is not None:
            progress.total = files - len(skipped)
        if item is None:
            return
        progress.update()
        yield item


async def replay_source(
    pipelines: Pipelines,
    source: str,
    frames: Iterator[Frame],
    skipped: Sized,
    options: SessionOptions,
    fast: bool,
    tag: bool,
    out: TextIO,
) -> list[dict[str, Any]]:
    """One opened source through one session; returns its messages (also written to ``out``).

    ``skipped``: the unreadable images of this source, as :func:`open_source` finds them.
    """
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
        await feed(session, timed_frames(frames, progress, skipped), realtime=not fast)
    return messages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="VIDEO",
        help="video files (anything FFmpeg reads), image folders, or a webcam "
        "(0, /dev/video0, /dev/v4l/by-id/...)",
    )
    parser.add_argument(
        "--profile",
        default="host",
        metavar="NAME",
        help="device profile to emulate, see `run.py profiles` (default: %(default)s)",
    )
    parser.add_argument("--tier", default=None, help="model tier (default: the profile's choice)")
    parser.add_argument(
        "--preset",
        default="balanced",
        help="voting preset: strict, balanced, fast or kofn (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the emulated latency jitter (default: %(default)s)",
    )
    parser.add_argument(
        "--fast", action="store_true", help="as fast as the host allows, same schedule as real time"
    )
    parser.add_argument(
        "--fps",
        type=positive_number,
        default=15.0,
        help="frame rate of image folders, > 0 (default: %(default)s)",
    )
    parser.add_argument(
        "--jsonl", default="-", help="result messages, '-' for stdout (default: %(default)s)"
    )
    parser.add_argument("--labels", type=Path, help="ground truth JSON (see clients/labels.py)")
    parser.add_argument("--report", type=Path, help="write an HTML report with timelines")
    parser.add_argument(
        "--annotate",
        type=Path,
        help="write the video with results drawn on it (one recorded source, not a webcam)",
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


class ArgumentProblem(ValueError):
    """An option of the command line cannot work; found before any work is done."""


def check_output(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written, before a run whose end would write it."""
    if path.is_dir():
        raise ArgumentProblem(f"{option} {path}: is a directory")
    if not path.parent.is_dir():
        raise ArgumentProblem(f"{option} {path}: no such directory {path.parent}")


def check_arguments(args: argparse.Namespace) -> SessionOptions:
    """Everything checkable before models load and sources open; the session options.

    Raises:
        ArgumentProblem, OptionError: a bad option (the tier is checked once models are loaded).
    """
    if args.jsonl != "-":
        check_output(Path(args.jsonl), "--jsonl")
    if args.report:
        check_output(args.report, "--report")
    if args.annotate:
        if len(args.sources) != 1:
            raise ArgumentProblem("--annotate takes exactly one source")
        # Annotating reads the source a second time, after the run: a camera has moved on.
        if camera_device(args.sources[0]) is not None:
            raise ArgumentProblem(
                f"--annotate needs a recorded source, not webcam {args.sources[0]}"
            )
        check_output(args.annotate, "--annotate")
        try:
            check_video_path(args.annotate)
        except VideoPathError as exc:
            raise ArgumentProblem(f"--annotate {exc}") from None
    # The same checks as a websocket client's start message gets, for every option.
    return SessionOptions.from_json(
        {"profile": args.profile, "tier": args.tier, "seed": args.seed, "preset": args.preset},
        args.profile,
    )


def labels_of_sources(path: Path, sources: list[str]) -> dict[str, ClipLabels]:
    """The label file at ``path``, which must label at least one of ``sources``: a run with
    no labelled clip has nothing to score (the others are named once the run is over).

    Raises:
        LabelError: the file is malformed.
        ArgumentProblem: it labels none of ``sources``.
    """
    labels = read_labels(path)
    names = [Path(source).name for source in sources]
    if not labels.keys() & set(names):
        raise ArgumentProblem(
            f"--labels {path} has no labels for any source: {', '.join(names)} "
            "(its entries are keyed by file name)"
        )
    return labels


async def replay_all(
    args: argparse.Namespace, options: SessionOptions, output: Callable[[], TextIO]
) -> tuple[list[ClipResult], list[Path]]:
    """Every source, in order; the results and the unreadable images skipped.

    ``output`` opens the JSON Lines output: it is called only once the first
    source opened, so that a source that cannot be read leaves no file behind.
    """
    labels = labels_of_sources(args.labels, args.sources) if args.labels else {}
    pipelines = Pipelines.from_models()
    results = []
    skipped: list[Path] = []
    try:
        pipelines.simulator_for(options)  # an unknown tier, before any source or output opens
        for source in args.sources:
            unreadable: list[Path] = []
            frames = await asyncio.to_thread(open_source, source, args.fps, unreadable)
            out = output()
            try:
                messages = await replay_source(
                    pipelines,
                    source,
                    frames,
                    unreadable,
                    options,
                    args.fast,
                    len(args.sources) > 1,
                    out,
                )
            finally:
                out.flush()
            skipped += unreadable
            truth = labels.get(Path(source).name)
            score = score_replay(messages, truth) if truth else None
            results.append(ClipResult(source, messages, truth, score))
    finally:
        pipelines.shutdown()
    return results, skipped


def run(args: argparse.Namespace) -> int:
    """Exit status: 0, 2 for bad arguments or input, 1 if processing failed."""
    with contextlib.ExitStack() as stack:

        @functools.cache
        def output() -> TextIO:
            if args.jsonl == "-":
                return sys.stdout
            return stack.enter_context(open(args.jsonl, "w", encoding="utf-8"))

        try:
            options = check_arguments(args)
            results, skipped = asyncio.run(replay_all(args, options, output))
        except (ArgumentProblem, SourceError, OptionError, LabelError, OSError) as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
        except SessionError as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 1
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
    if skipped:
        print(f"skipped {len(skipped)} unreadable image(s)", file=sys.stderr)
    if args.report:
        write_report(args.report, results, total)
    if args.annotate:
        source = args.sources[0]
        rate = source_rate(source, args.fps)
        annotate(source, results[0].messages, args.annotate, rate, skipped)
    return 0
