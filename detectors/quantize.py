"""Turn an FP32 ONNX image model into a calibrated static INT8 model, with a before/after report.

    python run.py quantize MODEL.onnx --calib DIR [--out MODEL.int8.onnx]

Calibration feeds the photos in ``DIR`` through the model's own preprocessing:
a model with a card beside it (``MODEL.json``, as our detectors have) is fed
exactly as at run time; any other single-input NCHW image model is fed the
photo resized to its input (``--resize``, ``--scale``, ``--mean``, ``--std``,
``--color``). The report runs both models on the same photos: per output,
the cosine similarity and the largest absolute difference; for a carded
detector, how many detections the INT8 model keeps; file sizes; and the
median single-thread latency of both, measured side by side.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.shape_inference import quant_pre_process

from detectors.card import (
    ModelCardError,
    copy_glyph_check,
    read_card,
    read_card_fields,
    with_fields,
    write_card,
)
from detectors.core import ImageBGR
from detectors.metrics import match, median_ms
from detectors.onnx_detector import OnnxDetector, fit_into, letterbox
from detectors.shared_weights import read_model

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
Tensor = npt.NDArray[np.float32]
Preprocess = Callable[[ImageBGR], Tensor]


class QuantizeError(ValueError):
    """The model or the calibration photos cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class QuantSettings:
    """ONNX Runtime static quantization options (the defaults are what our detectors ship with)."""

    format: str = "qoperator"
    per_channel: bool = False
    activations: str = "u8"
    exclude: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "per_channel": self.per_channel,
            "activations": self.activations,
            "weights": "s8",
            "excluded_nodes": list(self.exclude),
        }


class TensorReader(CalibrationDataReader):  # type: ignore[misc]  # untyped base
    """Feeds prepared input tensors to the calibrator, one batch of one at a time."""

    def __init__(self, input_name: str, tensors: Iterator[Tensor]) -> None:
        self._batches = ({input_name: t} for t in tensors)

    def get_next(self) -> dict[str, Tensor] | None:
        return next(self._batches, None)


def quantize_model(
    fp32: Path, int8: Path, reader: CalibrationDataReader, settings: QuantSettings
) -> None:
    """Static INT8 quantization of ``fp32`` into ``int8`` (MinMax calibration on ``reader``)."""
    prepared = int8.with_suffix(".prep.onnx")
    # A file that borrows weights is quantized as the plain graph export made, as it was shipped.
    quant_pre_process(read_model(fp32), str(prepared), skip_symbolic_shape=True)
    try:
        quantize_static(
            str(prepared),
            str(int8),
            reader,
            quant_format=QuantFormat.QDQ if settings.format == "qdq" else QuantFormat.QOperator,
            per_channel=settings.per_channel,
            activation_type=QuantType.QUInt8 if settings.activations == "u8" else QuantType.QInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=list(settings.exclude),
            extra_options={"ActivationSymmetric": settings.activations == "s8"},
        )
    finally:
        prepared.unlink(missing_ok=True)


