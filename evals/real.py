"""``python run.py eval-real DIR``: real pictures of 福 held up to a phone, through the sessions.

Each picture of ``DIR/pos`` (福) and ``DIR/neg`` (other characters) is held up to a moving
camera in ``--clips-per-image`` clips (:class:`evals.real_scenes.RealClip`: at a slant,
growing as the phone comes closer, hand-held drift and motion blur, light changes, on a
background photo; ``--turned-share`` of them upside down, 倒福), and every clip runs through
a fast session of the emulated ``--profile``, the same pipeline as ``run.py replay`` and
``run.py eval-hw`` (:func:`evals.hw.devices.run_clip`): what is scored is what a user gets.

Scores per picture, per style (``PROVENANCE.tsv``'s ``style`` column, by its first word) and
overall: event recall (a ``recognized`` on the 福 during the clip), frame recall at IoU 0.5
(processed frames with a detection on the 福's box), false recognitions (``recognized`` on a
picture of another character, or off the 福), and the median time to decision. For every
clip of a 福 never recognized, the stage that lost it, from an instrumented pass of the
session's own detector over the frames the session processed (docs/eval_real.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import statistics
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from detectors.card import MODELS_DIR
from detectors.synth.scenes import share_argument
from stream.cli_types import positive_int, positive_number

if TYPE_CHECKING:
    from detectors.core import Box, ImageBGR
    from detectors.onnx_detector import OnnxDetector
    from evals.hw.devices import ClipRun
    from evals.real_scenes import RealClip, RealImage, Truth
    from hw_sim import DeviceProfile
    from stream.pipelines import Pipelines, SessionOptions

FRAME_IOU = 0.5
"""A processed frame counts for frame recall when a detection overlaps the 福's box this much."""
STAGES = ("first look", "close-up", "glyph check", "turned check", "vote")
"""Where a clip of a 福 that was never recognized was lost, earliest first: no candidate on the
福 above the first look's cut; candidates, but no close-up scoring the threshold; detections,
refused by the glyph check; passed by the glyph check, refused by the turned check; or every
check passed on some frame, and still no ``recognized`` (the vote asks the checks only as a
track nears recognition, and counts a refusal as a miss: checks that pass on some frames and
refuse others end here too)."""


def frame_size(text: str) -> tuple[int, int]:
    """An argparse type: ``WIDTHxHEIGHT``, both at least 64."""
    width, _, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want WIDTHxHEIGHT, got {text!r}") from None
    if min(size) < 64:
        raise argparse.ArgumentTypeError(f"want both sides >= 64, got {text!r}")
    return size


OPTIONS = (
    "dir", "clips_per_image", "seconds", "fps", "size", "turned_share", "truth", "max_images",
    "profile", "tier", "precision", "models_dir", "seed", "frames",
)  # fmt: skip
"""The options a report's numbers depend on, written into ``--json``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, metavar="DIR", help="a folder with pos/ and neg/")
    parser.add_argument(
        "--clips-per-image", type=positive_int, default=3, help="clips of each picture (default 3)"
    )
    parser.add_argument(
        "--seconds", type=positive_number, default=3.5, help="length of a clip (default 3.5)"
    )
    parser.add_argument(
        "--fps", type=positive_number, default=30.0, help="the camera's frame rate (default 30)"
    )
    parser.add_argument(
        "--size",
        type=frame_size,
        default=(1280, 720),
        metavar="WxH",
        help="frame size (default 1280x720, the mid phone's camera)",
    )
    parser.add_argument(
        "--turned-share",
        type=share_argument,
        default=0.25,
        help="share of the clips with the picture upside down, 倒福 (default 0.25)",
    )
    parser.add_argument(
        "--truth",
        choices=["ink", "image"],
        default="ink",
        help="the 福's true box: its ink as estimated from colour, or the whole picture "
        "(default ink)",
    )
    parser.add_argument(
        "--max-images",
        type=positive_int,
        default=None,
        metavar="N",
        help="only the first N pictures of pos/ and of neg/ (a quick look)",
    )
    parser.add_argument("--profile", default="mid", help="device profile to emulate (default mid)")
    parser.add_argument("--tier", default=None, help="model tier (default: the profile's)")
    parser.add_argument(
        "--precision",
        default="int8",
        choices=["int8", "fp32"],
        help="the host profile's build (an emulated phone runs its own; default int8)",
    )
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=MODELS_DIR,
        help="the cards and models the sessions load (default: the shipped ones)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the clips (default 0)")
    parser.add_argument(
        "--frames",
        choices=["jpeg", "raw"],
        default="jpeg",
        help="hand sessions each frame as a websocket client sends it, JPEG, which a session "
        "decodes at half size where its model would shrink it anyway; or as raw pixels "
        "(default jpeg)",
    )
    parser.add_argument(
        "--jobs", type=positive_int, default=1, help="processes running clips (default 1)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every number here")
    parser.add_argument(
        "--list-misses",
        action="store_true",
        help="list every clip of a 福 never recognized, with the stage that lost it, and "
        "every false recognition",
    )


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What every clip of a run depends on (sent to each worker process)."""

    directory: Path
    max_images: int | None
    seconds: float
    fps: float
    size: tuple[int, int]
    truth: Truth
    profile: str
    tier: str | None
    precision: str
    models_dir: Path
    seed: int
    frames: str = "jpeg"
    """``jpeg``: frames reach sessions as a websocket client sends them; ``raw``: as pixels."""

    @property
    def n_frames(self) -> int:
        return max(1, round(self.seconds * self.fps))


