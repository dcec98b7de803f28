"""Rebuilding the supernet from exported files (training-only code: skipped without torch)."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from detectors.train.export import export_fp32  # noqa: E402
from detectors.train.model import TIERS, FuNet, SlimConv, input_size, materialize  # noqa: E402
from detectors.train.recover import (  # noqa: E402
    CALIBRATION_SEED,
    _initializers,
    _scenes,
    calibrate,
    check,
    from_files,
)


def _trained_looking_supernet() -> FuNet:
    """Random weights and batch-norm statistics, and one channel the widest tier hardly uses."""
    torch.manual_seed(0)
    supernet = FuNet()
    with torch.no_grad():
        for layer in supernet.layers.values():
            assert isinstance(layer, SlimConv)
            if layer.is_output:
                continue
            for bn in layer.bn.values():
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.3, 0.3)
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
        supernet.layers["down32"].bn["l"].weight[3] = 1e-5
    return supernet


def test_the_rebuilt_supernet_computes_every_exported_file(tmp_path: Path) -> None:
    original = _trained_looking_supernet()
    paths = {tier: tmp_path / f"fu_{tier}.fp32.onnx" for tier in TIERS}
    for tier, path in paths.items():
        export_fp32(materialize(original, tier), input_size(tier, 320, 240), path)
    rebuilt, misfit = from_files({tier: _initializers(path) for tier, path in paths.items()})
    assert misfit < 1e-5
    calibrate(rebuilt, 16)
    assert max(check(rebuilt, paths, 4).values()) < 1e-4
    rows = rebuilt.layers["down32"].weight.detach().flatten(1).norm(dim=1)
    assert float(rows.min() / rows.max()) > 0.99  # no near-zero shared row left to blow up
    # Training-mode batch norm starts where the files are: on the scenes its statistics
    # came from, batch statistics give what eval mode gives.
    rebuilt.set_tier("l")
    scenes = _scenes(CALIBRATION_SEED, 16, "l")
    with torch.no_grad():
        in_eval = rebuilt.eval()(scenes)[0]
        in_training = rebuilt.train()(scenes)[0]
    assert float((in_eval - in_training).abs().max()) < 1e-3
