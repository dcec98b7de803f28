"""Training with a teacher (training-only code: skipped without torch)."""

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from detectors.train.model import FuNet  # noqa: E402
from detectors.train.train import frozen_supernet  # noqa: E402


def test_a_frozen_supernet_computes_its_checkpoint_without_gradients(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = FuNet().eval()
    torch.save({"model": net.state_dict(), "steps": 1}, tmp_path / "teacher.pt")
    frozen = frozen_supernet(tmp_path / "teacher.pt", torch.device("cpu"))
    assert not frozen.training
    assert not any(p.requires_grad for p in frozen.parameters())
    x = torch.rand(1, 3, 48, 64)
    for tier in ("s", "l"):
        net.set_tier(tier)
        frozen.set_tier(tier)
        for theirs, ours in zip(net(x), frozen(x), strict=True):
            torch.testing.assert_close(ours, theirs)


def test_a_run_held_near_a_teacher_trains_and_saves(tmp_path: Path) -> None:
    torch.manual_seed(0)
    torch.save({"model": FuNet().state_dict(), "steps": 5}, tmp_path / "start.pt")
    # Its own process, as training runs: scene workers forked from a process whose torch
    # threads are running (this one, after other tests) can deadlock.
    subprocess.run(
        [
            sys.executable, "-m", "detectors.train.train",
            "--device", "cpu", "--images", "8", "--val", "4", "--batch", "2",
            "--width", "64", "--height", "48", "--max-steps", "2", "--warmup", "1",
            "--min-ready", "8", "--resume", str(tmp_path / "start.pt"),
            "--teacher", str(tmp_path / "start.pt"), "--teacher-tiers", "l", "s",
            "--out", str(tmp_path / "out"),
        ],
        check=True,
        timeout=240,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    saved = torch.load(tmp_path / "out" / "supernet.pt", map_location="cpu")
    assert saved["steps"] == 5 + 3  # the step that reaches the budget is taken too
    assert saved["args"]["teacher_tiers"] == ["l", "s"]