@dataclass(frozen=True, slots=True)
class ClipSpec:
    """Clip ``number`` of picture ``image`` (an index into the loaded set)."""

    image: int
    number: int
    turned: bool


def clip_specs(images: Sequence[RealImage], per_image: int, turned_share: float) -> list[ClipSpec]:
    """``per_image`` clips of each picture; of each label's clips, ``turned_share`` upside
    down, spread evenly over its pictures."""
    specs = []
    counted = Counter[str]()
    for index, image in enumerate(images):
        for number in range(per_image):
            j = counted[image.label]
            counted[image.label] += 1
            turned = int((j + 1) * turned_share) > int(j * turned_share)
            specs.append(ClipSpec(index, number, turned))
    return specs


def clip_seed(seed: int, image: RealImage, number: int) -> tuple[int, int, int]:
    """A clip's seed: the run's, its picture's name (adding pictures changes no other clip's
    pixels) and its number."""
    return (seed, zlib.crc32(image.name.encode()), number)


@dataclass(frozen=True, slots=True)
class ClipOutcome:
    """What one clip's session did."""

    spec: ClipSpec
    frames: int
    """Processed frames with the 福 in view..."""
    hits: int
    """...and those with a detection at IoU >= :data:`FRAME_IOU` on it..."""
    at_threshold: int
    """...of which the best scored the model's threshold exactly: a candidate the glyph rescue
    (or, on a recognized track, the first look) kept at the threshold, the weakest evidence the
    vote gets from a detection."""
    recognized: bool
    """A ``recognized`` on the 福 (IoU >= ``evals.hw.devices.MATCH_IOU``)."""
    false_events: tuple[float, ...]
    """Media times of the ``recognized`` events not on a 福."""
    decision_s: float | None
    """Seconds from the clip's start to the phone's result of the first right ``recognized``."""
    lost_at: str | None
    """For a 福 never recognized: the stage that lost it (:data:`STAGES`); ``None`` otherwise
    (and for a session whose detector cannot be instrumented)."""


