"""``run.py eval-hw``: what a scan feels like per device profile.

It runs the same generated clips through a session
per profile and scores what a user would see: processed frames, drops,
latency, time to ``recognized``, event recall and precision; ``--realtime``
then checks, in real time, that frames come out at the emulated phone's pace
and that the real-time run gives the same frames and events as the fast one.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from clients.replay import TimedFrames, feed
from clients.ws_client import encode_jpeg
from detectors.card import MODELS_DIR, ModelCardError
from detectors.core import ImageBGR, iou
from detectors.synth.scenes import SceneOptions, add_scene_arguments, scene_options
from evals.tables import fmt, percentile, table
from evals.voting.evaluate import parse_fields
from hw_sim import PROFILES
from stream.cli_types import add_profiles_option, positive_int, positive_number
from stream.images import JpegImage
from stream.pipelines import Pipelines, SessionOptions
from stream.session import Message
from voting.presets import make_voter

MATCH_IOU = 0.3
"""A ``recognized`` event is correct when its box overlaps a true 福 box of its frame this much."""


@dataclass(frozen=True, slots=True)
class EvalClip:
    """Frames at ``fps`` and, per frame, the true 福 boxes (``N x 4``)."""

    name: str
    frames: Sequence[ImageBGR]
    boxes: Sequence[npt.NDArray[np.float32]]
    fps: float
    jpeg: bool = False
    """Hand the session each frame as a websocket client sends it (:class:`JpegFrame`),
    not as raw pixels."""

    @property
    def duration(self) -> float:
        return len(self.frames) / self.fps

    @property
    def first_visible(self) -> float | None:
        for i, b in enumerate(self.boxes):
            if len(b):
                return i / self.fps
        return None


def synth_clips(
    count: int, n_frames: int, fps: float, seed: int, scene: SceneOptions | None = None
) -> list[EvalClip]:
    """``count`` clips with 福 in view in their middle half and ``count`` with look-alikes only,
    their posters changed by ``scene`` (``None``: the generator's own mix)."""
    from detectors.synth.scenes import GENERATOR_MIX, make_clip

    clips = []
    for i in range(count):
        for content in ("mixed", "negative"):
            s = seed + 1 + i + (0 if content == "mixed" else 10_000)
            clip = make_clip(s, n_frames, fps, 640, 480, content, scene or GENERATOR_MIX)
            clips.append(EvalClip(f"{content}{s}", clip.frames, clip.boxes, fps))
    return clips


@dataclass(slots=True)
class ClipRun:
    """Messages of one session over one clip, with the event-loop time each was sent at."""

    clip: EvalClip
    sent: list[tuple[float, Message]] = field(default_factory=list)
    start: float = 0.0
    dropped: int = 0
    camera_skipped: int = 0
    processed: int = 0
    host_slower: int = 0

    def frames(self) -> list[Message]:
        return [m for _, m in self.sent if m["type"] == "frame"]

    def comparable(self) -> list[Message]:
        """The messages without host-dependent fields, for fast vs real-time comparison."""
        return [{k: v for k, v in m.items() if k != "server_ms"} for _, m in self.sent]


class JpegFrame:
    """Frame ``index`` of ``frames`` as a websocket client sends it: JPEG (``encode_jpeg``'s
    quality), which a session decodes at half size where its detector would shrink the
    frame anyway (:func:`stream.session.decode_for`). Rendered and encoded only if the
    session processes it."""

    def __init__(self, frames: Sequence[ImageBGR], index: int) -> None:
        self._frames, self._index = frames, index

    @functools.cached_property
    def _jpeg(self) -> JpegImage:
        image = self._frames[self._index]
        return JpegImage(encode_jpeg(image), image.shape[1], image.shape[0])

    @property
    def width(self) -> int:
        return self._jpeg.width

    @property
    def height(self) -> int:
        return self._jpeg.height

    def __call__(self) -> ImageBGR:
        return self._jpeg()

    def half(self) -> ImageBGR:
        return self._jpeg.half()


async def clip_frames(clip: EvalClip) -> TimedFrames:
    """The clip's frames, each taken from ``clip.frames`` only if the session processes it
    (a sequence may render its frames when asked)."""
    for i in range(len(clip.frames)):
        if clip.jpeg:
            yield i / clip.fps, JpegFrame(clip.frames, i)
        else:
            yield i / clip.fps, functools.partial(clip.frames.__getitem__, i)


async def run_clip(
    pipelines: Pipelines, options: SessionOptions, clip: EvalClip, realtime: bool
) -> ClipRun:
    loop = asyncio.get_running_loop()
    run = ClipRun(clip)

    async def send(message: Message) -> None:
        run.sent.append((loop.time(), message))

    session = pipelines.open(options, send, realtime=realtime)
    run.start = loop.time()
    await feed(session, clip_frames(clip), realtime)
    run.dropped, run.camera_skipped = session.dropped, session.camera_skipped
    run.processed, run.host_slower = session.processed, session.host_slower
    return run


@dataclass(frozen=True, slots=True)
class Score:
    recognized: int  # recognized events
    correct: int  # of which on a true 福
    found: bool  # a correct event while 福 was in view
    time_to_recognized: float | None  # phone's done time of that frame - first 福 in view


def score(run: ClipRun) -> Score:
    clip = run.clip
    recognized = correct = 0
    first_hit: float | None = None
    frame: Message | None = None
    for _, message in run.sent:
        if message["type"] == "frame":
            frame = message
        elif message["type"] == "event" and message["event"] == "recognized" and frame:
            recognized += 1
            truth = clip.boxes[cast(int, frame["frame"])].tolist()
            x0, y0, x1, y1 = cast(list[float], message["box"])
            if any(iou((x0, y0, x1, y1), (b[0], b[1], b[2], b[3])) >= MATCH_IOU for b in truth):
                correct += 1
                if first_hit is None:
                    first_hit = done_time(frame)
    visible = clip.first_visible
    ttr = first_hit - visible if first_hit is not None and visible is not None else None
    return Score(recognized, correct, first_hit is not None, ttr)


def done_time(frame: Message) -> float:
    """Media time the user sees this frame's result: the phone's finish, else t + latency."""
    device = _device(frame)
    if "done_t" in device:
        return float(device["done_t"])
    return float(cast(float, frame["t"])) + float(device["latency_ms"]) / 1000


def _device(frame: Message) -> dict[str, Any]:
    return cast(dict[str, Any], frame["device"])


@dataclass(frozen=True, slots=True)
class EvalRow:
    profile: str
    tier: str
    processed_fps: float
    dropped: int
    camera_skipped: int
    offered: int
    latency_p50: float
    latency_p95: float
    ttr_median: float | None
    recall: float | None
    precision: float | None
    host_slower: int


def summarize(profile: str, runs: Sequence[ClipRun]) -> EvalRow:
    frames = [m for r in runs for m in r.frames()]
    latencies = [float(_device(m)["latency_ms"]) for m in frames]
    scores = [score(r) for r in runs]
    with_fu = [s for r, s in zip(runs, scores, strict=True) if r.clip.first_visible is not None]
    recognized = sum(s.recognized for s in scores)
    ttrs = [s.time_to_recognized for s in with_fu if s.time_to_recognized is not None]
    tiers = sorted({str(_device(m)["tier"]) for m in frames})
    return EvalRow(
        profile,
        "/".join(tiers),
        sum(r.processed for r in runs) / sum(r.clip.duration for r in runs),
        sum(r.dropped for r in runs),
        sum(r.camera_skipped for r in runs),
        sum(len(r.clip.frames) for r in runs),
        statistics.median(latencies) if latencies else 0.0,
        percentile(latencies, 95) if latencies else 0.0,
        statistics.median(ttrs) if ttrs else None,
        sum(s.found for s in with_fu) / len(with_fu) if with_fu else None,
        sum(s.correct for s in scores) / recognized if recognized else None,
        sum(r.host_slower for r in runs),
    )


async def evaluate(
    pipelines: Pipelines,
    profiles: Sequence[str],
    clips: Sequence[EvalClip],
    seed: int = 0,
    tier: str | None = None,
    voting: dict[str, Any] | None = None,
) -> tuple[list[EvalRow], dict[str, list[ClipRun]]]:
    """Every clip through a fast session per profile (``tier`` overrides the profile's;
    ``voting`` the ``balanced`` preset's fields, as a client's ``start`` options would)."""
    rows, runs = [], {}
    for name in profiles:
        options = SessionOptions(name, tier, seed, voting=dict(voting or {}))
        runs[name] = [await run_clip(pipelines, options, clip, realtime=False) for clip in clips]
        rows.append(summarize(name, runs[name]))
    return rows, runs


def format_eval(rows: Sequence[EvalRow]) -> str:
    header = [
        "profile", "tier", "processed fps", "dropped", "cam skip", "latency p50 ms", "p95 ms",
        "to recognized s", "event recall", "event precision", "host slower",
    ]  # fmt: skip
    body = [
        [
            r.profile,
            r.tier,
            f"{r.processed_fps:.1f}",
            f"{r.dropped}/{r.offered}",
            str(r.camera_skipped),
            f"{r.latency_p50:.1f}",
            f"{r.latency_p95:.1f}",
            fmt(r.ttr_median, "{:.2f}"),
            fmt(r.recall, "{:.2f}"),
            fmt(r.precision, "{:.2f}"),
            str(r.host_slower),
        ]
        for r in rows
    ]
    return table(header, body)


@dataclass(frozen=True, slots=True)
class PaceRow:
    profile: str
    frames: int
    measured_p50: float  # ms from the phone's start of a frame to its message, real time
    emulated_p50: float  # ms, the emulated latency of the same frames
    nominal: float  # ms, the profile's cold latency without jitter
    interval_p50: float | None  # ms between messages of frames run back to back, real time
    same_as_fast: bool


def pace(run: ClipRun) -> tuple[list[float], list[float], list[float]]:
    """Real latencies (start to message) and emulated latencies of each processed frame, and
    real intervals between messages of frames the phone ran back to back (all ms)."""
    frames = [(at - run.start, _device(m)) for at, m in run.sent if m["type"] == "frame"]
    measured = [(at - d["start_t"]) * 1000 for at, d in frames]
    emulated = [float(d["latency_ms"]) for _, d in frames]
    intervals = [
        (at1 - at0) * 1000
        for (at0, d0), (at1, d1) in itertools.pairwise(frames)
        if abs(d1["start_t"] - d0["done_t"]) < 1e-3
    ]
    return measured, emulated, intervals


async def check_pace(
    pipelines: Pipelines,
    profiles: Sequence[str],
    clip: EvalClip,
    seed: int,
    tier: str | None = None,
) -> list[PaceRow]:
    """Run ``clip`` per emulated profile in real time and fast; compare pace and messages.

    ``tier`` overrides the profile's choice: a tier slower than the camera keeps
    the phone busy back to back, so that frame intervals show its latency.
    """
    rows = []
    for name in profiles:
        if not PROFILES[name].emulated:
            continue
        options = SessionOptions(name, tier, seed)
        simulator, _ = pipelines.simulator_for(options)
        fast = await run_clip(pipelines, options, clip, realtime=False)
        run = await run_clip(pipelines, options, clip, realtime=True)
        measured, emulated, intervals = pace(run)
        build = simulator.model.precision if simulator.model else "?"
        rows.append(
            PaceRow(
                f"{name} ({simulator.tier}, {build})",
                len(measured),
                statistics.median(measured) if measured else 0.0,
                statistics.median(emulated) if emulated else 0.0,
                simulator.device().nominal_latency * 1000,
                statistics.median(intervals) if intervals else None,
                run.comparable() == fast.comparable(),
            )
        )
    return rows


def format_pace(rows: Sequence[PaceRow]) -> str:
    header = [
        "profile", "frames", "real latency p50 ms", "emulated p50 ms", "error", "profile ms",
        "vs profile", "back-to-back interval p50 ms", "same frames+events as fast",
    ]  # fmt: skip
    body = [
        [
            r.profile,
            str(r.frames),
            f"{r.measured_p50:.1f}",
            f"{r.emulated_p50:.1f}",
            f"{(r.measured_p50 / r.emulated_p50 - 1) * 100:+.1f}%" if r.emulated_p50 else "-",
            f"{r.nominal:.1f}",
            f"{(r.measured_p50 / r.nominal - 1) * 100:+.1f}%" if r.nominal else "-",
            fmt(r.interval_p50),
            "yes" if r.same_as_fast else "NO",
        ]
        for r in rows
    ]
    return table(header, body)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["confirm=false", "alpha=0.01"]`` as the ``balanced`` preset's overrides.

    Raises:
        ValueError: an item is not ``field=value``, or the preset refuses it.
    """
    overrides: dict[str, Any] = parse_fields(items)
    make_voter("balanced", None, **overrides)  # VotingConfigError is a ValueError
    return overrides


def eval_hw_main(
    profiles: Sequence[str],
    clips: int,
    frames: int,
    fps: float,
    seed: int,
    realtime: bool,
    tier: str | None = None,
    voting: Sequence[str] = (),
    scene: SceneOptions | None = None,
    models_dir: Path = MODELS_DIR,
) -> int:
    """``voting``: ``field=value`` overrides of the ``balanced`` preset, e.g. ``confirm=false``;
    ``scene``: the clips' posters (``None``: the generator's own mix); ``models_dir``: the
    cards the sessions load (default: the shipped ones), to compare others side by side."""
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        print(f"eval-hw: unknown profile(s) {unknown}; known: {sorted(PROFILES)}")
        return 2
    try:
        overrides = parse_overrides(voting)
    except ValueError as exc:
        print(f"eval-hw: {exc}")
        return 2
    # Each session would warn once that this host is slower than a phone; the table counts it.
    logging.getLogger("stream.session").setLevel(logging.ERROR)
    try:
        pipelines = Pipelines.from_models(models_dir=models_dir)
    except (RuntimeError, ModelCardError) as exc:
        print(f"eval-hw: {exc}")
        return 2
    try:
        made = synth_clips(clips, frames, fps, seed, scene)
        changes = "" if scene is None else scene.changes()
        print(
            f"{len(made)} clips ({clips} with 福 in view mid-clip, {clips} look-alikes only), "
            f"{frames} frames at {fps:g} fps, 640x480, seed {seed}; fast mode"
            + (f"; scenes {changes}" if changes else "")
            + (f"; tier {tier} forced" if tier else "")
            + (f"; voting {', '.join(voting)}" if voting else "")
            + ("" if models_dir == MODELS_DIR else f"; models {models_dir}")
            + "\n"
        )
        rows, _ = asyncio.run(evaluate(pipelines, profiles, made, seed, tier, overrides))
        print(format_eval(rows))
        if realtime:
            print(f"\nreal time vs fast, clip {made[0].name}: frame pace vs emulated latency")
            for tier in (None, "l"):
                pace_rows = asyncio.run(check_pace(pipelines, profiles, made[0], seed, tier))
                print(format_pace(pace_rows))
    finally:
        pipelines.shutdown()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        action="append",
        dest="hw_profiles",
        metavar="NAME",
        help="a device profile (repeatable; default: all)",
    )
    add_profiles_option(parser)
    parser.add_argument(
        "--clips", type=positive_int, default=4, help="clips with 福 (and as many without)"
    )
    parser.add_argument(
        "--frames", type=positive_int, default=90, help="frames per clip (default: %(default)s)"
    )
    parser.add_argument(
        "--fps", type=positive_number, default=30.0, help="the clips' frame rate (%(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first clip")
    parser.add_argument("--tier", default=None, help="force this tier on every profile")
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=MODELS_DIR,
        help="the cards and models the sessions load (default: the shipped ones)",
    )
    parser.add_argument(
        "--realtime", action="store_true", help="also check the real-time pace against the profile"
    )
    parser.add_argument(
        "--voting",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="repeatable: an override of the balanced preset, e.g. confirm=false",
    )
    add_scene_arguments(parser, clips=True)


def run(args: argparse.Namespace) -> int:
    return eval_hw_main(
        args.hw_profiles or list(PROFILES),
        args.clips,
        args.frames,
        args.fps,
        args.seed,
        args.realtime,
        args.tier,
        args.voting,
        scene_options(args),
        args.models_dir,
    )
