"""Evaluate the shipped 福 detectors on held-out generated scenes and print one table.

    python run.py eval-model [--tiers s m l] [--scenes 400] [--write-cards] [--pick-thresholds RATE]

For every tier and precision, side by side in one run: AP50 on held-out scenes
(fonts and photos never used in training; 福, look-alikes only, or empty),
precision and recall at the card's operating threshold, the per-frame false
positive rate on scenes holding only look-alike posters (富 幅 副 逼 辐 蝠 祸 祝 禄 神
and festive 春 喜 寿 财), MACs, parameters, file size, the median single-thread
latency of the network alone, and the median and p90 time of a whole ``detect``
call on those 640x480 scenes (letterbox, network, decoding and, for a card with
a second look, its close-ups). ``--write-cards`` stores these numbers in the
model cards.

``--shift-stability`` adds a second table: how steady each model's verdict on
a 福 is when the camera moves it by a pixel or three (as a hand-held phone does
between frames), on the held-out scenes with 福 (``shift_stability``).

``--pick-thresholds RATE`` first sets each card's operating threshold: the
lowest score at which at most ``RATE`` of look-alike-only frames fire, measured
on training-split scenes (training fonts and photos, seeds apart from every
other set), so the held-out numbers that follow stay unbiased.
"""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
import numpy.typing as npt

from detectors.card import MODELS_DIR, ModelCard, list_cards, read_card, update_card
from detectors.core import Detections, ImageBGR, iou
from detectors.metrics import AP_IOU, match, median_ms
from detectors.onnx_detector import OnnxDetector, letterbox
from detectors.synth.scenes import (
    GENERATOR_MIX,
    Boxes,
    Content,
    LabelledScene,
    SceneOptions,
    Split,
    add_scene_arguments,
    render_scene,
    scene_options,
)
from stream.cli_types import UsageError

if TYPE_CHECKING:  # imported where real pictures are asked for
    from evals.real_scenes import RealImage