class Evaluator:
    """One process's loaded set and models: runs clips through sessions."""

    def __init__(self, config: RunConfig) -> None:
        from evals.real_scenes import load_set
        from stream.pipelines import Pipelines, SessionOptions

        self.config = config
        self.images = load_set(config.directory, config.max_images)
        self.pipelines: Pipelines = Pipelines.from_models(
            config.precision, models_dir=config.models_dir
        )
        self.options: SessionOptions = SessionOptions(config.profile, config.tier, config.seed)
        _, detector = self.pipelines.simulator_for(self.options)  # an unknown one fails here
        self.threshold = None if detector.model is None else detector.model.threshold

    def shutdown(self) -> None:
        self.pipelines.shutdown()

    def clip(self, spec: ClipSpec) -> RealClip:
        from evals.real_scenes import RealClip

        config, image = self.config, self.images[spec.image]
        seed = clip_seed(config.seed, image, spec.number)
        return RealClip(
            [image], seed, config.n_frames, config.fps, config.size, spec.turned, config.truth
        )

    def run(self, spec: ClipSpec) -> ClipOutcome:
        return asyncio.run(self._run(spec))

    async def _run(self, spec: ClipSpec) -> ClipOutcome:
        from evals.hw.devices import EvalClip, run_clip, score

        clip = self.clip(spec)
        name = f"{self.images[spec.image].name}#{spec.number}"
        run = await run_clip(
            self.pipelines,
            self.options,
            EvalClip(name, clip, clip.boxes, self.config.fps, self.config.frames == "jpeg"),
            realtime=False,
        )
        got = score(run)
        frames, hits, at_threshold = frame_hits(run, self.threshold)
        positive = self.images[spec.image].label == "pos"
        lost_at = None
        if positive and not got.found:
            lost_at = self.lost_at(clip, [int(cast(int, m["frame"])) for m in run.frames()])
        return ClipOutcome(
            spec,
            frames,
            hits,
            at_threshold,
            got.found,
            false_recognitions(run, positive),
            got.time_to_recognized,
            lost_at,
        )

    def lost_at(self, clip: RealClip, processed: Sequence[int]) -> str | None:
        """The furthest stage (:data:`STAGES`) the 福 reached on any frame the session processed,
        from the session's own detector and camera, run again on those frames as it decoded
        them."""
        from detectors.onnx_detector import OnnxDetector
        from evals.hw.devices import JpegFrame
        from stream.pipelines import view_side
        from stream.session import decode_for

        simulator, detector = self.pipelines.simulator_for(self.options)
        if not isinstance(detector, OnnxDetector):
            return None
        side = view_side(detector, self.pipelines.targets)
        jpeg = self.config.frames == "jpeg"
        reached = 0
        for i in processed:
            if len(clip.boxes[i]):
                sent = JpegFrame(clip, i) if jpeg else partial(clip.__getitem__, i)
                image, width, _ = decode_for(sent, side() if side else None)
                x0, y0, x1, y1 = (float(v) * image.shape[1] / width for v in clip.boxes[i][0])
                reached = max(
                    reached, stage_reached(detector, simulator.profile, image, (x0, y0, x1, y1))
                )
            if reached == len(STAGES) - 1:
                break
        return STAGES[reached]


def stage_reached(
    detector: OnnxDetector, profile: DeviceProfile, frame: ImageBGR, truth: Box
) -> int:
    """How far the 福 at ``truth`` in ``frame`` gets through ``detector`` as a session of
    ``profile`` runs it: an index into :data:`STAGES` of the next stage, the one that drops it
    (the last, the vote, when every check passes).

    The same public steps as ``detector.detect`` and the voter's check, in order: the first
    look at the card's candidate cut, the close-ups, then the card's checks (glyph, turned).
    """
    from detectors.core import iou
    from detectors.onnx_detector import GLYPH_REFUSED
    from evals.hw.devices import MATCH_IOU
    from hw_sim import camera_view

    view, scale = camera_view(profile, frame)
    box = (truth[0] * scale, truth[1] * scale, truth[2] * scale, truth[3] * scale)
    candidates = detector.network.look(view, detector.candidate_threshold)
    if not any(iou(c.box, box) >= MATCH_IOU for c in candidates):
        return 0
    found = [d for d in detector.second_looks(view, candidates) if iou(d.box, box) >= MATCH_IOU]
    if not found:
        return 1
    confirmer = detector.confirmer(view)
    if confirmer is None:
        return 4
    verdict = confirmer.check(found[0])
    if verdict >= confirmer.min_score:
        return 4
    return 2 if verdict <= GLYPH_REFUSED else 3


def frame_hits(run: ClipRun, threshold: float | None) -> tuple[int, int, int]:
    """Processed frames with a 福 in view, those with a detection at IoU >= :data:`FRAME_IOU` on
    it, and those whose best such detection scored ``threshold`` (as reported, to 4 places;
    none without one)."""
    from detectors.core import iou

    frames = hits = at_threshold = 0
    for message in run.frames():
        truth = run.clip.boxes[cast(int, message["frame"])].tolist()
        if not truth:
            continue
        frames += 1
        scores = [
            cast(float, d["score"])
            for d in cast(list[dict[str, Any]], message["detections"])
            if any(iou(_box(d["box"]), _box(t)) >= FRAME_IOU for t in truth)
        ]
        if scores:
            hits += 1
            at_threshold += threshold is not None and max(scores) == round(threshold, 4)
    return frames, hits, at_threshold


