"""Export every tier of a trained supernet as FP32 ONNX, quantize it to INT8, write model cards.

    python -m detectors.train.export --checkpoint build/detector/supernet.pt

INT8 is ONNX Runtime static quantization calibrated on generated training
scenes. A tier as wide as the widest (its own batch norm, a smaller input)
keeps its FP32 convolution weights in the widest's file
(:mod:`detectors.shared_weights`); its card says ``weights_from``.
The format (QDQ or QOperator), per-channel weights and the activation
type are options so they can be compared; the defaults are what shipped.
Accuracy and latency are added to the cards by ``python run.py eval-model --write-cards``.
With ``--tuned-from detectors/models`` the new cards start from the shipped cards' threshold,
second look, vote and glyph check fields (``detectors.card.TUNED_FIELDS``) instead of the bare
defaults; the glyph check's files are copied beside them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import onnx
import torch

from detectors.card import (
    MODELS_DIR,
    copy_glyph_check,
    tuned_fields,
    update_card,
    with_fields,
    write_card,
)
from detectors.quantize import QuantSettings, TensorReader, card_preprocess, quantize_model
from detectors.shared_weights import share_weights
from detectors.synth.scenes import render_scene
from detectors.train.model import (
    INPUT_SCALE,
    STRIDE,
    TIERS,
    WIDTH,
    FuNet,
    count_macs_params,
    input_size,
    materialize,
)
from detectors.train.train import command_line, width_scale_of

INPUT_NAME = "images"
THRESHOLD = 0.6
"""Picked on training-split scenes: per-frame recall 0.87 at 2% of look-alike frames firing."""
CALIBRATION_SEED = 5_000_000
KEEP_FP32 = ("/stem/stem.0/Conv",)
"""The first conv (3 input channels) runs slower in INT8 than in FP32, on AVX2 and on AVX-512
VNNI alike (ORT 1.32, s at 160x120: QLinearConv 72 us vs Conv 25 us, the model 0.174 vs 0.124 ms):
QLinearConv costs per output pixel there, not per MAC. Per-channel, QDQ or s8 gain nothing."""


def base_card(
    tier: str, precision: str, size: tuple[int, int], train_info: dict[str, Any]
) -> dict[str, Any]:
    return {
        "tier": tier,
        "precision": precision,
        "classes": ["fu"],
        "input": {
            "name": INPUT_NAME,
            "width": size[0],
            "height": size[1],
            "layout": "NCHW",
            "scale": 1 / 255,
            "pad_value": 114,
            "color": "RGB",
            "resize": "letterbox",
        },
        "outputs": {"heatmap": "heatmap", "boxes": "boxes", "stride": STRIDE},
        "threshold": THRESHOLD,
        "provenance": {"training": train_info},
    }


def export_fp32(model: FuNet, size: tuple[int, int], path: Path) -> None:
    dummy = torch.zeros(1, 3, size[1], size[0])
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


def calibration_scenes(card_path: Path, count: int) -> TensorReader:
    """Letterboxed generated training scenes (640x480, like camera frames) for calibration."""
    preprocess = card_preprocess(card_path)
    return TensorReader(
        INPUT_NAME,
        (preprocess(render_scene(CALIBRATION_SEED + i, 640, 480).image) for i in range(count)),
    )


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
    parser.add_argument(
        "--tuned-from",
        type=Path,
        help="a directory of cards (e.g. detectors/models) whose threshold, threshold rule, "
        "second look and vote fields the new cards of the same tier and precision start from",
    )
    args = parser.parse_args(argv)
    checkpoint = torch.load(args.checkpoint, map_location="cpu")
    train_args = checkpoint["args"]
    width_scale = width_scale_of(checkpoint)
    supernet = FuNet(width_scale=width_scale)
    supernet.load_state_dict(checkpoint["model"])
    train_info = {
        "data": f"{train_args['images']} generated scenes {train_args['width']}x"
        f"{train_args['height']} (detectors.synth, training fonts and photos)",
        "steps": checkpoint["steps"],
        "batch": train_args["batch"],
        "supernet": "slimmable widths "
        + " ".join(f"{t}={WIDTH[t]}" for t in TIERS)
        + ", input sides "
        + " ".join(f"{t}={INPUT_SCALE[t]}" for t in TIERS)
        + ", switchable BN, sandwich rule, in-place distillation from l to the tiers at its size"
        + ("" if width_scale == 1 else f", every layer's channels x{width_scale} (a teacher)"),
        "note": args.note,
        "command": command_line(train_args),
    }
    settings = QuantSettings(args.format, args.per_channel, args.activations, tuple(args.exclude))
    quant_info = settings.describe() | {
        "calibration": f"{args.calibration} generated 640x480 training scenes, MinMax"
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for tier in args.tiers:
        model = materialize(supernet, tier)
        size = input_size(tier, train_args["width"], train_args["height"])
        macs, params = count_macs_params(model, size[1], size[0])
        paths = {p: args.out / f"fu_{tier}.{p}.onnx" for p in ("fp32", "int8")}
        export_fp32(model, size, paths["fp32"])
        for precision, path in paths.items():
            card = base_card(tier, precision, size, train_info) | {"macs": macs, "params": params}
            if args.tuned_from is not None:
                card = with_fields(
                    card, tuned_fields(args.tuned_from / f"fu_{tier}.{precision}.json")
                )
                copy_glyph_check(card, args.tuned_from, args.out)
            if precision == "int8":
                quantized = {"fp32_model": paths["fp32"].name}
                card = with_fields(card, quantized | {"provenance": {"quantization": quant_info}})
            write_card(path.with_suffix(".json"), card)
        scenes = calibration_scenes(paths["fp32"].with_suffix(".json"), args.calibration)
        quantize_model(paths["fp32"], paths["int8"], scenes, settings)
        for path in paths.values():
            update_card(path.with_suffix(".json"), file_size=path.stat().st_size)
            print(
                f"{path.name}: {path.stat().st_size} bytes, {macs / 1e6:.0f}M MACs, {params} params"
            )
    # Quantized above from the plain files: a tier as wide as the widest stores only what differs.
    widest = TIERS[-1]
    donor = args.out / f"fu_{widest}.fp32.onnx"
    as_wide = [t for t in args.tiers if t != widest and WIDTH[t] == WIDTH[widest]]
    for tier in as_wide if donor.exists() else []:
        fp32 = args.out / f"fu_{tier}.fp32.onnx"
        if borrowed := share_weights(fp32, donor):
            size = fp32.stat().st_size
            update_card(fp32.with_suffix(".json"), file_size=size, weights_from=donor.name)
            print(f"{fp32.name}: {size} bytes, {borrowed} convolutions' weights from {donor.name}")


if __name__ == "__main__":
    main()