FRAME_WIDTH, FRAME_HEIGHT = 640, 480
CURVE_THRESHOLD = 0.05
"""Detections down to this score make the precision-recall curve."""
SEED_BASE: dict[tuple[Split, str], int] = {
    ("eval", "mixed"): 70_000_000,
    ("eval", "negative"): 80_000_000,
    ("train", "mixed"): 90_000_000,
    ("train", "negative"): 91_000_000,
}
THRESHOLD_GRID = np.round(np.arange(0.30, 0.951, 0.01), 2)
SHIFTS = ((0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (1, 2), (3, 2), (2, 3))
"""Whole-pixel moves of a scene, (dx, dy): less than one stride of any tier's network, as
between two frames of a hand-held camera."""


@dataclass(frozen=True, slots=True)
class Result:
    """One model's numbers; rates are fractions, latency milliseconds."""

    ap50: float
    precision: float
    recall: float
    hard_negative_fp_rate: float
    latency_ms: float
    """The network alone, one run."""
    frame_ms: float
    """A whole ``detect`` call on a held-out scene, close-ups included: the median..."""
    frame_ms_p90: float
    """...and the 90th percentile (frames with more candidates take longer)."""


def held_out(
    content: Content,
    count: int,
    split: Split = "eval",
    options: SceneOptions = GENERATOR_MIX,
    real: Sequence[RealImage] = (),
) -> Iterator[LabelledScene]:
    """``count`` 640x480 scenes of ``content`` from ``split``, always the same seeds
    (``options``: :func:`render_scene`'s); with ``real`` pictures, stills of them held up to
    a camera instead (:func:`evals.real_scenes.scene_clip`: a "mixed" scene shows a 福)."""
    base = SEED_BASE[(split, str(content))]
    if real:
        from evals.real_scenes import scene_clip

        kind = "fu" if content == "mixed" else str(content)
        size = (FRAME_WIDTH, FRAME_HEIGHT)
        for i in range(count):
            still = scene_clip(real, kind, base + i, 1, 30.0, size, still=True)
            yield LabelledScene(still[0], still.boxes[0], np.zeros((0, 4), np.float32))
        return
    for i in range(count):
        yield render_scene(base + i, FRAME_WIDTH, FRAME_HEIGHT, split, content, options)


def average_precision(scored: list[tuple[float, bool]], positives: int) -> float:
    """Area under the all-point interpolated precision-recall curve (as in VOC 2010+)."""
    if positives == 0:
        return float("nan")
    ordered = sorted(scored, key=lambda s: -s[0])
    hits = np.cumsum([tp for _, tp in ordered], dtype=np.float64)
    recall = np.concatenate([[0.0], hits / positives])
    precision = np.concatenate([[1.0], hits / np.arange(1, len(ordered) + 1)])
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    return float(np.sum(np.diff(recall) * envelope[1:]))


def median_latencies_ms(detectors: list[OnnxDetector], rounds: int) -> list[float]:
    """Median single-thread time of each network alone on one letterboxed 640x480 frame."""
    frame = np.zeros((FRAME_HEIGHT, FRAME_WIDTH, 3), np.uint8)
    calls = [partial(d.infer, letterbox(frame, d.card.input)[0]) for d in detectors]
    return median_ms(calls, rounds)


@dataclass(frozen=True, slots=True)
class SceneScores:
    """One model's raw output on a split's scenes, from which every rate here is derived."""

    scored: list[tuple[float, bool]]
    """(score, is true positive) of every detection in the mixed scenes."""
    positives: int
    """福 boxes in the mixed scenes."""
    worst_negative: list[float]
    """Per look-alike-only scene, its best detection's score (0 when none)."""
    detect_ms: list[float]
    """Time of each ``detect`` call, mixed and look-alike-only scenes."""

    def fp_rate(self, threshold: float) -> float:
        """Share of look-alike-only scenes with a detection at ``threshold``."""
        return float(np.mean(np.asarray(self.worst_negative) >= threshold))


def score_scenes(
    detectors: dict[Path, OnnxDetector],
    scenes: int,
    split: Split,
    options: SceneOptions = GENERATOR_MIX,
    real: Sequence[RealImage] = (),
) -> dict[Path, SceneScores]:
    """Every model on the same ``scenes`` mixed and look-alike-only scenes of ``split``.

    The models take turns on each scene, so load from elsewhere falls on their
    ``detect`` times alike.
    """
    scored: dict[Path, list[tuple[float, bool]]] = {p: [] for p in detectors}
    worst: dict[Path, list[float]] = {p: [] for p in detectors}
    spent: dict[Path, list[float]] = {p: [] for p in detectors}

    def timed(path: Path, image: ImageBGR) -> Detections:
        start = time.perf_counter()
        found = detectors[path].detect(image)
        spent[path].append(1000 * (time.perf_counter() - start))
        return found

    positives = 0
    for image, truth, ignore in held_out("mixed", scenes, split, options, real):
        positives += len(truth)
        for path in detectors:
            scored[path] += match(timed(path, image), truth, ignore)
    for image, _, _ in held_out("negative", scenes, split, options, real):
        for path in detectors:
            worst[path].append(max((d.score for d in timed(path, image)), default=0.0))
    return {p: SceneScores(scored[p], positives, worst[p], spent[p]) for p in detectors}


@dataclass(frozen=True, slots=True)
class ShiftStability:
    """How one model's verdict on each 福 changes over the :data:`SHIFTS` of its scene."""

    objects: int
    """福 in the scenes."""
    found: int
    """福 detected at the card's threshold in at least one shift..."""
    toggled: int
    """...of which missed in at least one other: a camera holding still would see it flicker."""
    spread: float
    """Median over the 福 of the highest minus the lowest score across the shifts (0: missed)..."""
    spread_p90: float
    """...and its 90th percentile."""

    @property
    def toggle_rate(self) -> float:
        return self.toggled / self.found if self.found else float("nan")


def shifted(image: ImageBGR, boxes: Boxes, dx: int, dy: int) -> tuple[ImageBGR, Boxes]:
    """``image`` moved by ``(dx, dy)`` pixels (edges mirrored) and ``boxes`` with it."""
    move = np.array([[1, 0, dx], [0, 1, dy]], np.float32)
    size = (image.shape[1], image.shape[0])
    moved = cv2.warpAffine(image, move, size, borderMode=cv2.BORDER_REFLECT)
    return np.asarray(moved, np.uint8), boxes + np.array([dx, dy, dx, dy], np.float32)


def shift_stability(
    detectors: dict[Path, OnnxDetector],
    scenes: int,
    options: SceneOptions = GENERATOR_MIX,
    real: Sequence[RealImage] = (),
) -> dict[Path, ShiftStability]:
    """Each model on every shift of the held-out scenes with 福: its best score on each 福."""
    best: dict[Path, list[npt.NDArray[np.float64]]] = {p: [] for p in detectors}
    for image, truth, _ in held_out("mixed", scenes, "eval", options, real):
        if not len(truth):
            continue
        views = [shifted(image, truth, dx, dy) for dx, dy in SHIFTS]
        for path, detector in detectors.items():
            scores = np.zeros((len(SHIFTS), len(truth)))
            for k, (view, boxes) in enumerate(views):
                found = detector.detect(view)
                for j, box in enumerate(boxes.tolist()):
                    matched = (d.score for d in found if iou(d.box, tuple(box)) >= AP_IOU)
                    scores[k, j] = max(matched, default=0.0)
            best[path].append(scores)
    results = {}
    for path, detector in detectors.items():
        scores = np.concatenate(best[path], axis=1)  # shifts x 福
        hit = scores >= detector.card.threshold
        spreads = scores.max(axis=0) - scores.min(axis=0)
        results[path] = ShiftStability(
            objects=scores.shape[1],
            found=int(hit.any(axis=0).sum()),
            toggled=int((hit.any(axis=0) & ~hit.all(axis=0)).sum()),
            spread=float(np.median(spreads)),
            spread_p90=float(np.percentile(spreads, 90)),
        )
    return results


def format_stability(cards: list[ModelCard], results: dict[Path, ShiftStability]) -> str:
    def row(card: ModelCard) -> str:
        r = results[card.path]
        return (
            f"{r.objects:>6}{r.found:>7}{r.toggle_rate:>9.3f}{r.spread:>8.3f}{r.spread_p90:>7.3f}"
        )

    return model_table(f"{'福':>6}{'found':>7}{'flicker':>9}{'spread':>8}{'p90':>7}", cards, row)


def model_table(columns: str, cards: list[ModelCard], row: Callable[[ModelCard], str]) -> str:
    """A header of ``columns`` after the model's name, then one ``row`` per card."""
    lines = [f"{'model':<16}{columns}"]
    lines += [f"{card.model_path.stem:<16}{row(card)}" for card in cards]
    return "\n".join(lines)


def curve_detectors(cards: list[ModelCard]) -> dict[Path, OnnxDetector]:
    """One single-thread detector per card, keeping detections down to the curve's threshold."""
    return {c.path: OnnxDetector(c, threads=1, threshold=CURVE_THRESHOLD) for c in cards}


def evaluate(
    cards: list[ModelCard],
    scenes: int,
    latency_runs: int,
    options: SceneOptions = GENERATOR_MIX,
    real: Sequence[RealImage] = (),
) -> dict[Path, Result]:
    """Run every model in ``cards`` over the same held-out scenes (or stills of ``real``
    pictures); see the module docstring."""
    detectors = curve_detectors(cards)
    scores = score_scenes(detectors, scenes, "eval", options, real)
    latencies = median_latencies_ms(list(detectors.values()), latency_runs)
    results = {}
    for (path, detector), latency in zip(detectors.items(), latencies, strict=True):
        threshold, got = detector.card.threshold, scores[path]
        at_threshold = [tp for score, tp in got.scored if score >= threshold]
        results[path] = Result(
            ap50=average_precision(got.scored, got.positives),
            precision=sum(at_threshold) / max(1, len(at_threshold)),
            recall=sum(at_threshold) / max(1, got.positives),
            hard_negative_fp_rate=got.fp_rate(threshold),
            latency_ms=latency,
            frame_ms=float(np.median(got.detect_ms)),
            frame_ms_p90=float(np.percentile(got.detect_ms, 90)),
        )
    return results


@dataclass(frozen=True, slots=True)
class ThresholdPick:
    """An operating threshold and what it gives on the training-split scenes it was picked on."""

    threshold: float
    recall: float
    fp_rate: float


def pick_thresholds(
    cards: list[ModelCard], scenes: int, max_fp_rate: float
) -> dict[Path, ThresholdPick]:
    """Per model, the lowest grid threshold at which <= ``max_fp_rate`` of look-alikes fire."""
    picks = {}
    detectors = curve_detectors(cards)
    for path, got in score_scenes(detectors, scenes, "train").items():
        ok = [t for t in THRESHOLD_GRID if got.fp_rate(t) <= max_fp_rate]
        threshold = float(ok[0] if ok else THRESHOLD_GRID[-1])
        hits = sum(tp for score, tp in got.scored if score >= threshold)
        picks[path] = ThresholdPick(
            threshold=threshold,
            recall=hits / max(1, got.positives),
            fp_rate=got.fp_rate(threshold),
        )
    return picks


def format_table(cards: list[ModelCard], results: dict[Path, Result]) -> str:
    def row(card: ModelCard) -> str:
        r = results[card.path]
        return (
            f"{r.ap50:>7.3f}{r.precision:>7.3f}{r.recall:>7.3f}"
            f"{r.hard_negative_fp_rate:>7.3f}{card.macs / 1e6:>7.0f}{card.params:>8}"
            f"{card.model_path.stat().st_size:>9}{r.latency_ms:>8.1f}"
            f"{r.frame_ms:>9.1f}{r.frame_ms_p90:>6.1f}"
        )

    columns = (
        f"{'AP50':>7}{'P@thr':>7}{'R@thr':>7}{'negFP':>7}"
        f"{'MMACs':>7}{'params':>8}{'bytes':>9}{'ms(1t)':>8}{'frame ms':>9}{'p90':>6}"
    )
    return model_table(columns, cards, row)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=MODELS_DIR,
        help="where the cards are (default: the shipped ones)",
    )
    parser.add_argument(
        "--tiers", nargs="+", default=["s", "m", "l"], help="tiers to evaluate (%(default)s)"
    )
    parser.add_argument(
        "--precisions",
        nargs="+",
        default=["fp32", "int8"],
        help="precisions to evaluate (%(default)s)",
    )
    parser.add_argument("--scenes", type=int, default=400, help="held-out scenes of each kind")
    parser.add_argument(
        "--latency-runs",
        type=int,
        default=100,
        help="timed runs of each network alone (default: %(default)s)",
    )
    parser.add_argument("--write-cards", action="store_true", help="store the numbers in the cards")
    parser.add_argument(
        "--pick-thresholds",
        type=float,
        metavar="RATE",
        help="first set each card's threshold to fire on at most RATE of look-alike frames "
        "(training-split scenes)",
    )
    parser.add_argument(
        "--shift-stability",
        action="store_true",
        help=f"also: each 福 in the held-out scenes moved by {len(SHIFTS) - 1} sub-stride "
        "shifts; how often its detection flickers (found in some shifts, missed in others)",
    )
    parser.add_argument(
        "--real-dir",
        type=Path,
        metavar="DIR",
        help="scenes of real pictures instead: stills of DIR/pos (福) and DIR/neg (others) "
        "held up to a camera (see run.py eval-real); measured, never written into cards",
    )
    add_scene_arguments(parser)  # the training options: a 福 cut too far counts neither way