def false_recognitions(run: ClipRun, positive: bool) -> tuple[float, ...]:
    """Media times of the ``recognized`` events off every 福 of the clip (all of them on a
    picture of another character)."""
    from detectors.core import iou
    from evals.hw.devices import MATCH_IOU

    times = []
    frame: dict[str, object] | None = None
    for _, message in run.sent:
        if message["type"] == "frame":
            frame = message
        elif message["type"] == "event" and message["event"] == "recognized":
            truth = [] if frame is None else run.clip.boxes[cast(int, frame["frame"])].tolist()
            box = _box(cast(list[float], message["box"]))
            if not positive or not any(iou(box, _box(t)) >= MATCH_IOU for t in truth):
                times.append(float(cast(float, message["t"])))
    return tuple(times)


def _box(values: Sequence[float]) -> Box:
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))


# ---------------------------------------------------------------- workers

_worker: list[Evaluator] = []  # each pool process loads the set and the models once


def _start_worker(config: RunConfig) -> None:
    logging.getLogger("stream.session").setLevel(logging.ERROR)
    _worker.append(Evaluator(config))


def _run_in_worker(spec: ClipSpec) -> ClipOutcome:
    return _worker[0].run(spec)


def run_clips(config: RunConfig, specs: Sequence[ClipSpec], jobs: int) -> list[ClipOutcome]:
    """Every clip of ``specs``, in ``jobs`` processes (1: this one); outcomes in their order."""
    from tqdm import tqdm

    progress = tqdm(total=len(specs), desc="eval-real", unit="clip", disable=None, leave=False)
    with progress:
        if jobs == 1:
            logging.getLogger("stream.session").setLevel(logging.ERROR)
            evaluator = Evaluator(config)
            try:
                outcomes = []
                for spec in specs:
                    outcomes.append(evaluator.run(spec))
                    progress.update()
                return outcomes
            finally:
                evaluator.shutdown()
        # Spawned, not forked: a fork would copy this process's ONNX Runtime thread state.
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(jobs, context, initializer=_start_worker, initargs=(config,))
        with pool:
            outcomes = []
            for outcome in pool.map(_run_in_worker, specs):
                outcomes.append(outcome)
                progress.update()
            return outcomes


# ---------------------------------------------------------------- report


@dataclass(slots=True)
class Tally:
    """The outcomes of a group of clips."""

    clips: int = 0
    positive_clips: int = 0
    recognized: int = 0
    frames: int = 0
    hits: int = 0
    at_threshold: int = 0
    false_events: int = 0
    false_clips: int = 0
    decisions: list[float] = field(default_factory=list)
    lost: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: ClipOutcome, positive: bool) -> None:
        self.clips += 1
        self.false_events += len(outcome.false_events)
        self.false_clips += bool(outcome.false_events)
        if not positive:
            return
        self.positive_clips += 1
        self.recognized += outcome.recognized
        self.frames += outcome.frames
        self.hits += outcome.hits
        self.at_threshold += outcome.at_threshold
        if outcome.decision_s is not None:
            self.decisions.append(outcome.decision_s)
        if outcome.lost_at is not None:
            self.lost[outcome.lost_at] += 1

    @property
    def event_recall(self) -> float | None:
        return self.recognized / self.positive_clips if self.positive_clips else None

    @property
    def frame_recall(self) -> float | None:
        return self.hits / self.frames if self.frames else None

    @property
    def decision_median(self) -> float | None:
        return statistics.median(self.decisions) if self.decisions else None

    def to_json(self) -> dict[str, Any]:
        return {
            "clips": self.clips,
            "positive_clips": self.positive_clips,
            "recognized": self.recognized,
            "event_recall": self.event_recall,
            "frames": self.frames,
            "frame_hits": self.hits,
            "frame_hits_at_threshold": self.at_threshold,
            "frame_recall": self.frame_recall,
            "false_recognitions": self.false_events,
            "clips_with_false_recognitions": self.false_clips,
            "decision_median_s": self.decision_median,
            "lost_at": {stage: self.lost[stage] for stage in STAGES},
        }


