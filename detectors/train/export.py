"""Export every tier of a trained supernet as FP32 ONNX, quantize it to INT8, write model cards.

    python -m detectors.train.export --checkpoint build/detector/supernet.pt

INT8 is ONNX Runtime static quantization calibrated on generated training
scenes. The format (QDQ or QOperator), per-channel weights and the activation
type are options so they can be compared; the defaults are what shipped.
Accuracy and latency are added to the cards by ``python -m detectors.evaluate --write-cards``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.shape_inference import quant_pre_process

from detectors.card import MODELS_DIR, read_card, update_card, write_card
from detectors.onnx_detector import letterbox
from detectors.synth.scenes import render_scene
from detectors.train.model import STRIDE, TIERS, FuNet, count_macs_params, materialize

INPUT_NAME = "images"
WIDTH, HEIGHT = 320, 240
THRESHOLD = 0.6
"""Picked on training-split scenes: per-frame recall 0.87 at 2% of look-alike frames firing."""
CALIBRATION_SEED = 5_000_000
KEEP_FP32 = ("/stem/stem.0/Conv",)
"""The first conv (3 input channels) runs slower in INT8 than in FP32 on AVX2 CPUs."""


def base_card(tier: str, precision: str, train_info: dict[str, Any]) -> dict[str, Any]:
    return {
        "tier": tier,
        "precision": precision,
        "classes": ["fu"],
        "input": {
            "name": INPUT_NAME,
            "width": WIDTH,
            "height": HEIGHT,
            "layout": "NCHW",
            "scale": 1 / 255,
            "pad_value": 114,
            "color": "RGB",
            "resize": "letterbox, keep aspect, centred",
        },
        "outputs": {"heatmap": "heatmap", "boxes": "boxes", "stride": STRIDE},
        "threshold": THRESHOLD,
        "training": train_info,
    }


def export_fp32(model: FuNet, path: Path) -> None:
    dummy = torch.zeros(1, 3, HEIGHT, WIDTH)
    torch.onnx.export(
        model,
        (dummy,),
        str(path),
        input_names=[INPUT_NAME],
        output_names=["heatmap", "boxes"],
        opset_version=17,
        do_constant_folding=True,
        dynamo=False,
    )
    onnx.checker.check_model(onnx.load(str(path)))


class SceneReader(CalibrationDataReader):
    """Letterboxed generated training scenes (640x480, like camera frames) for calibration."""

    def __init__(self, card_path: Path, count: int) -> None:
        card = read_card(card_path)
        self._batches = iter(
            {INPUT_NAME: letterbox(render_scene(CALIBRATION_SEED + i, 640, 480)[0], card)[0]}
            for i in range(count)
        )

    def get_next(self) -> dict[str, np.ndarray] | None:  # type: ignore[type-arg]
        return next(self._batches, None)


def quantize(fp32: Path, int8: Path, args: argparse.Namespace) -> None:
    prepared = int8.with_suffix(".prep.onnx")
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
    try:
        quantize_static(
            str(prepared),
            str(int8),
            SceneReader(fp32.with_suffix(".json"), args.calibration),
            quant_format=QuantFormat.QDQ if args.format == "qdq" else QuantFormat.QOperator,
            per_channel=args.per_channel,
            activation_type=QuantType.QUInt8 if args.activations == "u8" else QuantType.QInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=args.exclude,
            extra_options={"ActivationSymmetric": args.activations == "s8"},
        )
    finally:
        prepared.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=MODELS_DIR)
    parser.add_argument("--tiers", nargs="+", default=list(TIERS))
    parser.add_argument("--format", choices=("qdq", "qoperator"), default="qoperator")
    parser.add_argument("--per-channel", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument("--activations", choices=("u8", "s8"), default="u8")
    parser.add_argument(
        "--exclude", nargs="*", default=list(KEEP_FP32), help="ONNX node names kept in FP32"
    )
    parser.add_argument("--calibration", type=int, default=256, help="calibration scenes")
    parser.add_argument("--note", default="", help="how the checkpoint came about, for the cards")
    args = parser.parse_args(argv)
    checkpoint = torch.load(args.checkpoint, map_location="cpu")
    supernet = FuNet()
    supernet.load_state_dict(checkpoint["model"])
    train_args = checkpoint["args"]
    train_info = {
        "data": f"{train_args['images']} generated scenes {train_args['width']}x"
        f"{train_args['height']} (detectors.synth, training fonts and photos)",
        "steps": checkpoint["steps"],
        "batch": train_args["batch"],
        "supernet": "slimmable widths s=0.5 m=0.75 l=1.0, switchable BN, sandwich rule, "
        "in-place distillation from l",
        "note": args.note,
        "command": "python -m detectors.train.train "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in train_args.items() if k != "out"),
    }
    quant_info = {
        "format": args.format,
        "per_channel": args.per_channel,
        "activations": args.activations,
        "weights": "s8",
        "calibration": f"{args.calibration} generated 640x480 training scenes, MinMax",
        "excluded_nodes": args.exclude,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for tier in args.tiers:
        model = materialize(supernet, tier)
        macs, params = count_macs_params(model, HEIGHT, WIDTH)
        paths = {p: args.out / f"fu_{tier}.{p}.onnx" for p in ("fp32", "int8")}
        export_fp32(model, paths["fp32"])
        for precision, path in paths.items():
            card = base_card(tier, precision, train_info) | {"macs": macs, "params": params}
            if precision == "int8":
                card |= {"fp32_model": paths["fp32"].name, "quantization": quant_info}
            write_card(path.with_suffix(".json"), card)
        quantize(paths["fp32"], paths["int8"], args)
        for path in paths.values():
            update_card(path.with_suffix(".json"), file_size=path.stat().st_size)
            print(
                f"{path.name}: {path.stat().st_size} bytes, {macs / 1e6:.0f}M MACs, {params} params"
            )


if __name__ == "__main__":
    main()
