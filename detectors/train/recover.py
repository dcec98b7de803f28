"""Rebuild the supernet from the shipped FP32 ONNX files, so that training can go on from them.

    python -m detectors.train.recover --out build/recovered.pt

Export folds each tier's batch norm into its convolutions: tier ``t``'s conv
weight is ``W[:out, :in] * g_t`` (``g_t`` per output channel) and its bias
``b_t``. The widest tier's file gives ``W`` (times ``g_l``, which is
divided out by giving every row of ``W`` the layer's median norm); each
narrower file gives its ratio ``g_t / g_l`` per output channel, and how far
its weights are from that ratio times the widest's (zero when the files come
from one supernet, as the shipped ones do). Each tier's batch norm is then set so
that, in eval mode, the tier computes exactly its file, with running
statistics measured on training scenes: training-mode batch norm then starts
where the files are, not at a different network.

The result is a checkpoint for :mod:`detectors.train.train`'s ``--resume``
(the model and the step count of the files' cards). The script checks it by
running every tier against its file on scenes the statistics did not see.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from onnx import numpy_helper
from torch import nn

from detectors.card import MODELS_DIR, read_card_fields
from detectors.shared_weights import read_model
from detectors.train.model import INPUT_SCALE, TIERS, FuNet, SlimConv, input_size, materialize
from detectors.train.targets import generate
from detectors.train.train import at_scale

WIDEST_INPUT = (320, 240)
"""The widest tier's input (width, height), as in the shipped cards."""
CALIBRATION_SEED = 6_000_000
CHECK_SEED = 6_100_000
MAX_RATIO_RESIDUAL = 1e-4
"""Largest weight mismatch, relative to the layer's largest weight, of files from one supernet."""


def _initializers(path: Path) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in read_model(path).graph.initializer}