def tally(
    images: Sequence[RealImage],
    outcomes: Iterable[ClipOutcome],
    key: Callable[[RealImage, ClipOutcome], str | None],
) -> dict[str, Tally]:
    """Outcomes grouped by ``key(image, outcome)`` (a name, or ``None`` to leave one out)."""
    groups: dict[str, Tally] = {}
    for outcome in outcomes:
        image = images[outcome.spec.image]
        name = key(image, outcome)
        if name is not None:
            groups.setdefault(name, Tally()).add(outcome, image.label == "pos")
    return groups


def overall(images: Sequence[RealImage], outcomes: Sequence[ClipOutcome]) -> dict[str, Tally]:
    rows = tally(images, outcomes, lambda image, o: "福, all" if image.label == "pos" else None)
    rows |= tally(
        images,
        outcomes,
        lambda image, o: (
            None if image.label != "pos" else ("福, 倒福" if o.spec.turned else "福, upright")
        ),
    )
    rows |= tally(
        images, outcomes, lambda image, o: "others (neg/)" if image.label == "neg" else None
    )
    return rows


def style_row(image: RealImage) -> str:
    """The style table's row of ``image``: its script, pictures of other characters apart."""
    return image.script if image.label == "pos" else f"others: {image.script}"


def by_style(images: Sequence[RealImage], outcomes: Sequence[ClipOutcome]) -> dict[str, Tally]:
    rows = tally(images, outcomes, lambda image, o: style_row(image))
    return dict(sorted(rows.items(), key=lambda item: (item[0].startswith("others"), item[0])))


def _ratio(k: int, n: int) -> str:
    return f"{k}/{n} {k / n:.0%}" if n else "-"


def group_table(rows: dict[str, Tally], title: str, pictures: dict[str, int]) -> str:
    from evals.tables import fmt, table

    header = [
        title, "pictures", "clips", "event recall", "frame recall@0.5", "false recogn.",
        "decision s (median)", *(f"lost: {s}" for s in STAGES),
    ]  # fmt: skip
    body = [
        [
            name,
            str(pictures.get(name, "")),
            str(row.clips),
            _ratio(row.recognized, row.positive_clips),
            _ratio(row.hits, row.frames),
            f"{row.false_events} in {row.false_clips}/{row.clips} clips",
            fmt(row.decision_median, "{:.2f}"),
            *(str(row.lost[stage]) if row.positive_clips else "-" for stage in STAGES),
        ]
        for name, row in rows.items()
    ]
    return table(header, body)


def short_names(images: Sequence[RealImage]) -> list[str]:
    """The pictures' file names without the prefix they all share."""
    names = [Path(image.name).name for image in images]
    prefix = names[0] if len(names) > 1 else ""
    for name in names:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return [
        image.label + "/" + name[len(prefix) :] for image, name in zip(images, names, strict=True)
    ]


def image_table(images: Sequence[RealImage], outcomes: Sequence[ClipOutcome]) -> str:
    from evals.tables import fmt, table

    rows = tally(images, outcomes, lambda image, o: image.name)
    names = dict(zip((i.name for i in images), short_names(images), strict=True))
    header = ["picture", "style", "clips", "recognized", "frame recall@0.5", "false recogn.",
              "decision s", "lost at"]  # fmt: skip
    body = []
    for image in images:
        row = rows.get(image.name)
        if row is None:
            continue
        lost = ", ".join(f"{stage} {row.lost[stage]}" for stage in STAGES if row.lost[stage])
        body.append(
            [
                names[image.name],
                image.script,
                str(row.clips),
                _ratio(row.recognized, row.positive_clips),
                _ratio(row.hits, row.frames),
                str(row.false_events),
                fmt(row.decision_median, "{:.2f}"),
                lost or "-",
            ]
        )
    return table(header, body)


def misses_list(images: Sequence[RealImage], outcomes: Sequence[ClipOutcome]) -> str:
    names = dict(zip((i.name for i in images), short_names(images), strict=True))
    lines = [
        "missed 福 clips (picture #clip, 倒福, frames with a detection at IoU 0.5, of them at the "
        "threshold, lost at):"
    ]
    for o in outcomes:
        if images[o.spec.image].label == "pos" and not o.recognized:
            turned = ", 倒福" if o.spec.turned else ""
            lines.append(
                f"  {names[images[o.spec.image].name]} #{o.spec.number}{turned}: "
                f"{o.hits}/{o.frames} frames, {o.at_threshold} at the threshold, "
                f"lost at {o.lost_at or '-'}"
            )
    lines.append("false recognitions (picture #clip, 倒福, media times s):")
    for o in outcomes:
        if o.false_events:
            turned = ", 倒福" if o.spec.turned else ""
            times = ", ".join(f"{t:.2f}" for t in o.false_events)
            lines.append(f"  {names[images[o.spec.image].name]} #{o.spec.number}{turned}: {times}")
    return "\n".join(lines)


