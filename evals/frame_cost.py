"""The whole frame's cost against the first look's network time, and what the vote decides.

A session's executor spends, per decoded frame: the first look (letterbox, the
network, its peaks), the second look's close-ups, the glyph check's rescue, the
checks the voter asks for, and the vote. This runs generated clips through
exactly that, as a session does (:class:`stream.focus.Focus` telling the
detector what the vote settled), and beside it the same clips through the
detector told nothing (every candidate gets its close-ups, as before the
focus), so that both are timed on the same frames under the same load.

Each frame reaches the detector as a session's executor gets it: sent as a JPEG
and decoded at half size where the session does so (a frame at least twice the
network input's longer side, :func:`stream.session.decode_for`), so a 1280x720
frame is looked at as 640x360.

It reports, per frame size and content (福 in view or not), the whole frame's
milliseconds at p50 and p90 over the first look's network alone on the same
frames, the network runs a frame took (noise-free), and what the vote made of
the clips: how many 福 clips got a recognition on a 福, and how many
recognitions were not on a 福.

    python run.py eval-frame-cost --clips 12 --seconds 4
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from clients.ws_client import encode_jpeg
from detectors.card import MODELS_DIR, find_card
from detectors.core import Box, ImageBGR, iou
from detectors.onnx_detector import OnnxDetector
from stream.focus import Focus
from stream.images import image_decoder
from stream.session import decode_for
from voting import make_voter

SIZES = ((640, 480), (1280, 720))
CONTENTS = ("fu", "empty", "negative")
"""Clips with 福 in view, without anything like it, and with look-alikes only."""
FPS = 15.0
HIT_IOU = 0.3
"""A recognition is on a 福 if its box overlaps one of the frame's 福 boxes this much."""


@dataclass(slots=True)
class ClipCost:
    """Per-frame costs and the recognitions of one clip through one path."""

    frame_ms: list[float] = field(default_factory=list)
    network_ms: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)
    hits: int = 0
    """Recognitions on a 福."""
    false: int = 0
    """Recognitions on no 福."""


def run_clip(
    detector: OnnxDetector,
    frames: Sequence[ImageBGR],
    truth: Sequence[Sequence[Box]],
    focused: bool,
    preset: str = "balanced",
) -> ClipCost:
    """``frames`` (at :data:`FPS`) through the detector and a fresh voter, as a session runs
    them; ``focused``: the detector is told what the vote settled (:class:`Focus`)."""
    model = detector.model
    voter = make_voter(preset, model.threshold, model.classes, model.vote)
    focus = Focus()
    cost = ClipCost()
    for i, frame in enumerate(frames):
        t = i / FPS
        started = time.perf_counter()
        found = detector.detect_in(frame, focus.context(t)) if focused else detector.detect(frame)
        confirm = detector.confirmer(frame)
        update = voter.update(found, t, confirm)
        focus.update(update, found)
        cost.frame_ms.append((time.perf_counter() - started) * 1000)
        cost.network_ms.append(network_ms(detector, frame))
        cost.runs.append(found.runs + (0.0 if confirm is None else confirm.runs))
        for event in update.events:
            if event.event == "recognized" and event.box is not None:
                on_fu = any(iou(event.box, box) >= HIT_IOU for box in truth[i])
                cost.hits += on_fu
                cost.false += not on_fu
    return cost


def network_ms(detector: OnnxDetector, frame: ImageBGR) -> float:
    """The first look's network alone on ``frame``, letterboxed beforehand."""
    tensor, _ = detector.network.prepare(frame)
    started = time.perf_counter()
    detector.network.run(tensor)
    return (time.perf_counter() - started) * 1000


@dataclass(frozen=True, slots=True)
class CostRow:
    size: str
    content: str
    path: str
    """``focused`` (what a session runs) or ``unfocused`` (every candidate looked at)."""
    frames: int
    frame_ms: float
    frame_ms_p90: float
    network_ms: float
    runs: float
    """Network runs per frame, mean (first look 1, each close-up 1, glyph checks less)."""
    runs_p90: float
    clips_hit: int
    clips: int
    false_recognitions: int

    @property
    def ratio(self) -> float:
        """Whole frame p50 over the first look's network p50."""
        return self.frame_ms / self.network_ms

    @property
    def ratio_p90(self) -> float:
        """Whole frame p90 over the first look's network p50."""
        return self.frame_ms_p90 / self.network_ms