def read_photos(folder: Path, limit: int) -> list[ImageBGR]:
    """Up to ``limit`` decodable photos of ``folder``, by name; unreadable ones are logged."""
    if not folder.is_dir():
        raise QuantizeError(f"calibration folder {folder} does not exist")
    photos = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            log.warning("skipping %s: not a readable image", path)
            continue
        photos.append(np.asarray(image, np.uint8))
        if len(photos) == limit:
            break
    if not photos:
        raise QuantizeError(f"no readable image ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    return photos


@dataclass(frozen=True, slots=True)
class InputFormat:
    """How a photo becomes the input of a model that has no card."""

    width: int
    height: int
    resize: str = "stretch"
    scale: float = 1 / 255
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    color: str = "RGB"

    def __call__(self, image: ImageBGR) -> Tensor:
        if self.resize == "letterbox":
            canvas = np.empty((self.height, self.width, 3), np.uint8)
            fit_into(image, canvas, pad_value=114)
        else:
            canvas = np.asarray(cv2.resize(image, (self.width, self.height)), np.uint8)
        pixels = canvas[:, :, ::-1] if self.color == "RGB" else canvas
        mean, std = np.asarray(self.mean, np.float32), np.asarray(self.std, np.float32)
        x = (pixels.astype(np.float32) * np.float32(self.scale) - mean) / std
        return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def model_input(path: Path) -> tuple[str, list[int | str]]:
    """Name and shape of the model's single float input."""
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # ONNX Runtime raises its own exception types for bad files
        raise QuantizeError(f"{path} is not a loadable ONNX model: {exc}") from exc
    inputs = session.get_inputs()
    if len(inputs) != 1 or inputs[0].type != "tensor(float)" or len(inputs[0].shape) != 4:
        found = [(i.name, i.type, i.shape) for i in inputs]
        raise QuantizeError(f"expected one float NCHW image input, found {found}")
    return inputs[0].name, list(inputs[0].shape)


@dataclass(slots=True)
class Report:
    """Before/after numbers of one quantization."""

    fp32_bytes: int
    int8_bytes: int
    fp32_ms: float
    int8_ms: float
    photos: int
    outputs: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per output: (mean cosine similarity, largest absolute difference)."""
    detections_kept: tuple[int, int] | None = None
    """For a carded detector: (FP32 detections the INT8 model also finds at IoU 0.5, all FP32)."""

    def format(self) -> str:
        lines = [
            f"{'':<24}{'FP32':>12}{'INT8':>12}{'ratio':>8}",
            f"{'file bytes':<24}{self.fp32_bytes:>12}{self.int8_bytes:>12}"
            f"{self.int8_bytes / self.fp32_bytes:>8.2f}",
            f"{'median ms (1 thread)':<24}{self.fp32_ms:>12.2f}{self.int8_ms:>12.2f}"
            f"{self.fp32_ms / self.int8_ms:>7.2f}x",
            "",
            f"outputs on {self.photos} photos: cosine similarity (mean), max |FP32 - INT8|",
        ]
        lines += [
            f"  {name:<22}{cos:>10.4f}{diff:>12.4g}" for name, (cos, diff) in self.outputs.items()
        ]
        if self.detections_kept is not None:
            kept, total = self.detections_kept
            lines.append(f"detections kept by INT8 (IoU >= 0.5): {kept}/{total}")
        return "\n".join(lines)


def cosine(a: Tensor, b: Tensor) -> float:
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norms = float(np.linalg.norm(a64) * np.linalg.norm(b64))
    return float(a64 @ b64) / norms if norms > 0 else float(np.array_equal(a64, b64))


def compare(
    fp32: Path, int8: Path, tensors: Sequence[Tensor], input_name: str, latency_runs: int
) -> Report:
    """Run both models on the same inputs: output agreement, sizes and side-by-side latency."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sessions = [
        ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
        for p in (fp32, int8)
    ]
    names = [o.name for o in sessions[0].get_outputs()]
    sums = dict.fromkeys(names, 0.0)
    worst = dict.fromkeys(names, 0.0)
    for tensor in tensors:
        before, after = (s.run(names, {input_name: tensor}) for s in sessions)
        for name, b, a in zip(names, before, after, strict=True):
            sums[name] += cosine(b, a)
            worst[name] = max(worst[name], float(np.abs(b - a).max()))
    fp32_ms, int8_ms = median_ms(
        [partial(s.run, names, {input_name: tensors[0]}) for s in sessions], latency_runs
    )
    return Report(
        fp32_bytes=fp32.stat().st_size,
        int8_bytes=int8.stat().st_size,
        fp32_ms=fp32_ms,
        int8_ms=int8_ms,
        photos=len(tensors),
        outputs={n: (sums[n] / len(tensors), worst[n]) for n in names},
    )


def detections_kept(
    fp32_card: Path, int8_card: Path, photos: Sequence[ImageBGR]
) -> tuple[int, int]:
    """How many of the FP32 detector's detections the INT8 one also finds: ``eval-model``'s
    one-to-one matching at IoU >= 0.5, with the FP32 boxes as the truth (labels not compared)."""
    before, after = (OnnxDetector(read_card(p)) for p in (fp32_card, int8_card))
    kept = total = 0
    for photo in photos:
        truth = np.array([d.box for d in before.detect(photo)], np.float32).reshape(-1, 4)
        total += len(truth)
        kept += sum(tp for _, tp in match(after.detect(photo), truth))
    return kept, total


def default_output(fp32: Path) -> Path:
    """``fu_l.fp32.onnx`` -> ``fu_l.int8.onnx``; ``model.onnx`` -> ``model.int8.onnx``."""
    stem = fp32.name.removesuffix(".onnx").removesuffix(".fp32")
    return fp32.with_name(f"{stem}.int8.onnx")


def card_preprocess(card_path: Path) -> Preprocess:
    card = read_card(card_path)
    return lambda image: letterbox(image, card.input)[0]


