"""Bench section ``ocr``: the alternative, RapidOCR, on the same generated clips.

Recall, precision and time per frame, ours vs theirs (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from detectors.card import find_card
from detectors.core import ImageBGR
from detectors.onnx_detector import OnnxDetector
from evals.bench.machine import FPS
from evals.tables import percentile, table


@dataclass(frozen=True, slots=True)
class LabelledFrame:
    content: str
    image: ImageBGR
    has_fu: bool


def labelled_frames(
    clips: int, per_clip: int, width: int = 640, height: int = 480
) -> list[LabelledFrame]:
    """``per_clip`` frames from each of ``clips`` clips per content: fu, negative, empty."""
    from detectors.synth.scenes import make_clip

    out = []
    for content in ("fu", "negative", "empty"):
        for c in range(clips):
            seed = 500 + c + {"fu": 0, "negative": 1000, "empty": 2000}[content]
            clip = make_clip(seed, max(per_clip, 2) * 5, FPS, width, height, content=content)
            for i in np.linspace(0, len(clip.frames) - 1, per_clip).astype(int):
                out.append(LabelledFrame(content, clip.frames[i], len(clip.boxes[i]) > 0))
    return out


@dataclass(frozen=True, slots=True)
class Score:
    name: str
    frames: int
    tp: int
    fp: int
    fn: int
    ms: float  # median per frame
    p90_ms: float

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")


def score(name: str, truth: Sequence[bool], said: Sequence[bool], ms: Sequence[float]) -> Score:
    pairs = list(zip(truth, said, strict=True))
    return Score(
        name, len(pairs),
        sum(t and s for t, s in pairs), sum(s and not t for t, s in pairs),
        sum(t and not s for t, s in pairs),
        statistics.median(ms), percentile(ms, 90),
    )  # fmt: skip


@contextlib.contextmanager
def no_network() -> Iterator[list[str]]:
    """Refuse (and record) every socket connection or name lookup made inside the block."""
    attempts: list[str] = []
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        attempts.append(f"connect {address!r}")
        raise OSError("network disabled by the benchmark")

    def lookup(*args: Any, **kwargs: Any) -> Any:
        attempts.append(f"getaddrinfo {args[:2]!r}")
        raise OSError("network disabled by the benchmark")

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = lookup
    try:
        yield attempts
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.getaddrinfo = real_lookup


def rapidocr_engine(threads: int, **config: Any) -> Callable[[ImageBGR], str] | None:
    """RapidOCR's whole pipeline (det, cls, rec) as ``image -> text``; ``None`` if not installed."""
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError:
        return None
    engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1, **config)

    def read(image: ImageBGR) -> str:
        found, _ = engine(image)
        return "".join(str(line[1]) for line in found or [])

    return read


def rapidocr_models() -> dict[str, int]:
    """The model files inside the installed wheel, with their sizes (no download at run time)."""
    try:
        import rapidocr_onnxruntime  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return {}
    folder = Path(rapidocr_onnxruntime.__file__).parent / "models"
    return {p.name: p.stat().st_size for p in sorted(folder.glob("*.onnx"))}


def fires(detector: OnnxDetector) -> Callable[[ImageBGR], bool]:
    return lambda image: any(d.label == "fu" for d in detector.detect(image))


def reads_fu(engine: Callable[[ImageBGR], str]) -> Callable[[ImageBGR], bool]:
    return lambda image: "福" in engine(image)


def ocr_scores(
    frames: Sequence[LabelledFrame], tiers: Sequence[str], threads: int, ocr_configs: dict[str, Any]
) -> tuple[list[Score], list[str]]:
    """Ours (each tier, INT8) vs RapidOCR configs, frame by frame, alternating on each frame."""
    readers: dict[str, Callable[[ImageBGR], bool]] = {}
    for tier in tiers:
        readers[f"ours int8 {tier}"] = fires(OnnxDetector(find_card(tier, "int8"), threads))
    with no_network() as attempts:
        for name, config in ocr_configs.items():
            engine = rapidocr_engine(threads, **config)
            if engine is not None:
                readers[name] = reads_fu(engine)
        said: dict[str, list[bool]] = {name: [] for name in readers}
        ms: dict[str, list[float]] = {name: [] for name in readers}
        for fn in readers.values():  # warm-up
            fn(frames[0].image)
        for frame in frames:
            for name, fn in readers.items():
                started = time.perf_counter()
                said[name].append(fn(frame.image))
                ms[name].append((time.perf_counter() - started) * 1000)
    truth = [f.has_fu for f in frames]
    return [score(name, truth, said[name], ms[name]) for name in readers], attempts


def format_ocr(scores: Sequence[Score]) -> str:
    ours = next((s for s in scores if s.name.startswith("ours")), None)
    body = [[s.name, str(s.frames), str(s.tp), str(s.fp), str(s.fn), f"{s.recall:.3f}",
             f"{s.precision:.3f}", f"{s.ms:.1f}", f"{s.p90_ms:.1f}",
             f"{s.ms / ours.ms:.1f}" if ours else "-"] for s in scores]  # fmt: skip
    return table(["method", "frames", "TP", "FP", "FN", "recall", "precision", "ms p50", "ms p90",
                  "x ours (first row)"], body)  # fmt: skip


OCR_CONFIGS: dict[str, dict[str, Any]] = {
    "RapidOCR 1.4.4 default": {},
    "RapidOCR, det at 480 px": {"det_limit_side_len": 480},
}