def cost_rows(
    detector: OnnxDetector,
    sizes: Sequence[tuple[int, int]] = SIZES,
    contents: Sequence[str] = CONTENTS,
    clips: int = 6,
    seconds: float = 4.0,
    first_seed: int = 50_000,
) -> list[CostRow]:
    """Every size and content, ``clips`` generated clips each, through both paths frame by
    frame alternately (so both see the same load)."""
    from detectors.synth.scenes import Content, make_clip

    rows = []
    for width, height in sizes:
        for content in contents:
            paths = {"focused": True, "unfocused": False}
            done: dict[str, list[ClipCost]] = {path: [] for path in paths}
            for k in range(clips):
                kind = cast("Content", content)
                clip = make_clip(first_seed + k, round(seconds * FPS), FPS, width, height, kind)
                frames = as_decoded(clip.frames, detector.model.input_side)
                scale = frames[0].shape[1] / width
                truth = [[tuple(b) for b in (boxes * scale).tolist()] for boxes in clip.boxes]
                for path, focused in paths.items():
                    done[path].append(run_clip(detector, frames, truth, focused))
            for path, costs in done.items():
                rows.append(_row(f"{width}x{height}", content, path, costs))
    return rows


def as_decoded(frames: Sequence[ImageBGR], side: int) -> list[ImageBGR]:
    """``frames`` as a session's executor gets them from a client sending JPEG, for a
    detector whose input's longer side is ``side`` (:func:`stream.session.decode_for`)."""
    return [decode_for(image_decoder(encode_jpeg(frame)), side)[0] for frame in frames]


def _row(size: str, content: str, path: str, costs: list[ClipCost]) -> CostRow:
    frame = [ms for c in costs for ms in c.frame_ms]
    runs = [r for c in costs for r in c.runs]
    return CostRow(
        size,
        content,
        path,
        len(frame),
        statistics.median(frame),
        float(np.percentile(frame, 90)),
        statistics.median(ms for c in costs for ms in c.network_ms),
        statistics.fmean(runs),
        float(np.percentile(runs, 90)),
        sum(c.hits > 0 for c in costs),
        len(costs),
        sum(c.false for c in costs),
    )


def format_rows(rows: Sequence[CostRow]) -> str:
    head = (
        "frame     content   path       frames  ms p50  ms p90  net ms  x net p50  x net p90"
        "  runs mean  runs p90  clips hit  false"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r.size:<9} {r.content:<9} {r.path:<10} {r.frames:>6} {r.frame_ms:>7.2f} "
            f"{r.frame_ms_p90:>7.2f} {r.network_ms:>7.2f} {r.ratio:>10.2f} {r.ratio_p90:>10.2f}"
            f" {r.runs:>10.2f} {r.runs_p90:>9.2f} {r.clips_hit:>5}/{r.clips:<4}"
            f" {r.false_recognitions:>6}"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", default="l", help="model tier, INT8 (default l)")
    parser.add_argument("--clips", type=int, default=6, help="generated clips per size/content")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per clip, at 15 fps")
    parser.add_argument("--seed", type=int, default=50_000, help="first clip's seed")
    parser.add_argument(
        "--sizes", default="640x480,1280x720", help="frame sizes, comma-separated WxH"
    )
    parser.add_argument(
        "--contents", default=",".join(CONTENTS), help="clip contents: fu, empty, negative"
    )
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=MODELS_DIR,
        help="the cards and models to run (default: the shipped ones)",
    )


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    sizes = [_size(s) for s in args.sizes.split(",") if s]
    contents = [c for c in args.contents.split(",") if c]
    detector = OnnxDetector(find_card(args.tier, "int8", args.models_dir), threads=1)
    rows = cost_rows(detector, sizes, contents, args.clips, args.seconds, args.seed)
    out(format_rows(rows))
    return 0


def _size(text: str) -> tuple[int, int]:
    width, height = text.lower().split("x")
    return int(width), int(height)