def quantize_main(args: argparse.Namespace) -> Report:
    """Quantize ``args.model`` on the photos in ``args.calib``; write the INT8 model (and card).

    Raises:
        QuantizeError: a missing or unusable model, output path, or calibration folder.
    """
    fp32: Path = args.model
    if not fp32.is_file():
        raise QuantizeError(f"model {fp32} does not exist")
    int8: Path = args.out or default_output(fp32)
    if int8.resolve() == fp32.resolve():
        raise QuantizeError("the INT8 output must not overwrite the FP32 model")
    input_name, shape = model_input(fp32)
    photos = read_photos(args.calib, args.limit)
    card_path = fp32.with_suffix(".json")
    preprocess: Preprocess
    if card_path.exists():
        preprocess = card_preprocess(card_path)
    else:
        width, height = args.size or (shape[3], shape[2])
        if not (isinstance(width, int) and isinstance(height, int)):
            raise QuantizeError(f"input shape {shape} has no fixed size: pass --size W H")
        preprocess = InputFormat(
            width, height, args.resize, args.scale, tuple(args.mean), tuple(args.std), args.color
        )
    tensors = [preprocess(photo) for photo in photos]
    settings = QuantSettings(args.format, args.per_channel, args.activations, tuple(args.exclude))
    quantize_model(fp32, int8, TensorReader(input_name, iter(tensors)), settings)
    report = compare(fp32, int8, tensors, input_name, args.latency_runs)
    if card_path.exists():
        int8_card = int8.with_suffix(".json")
        calibration = f"{len(photos)} photos of {args.calib}, MinMax"
        fields = read_card_fields(card_path)
        fields.pop("metrics", None)
        fields.get("provenance", {}).pop("metrics_command", None)
        copy_glyph_check(fields, card_path.parent, int8_card.parent)
        quantization = settings.describe() | {"calibration": calibration}
        changes = {"precision": "int8", "fp32_model": fp32.name, "file_size": int8.stat().st_size}
        write_card(
            int8_card, with_fields(fields, changes | {"provenance": {"quantization": quantization}})
        )
        report.detections_kept = detections_kept(card_path, int8_card, photos)
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="FP32 ONNX model (a card beside it is used)")
    parser.add_argument("--calib", type=Path, required=True, help="folder of calibration photos")
    parser.add_argument("--out", type=Path, help="INT8 model (default: MODEL.int8.onnx)")
    parser.add_argument("--limit", type=int, default=256, help="calibration photos at most")
    parser.add_argument(
        "--format",
        choices=("qoperator", "qdq"),
        default="qoperator",
        help="ONNX Runtime's quantized model format (default: %(default)s)",
    )
    parser.add_argument(
        "--per-channel",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="one scale per output channel of each weight (default: one per tensor)",
    )
    parser.add_argument(
        "--activations",
        choices=("u8", "s8"),
        default="u8",
        help="activations as unsigned or signed 8-bit (default: %(default)s)",
    )
    parser.add_argument("--exclude", nargs="*", default=[], help="ONNX node names kept in FP32")
    parser.add_argument(
        "--latency-runs", type=int, default=50, help="timed runs, FP32 vs INT8 (%(default)s)"
    )
    no_card = parser.add_argument_group("preprocessing of a model without a card")
    no_card.add_argument(
        "--size", type=int, nargs=2, metavar=("W", "H"), help="the network's input size"
    )
    no_card.add_argument(
        "--resize",
        choices=("stretch", "letterbox"),
        default="stretch",
        help="how a photo fits the input (default: %(default)s)",
    )
    no_card.add_argument("--scale", type=float, default=1 / 255, help="pixel values times this")
    no_card.add_argument(
        "--mean",
        type=float,
        nargs=3,
        default=[0.0, 0.0, 0.0],
        help="per channel, subtracted after --scale (default: %(default)s)",
    )
    no_card.add_argument(
        "--std",
        type=float,
        nargs=3,
        default=[1.0, 1.0, 1.0],
        help="per channel, divided by after --mean (default: %(default)s)",
    )
    no_card.add_argument(
        "--color",
        choices=("RGB", "BGR"),
        default="RGB",
        help="channel order of the input (default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s", force=True)
    try:
        report = quantize_main(args)
    except (QuantizeError, ModelCardError) as exc:
        print(f"run.py quantize: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out or default_output(args.model)}")
    print(report.format())
    return 0