def report_json(
    images: Sequence[RealImage],
    specs: Sequence[ClipSpec],
    outcomes: Sequence[ClipOutcome],
    options: dict[str, Any],
) -> dict[str, Any]:
    by_image: dict[int, list[ClipOutcome]] = {}
    for outcome in outcomes:
        by_image.setdefault(outcome.spec.image, []).append(outcome)
    return {
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in options.items()},
        "clips": len(specs),
        "overall": {name: row.to_json() for name, row in overall(images, outcomes).items()},
        "styles": {name: row.to_json() for name, row in by_style(images, outcomes).items()},
        "images": [
            {
                "name": image.name,
                "label": image.label,
                "style": image.style,
                "ink_box": [round(v, 1) for v in image.ink],
                "clips": [
                    {
                        "number": o.spec.number,
                        "turned": o.spec.turned,
                        "frames": o.frames,
                        "frame_hits": o.hits,
                        "frame_hits_at_threshold": o.at_threshold,
                        "recognized": o.recognized,
                        "false_recognitions": list(o.false_events),
                        "decision_s": o.decision_s,
                        "lost_at": o.lost_at,
                    }
                    for o in by_image.get(index, [])
                ],
            }
            for index, image in enumerate(images)
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Exit status: 0, 2 for a bad folder or option."""
    from detectors.card import ModelCardError
    from evals.real_scenes import RealSetError, load_set
    from hw_sim import ModelChoiceError

    config = RunConfig(
        args.dir,
        args.max_images,
        args.seconds,
        args.fps,
        tuple(args.size),
        args.truth,
        args.profile,
        args.tier,
        args.precision,
        args.models_dir,
        args.seed,
        args.frames,
    )
    if args.json is not None and not args.json.parent.is_dir():
        print(f"eval-real: --json {args.json}: no such directory", file=sys.stderr)
        return 2
    try:
        images = load_set(config.directory, config.max_images)
        check_options(config)
    except (RealSetError, ModelCardError, ModelChoiceError, KeyError) as exc:
        print(f"eval-real: {exc}", file=sys.stderr)
        return 2
    specs = clip_specs(images, args.clips_per_image, args.turned_share)
    outcomes = run_clips(config, specs, args.jobs)
    pos = [i for i in images if i.label == "pos"]
    print(
        f"{len(specs)} clips of {len(pos)} pictures of 福 and {len(images) - len(pos)} others "
        f"in {config.directory}: {args.clips_per_image} per picture, {config.seconds:g} s at "
        f"{config.fps:g} fps, {config.size[0]}x{config.size[1]}, {args.turned_share:.0%} "
        f"upside down; profile {config.profile}"
        + (f", tier {config.tier}" if config.tier else "")
        + f"; true box: {config.truth}; seed {config.seed}\n"
    )
    pictures = Counter("福, all" if i.label == "pos" else "others (neg/)" for i in images)
    print(group_table(overall(images, outcomes), "clips", dict(pictures)))
    print()
    print(group_table(by_style(images, outcomes), "style", dict(Counter(map(style_row, images)))))
    print()
    print(image_table(images, outcomes))
    if args.list_misses:
        print()
        print(misses_list(images, outcomes))
    if args.json is not None:
        options = {k: v for k, v in vars(args).items() if k in OPTIONS}
        report = report_json(images, specs, outcomes, options)
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


def check_options(config: RunConfig) -> None:
    """Refuse an unknown profile or tier, or a folder without cards, before any clip runs
    (from the cards alone: the models load in the processes that run clips).

    Raises:
        KeyError: an unknown profile.
        ModelChoiceError, ModelCardError: no such tier, or no cards to choose from.
    """
    from detectors.card import list_cards
    from hw_sim import ModelSpec, choose_model, get_profile

    specs = [ModelSpec.from_card(card) for card in list_cards(config.models_dir)]
    choose_model(get_profile(config.profile), specs, config.tier, config.precision)