def run(args: argparse.Namespace) -> int:
    options = scene_options(args)
    if options != GENERATOR_MIX and (args.write_cards or args.pick_thresholds is not None):
        raise UsageError(
            "cards hold numbers of the generator's own mix: no scene options with them"
        )
    real: Sequence[RealImage] = ()
    if args.real_dir is not None:
        if args.write_cards or args.pick_thresholds is not None or options != GENERATOR_MIX:
            raise UsageError(
                "--real-dir measures: no --write-cards, --pick-thresholds or scene options"
            )
        from evals.real_scenes import load_set

        try:
            real = load_set(args.real_dir)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    command = shlex.join(["python", "run.py", *args.argv])
    cards = [
        c
        for c in list_cards(args.models_dir)
        if c.tier in args.tiers and c.precision in args.precisions
    ]
    if args.pick_thresholds is not None:
        picks = pick_thresholds(cards, args.scenes, args.pick_thresholds)
        print(f"{'model':<16}{'thr':>6}{'recall':>8}{'negFP':>7}   (training split)")
        for card in cards:
            pick = picks[card.path]
            print(
                f"{card.model_path.stem:<16}{pick.threshold:>6.2f}{pick.recall:>8.3f}{pick.fp_rate:>7.3f}"
            )
            update_card(
                card.path,
                threshold=pick.threshold,
                provenance={
                    "threshold_rule": f"lowest score at which at most {args.pick_thresholds:.2%} "
                    f"of {args.scenes} look-alike-only training-split frames fire: {command}"
                },
            )
        cards = [read_card(card.path) for card in cards]
        # The picks are written, not only printed: say so, since these may be the shipped cards.
        print(f"(thresholds written into {len(cards)} card(s) in {args.models_dir})")
    results = evaluate(cards, args.scenes, args.latency_runs, options, real)
    print(format_table(cards, results))
    if args.shift_stability:
        stability = shift_stability(curve_detectors(cards), args.scenes, options, real)
        print(
            f"\nunder small shifts ({len(SHIFTS)} positions, up to 3 px, of the same scenes): "
            "flicker = found at the threshold in some, missed in others, of those found at all; "
            "spread = highest minus lowest score, median and p90"
        )
        print(format_stability(cards, stability))
    if args.write_cards:
        for card in cards:
            metrics = {k: round(v, 4) for k, v in asdict(results[card.path]).items()}
            metrics |= {"scenes": args.scenes, "frame": f"{FRAME_WIDTH}x{FRAME_HEIGHT}"}
            update_card(card.path, metrics=metrics, provenance={"metrics_command": command})
    return 0