def _file_weights(layer: str, tensors: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The folded weight and bias of ``layer`` in one exported file."""
    prefix = f"layers.{layer}." if f"layers.{layer}.weight" in tensors else f"layers.{layer}.0."
    return tensors[prefix + "weight"], tensors[prefix + "bias"]


@torch.no_grad()
def set_folded(bn: nn.BatchNorm2d, ratio: np.ndarray, bias: np.ndarray) -> None:
    """Make ``bn`` compute ``ratio * y + bias`` per channel in eval mode, with unit statistics
    (:func:`calibrate_norms` then gives it real ones)."""
    bn.running_mean.zero_()
    bn.running_var.fill_(1 - bn.eps)  # sqrt(var + eps) = 1
    bn.weight.copy_(torch.from_numpy(ratio))
    bn.bias.copy_(torch.from_numpy(bias.copy()))


def from_files(files: dict[str, dict[str, np.ndarray]]) -> tuple[FuNet, float]:
    """A supernet whose tiers compute ``files`` (tier -> ONNX initializers) in eval mode.

    Returns it and the largest relative mismatch between a narrower tier's
    weights and the widest's scaled per channel.
    """
    supernet = FuNet()
    worst = 0.0
    with torch.no_grad():
        for name, layer in supernet.layers.items():
            assert isinstance(layer, SlimConv)
            widest, widest_bias = _file_weights(name, files["l"])
            rows = np.sqrt((widest.reshape(len(widest), -1) ** 2).sum(1))
            # The widest's rows are W * g_l; a channel the widest tier hardly uses (g_l near 0)
            # but a narrower one does would get a near-zero shared row, which training then moves
            # by far more than its size. Rows of one norm keep every channel trainable.
            norm = np.ones_like(rows) if layer.is_output else np.median(rows) / rows
            layer.weight.copy_(torch.from_numpy(widest * norm[:, None, None, None]))
            if layer.is_output:
                layer.bias.copy_(torch.from_numpy(widest_bias))
            for tier in TIERS:
                weight, bias = _file_weights(name, files[tier])
                out, cin = weight.shape[:2]
                shared = widest[:out, :cin]
                flat, flat_shared = weight.reshape(out, -1), shared.reshape(out, -1)
                if layer.is_output:  # no batch norm: the narrower tiers' are plain slices
                    ratio = np.ones(out, np.float32)
                else:
                    ratio = (flat * flat_shared).sum(1) / np.maximum((flat_shared**2).sum(1), 1e-12)
                misfit = np.abs(flat - ratio[:, None] * flat_shared).max()
                worst = max(worst, float(misfit / max(np.abs(flat).max(), 1e-12)))
                if not layer.is_output:
                    set_folded(layer.bn[tier], (ratio / norm[:out]).astype(np.float32), bias)
    return supernet, worst


def _scenes(seed: int, count: int, tier: str) -> torch.Tensor:
    """``count`` training scenes at the widest tier's input, shrunk to ``tier``'s, in [0, 1]."""
    images, _ = generate(range(seed, seed + count), *input_size("l", *WIDEST_INPUT))
    return at_scale(torch.from_numpy(images).float() / 255, INPUT_SCALE[tier])


def _keep_moments(into: list[torch.Tensor], _: nn.Module, inputs: tuple[torch.Tensor]) -> None:
    """Per-channel mean and mean square of a batch norm's input (a forward pre-hook)."""
    y = inputs[0].double()
    into.append(torch.stack([y.mean((0, 2, 3)), (y**2).mean((0, 2, 3))]))


@torch.no_grad()
def calibrate_norms(
    model: nn.Module, norms: dict[str, nn.BatchNorm2d], batches: Iterable[torch.Tensor]
) -> None:
    """Give ``norms`` (each set as ``weight * y + bias`` with unit statistics: the folded
    file's ratio and bias) the statistics of their inputs as ``model`` runs ``batches`` in eval
    mode, keeping what it computes there. Training-mode batch norm then starts where the file
    is: on such batches, batch statistics give what eval mode gives."""
    model.eval()
    sums: dict[str, list[torch.Tensor]] = {name: [] for name in norms}
    handles = [
        bn.register_forward_pre_hook(functools.partial(_keep_moments, sums[name]))
        for name, bn in norms.items()
    ]
    for batch in batches:
        model(batch)
    for handle in handles:
        handle.remove()
    for name, bn in norms.items():
        mean, square = torch.stack(sums[name]).mean(0)
        var = (square - mean**2).clamp(min=0)
        ratio, bias = bn.weight.double().clone(), bn.bias.double().clone()
        bn.running_mean.copy_(mean)
        bn.running_var.copy_(var)
        bn.weight.copy_(ratio * torch.sqrt(var + bn.eps))
        bn.bias.copy_(bias + ratio * mean)


def calibrate(supernet: FuNet, scenes: int) -> None:
    """Give each tier's batch norm the statistics of its inputs on ``scenes`` training scenes,
    keeping what every tier computes in eval mode."""
    for tier in TIERS:
        supernet.set_tier(tier)
        norms = {
            name: layer.bn[tier]
            for name, layer in supernet.layers.items()
            if isinstance(layer, SlimConv) and not layer.is_output
        }
        batches = (
            _scenes(CALIBRATION_SEED + start, min(64, scenes - start), tier)
            for start in range(0, scenes, 64)
        )
        calibrate_norms(supernet, norms, batches)


def check(supernet: FuNet, paths: dict[str, Path], scenes: int) -> dict[str, float]:
    """Largest difference of each tier's heat map from its file's, on ``scenes`` scenes."""
    result = {}
    for tier, path in paths.items():
        model = materialize(supernet, tier)
        x = _scenes(CHECK_SEED, scenes, tier)
        with torch.no_grad():
            heat = model(x)[0].numpy()
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        expected = np.concatenate(
            [session.run(["heatmap"], {name: xi[None]})[0] for xi in x.numpy()]
        )
        result[tier] = float(np.abs(heat - expected).max())
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--models-dir", type=Path, default=MODELS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenes", type=int, default=512, help="scenes for the BN statistics")
    args = parser.parse_args(argv)
    paths = {tier: args.models_dir / f"fu_{tier}.fp32.onnx" for tier in TIERS}
    supernet, misfit = from_files({tier: _initializers(path) for tier, path in paths.items()})
    print(f"narrower tiers' weights vs the widest's, scaled per channel: {misfit:.2e} apart")
    if misfit > MAX_RATIO_RESIDUAL:
        raise SystemExit(f"the files do not come from one supernet ({misfit:.2e} apart)")
    calibrate(supernet, args.scenes)
    differences = check(supernet, paths, 32)
    print("largest heat-map difference from each file:", differences)
    if max(differences.values()) > 1e-3:
        raise SystemExit("the rebuilt supernet does not compute the files")
    card = read_card_fields(paths["l"].with_suffix(".json"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "model": supernet.state_dict(),
            "args": {"recovered_from": str(args.models_dir)},
            "steps": int(card["provenance"]["training"]["steps"]),
        },
        args.out,
    )
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
