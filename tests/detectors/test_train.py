"""Training with a teacher and with shifted views (training-only code: skipped without torch)."""

import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from detectors.train.model import FuNet  # noqa: E402
from detectors.train.targets import target_channels  # noqa: E402
from detectors.train.train import (  # noqa: E402
    HardScenes,
    Schedule,
    command_line,
    distill_loss,
    focal_loss,
    frozen_supernet,
    load_prefix,
    main,
    make_parser,
    scene_hardness,
    shift_consistency_loss,
    shift_hold_down_loss,
    shifted_views,
)


def test_no_shift_is_the_identity() -> None:
    x = torch.rand(2, 3, 6, 8)
    torch.testing.assert_close(shifted_views(x, 0.0), x)


@pytest.mark.parametrize(("dx", "dy"), [(1, 0), (0, 1), (-2, 0), (1, -1)])
def test_whole_pixel_offsets_are_exact_translations(
    dx: int, dy: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = torch.rand(1, 3, 12, 16)
    fixed = torch.tensor([[float(dx), float(dy)]])
    # rand() * 2 - 1 == offset / max_shift
    monkeypatch.setattr(torch, "rand", lambda *a, **k: (fixed / 2.0 + 1) / 2)
    moved = shifted_views(x, 2.0)
    # Content moves by (dx, dy): moved[y, x] == x[y - dy, x - dx] away from the border.
    inner = moved[..., 2:-2, 2:-2]
    source = x[..., 2 - dy : 12 - 2 - dy, 2 - dx : 16 - 2 - dx]
    torch.testing.assert_close(inner, source)


def _targets_with_centre(height: int, width: int, y: int, x: int) -> torch.Tensor:
    targets = torch.zeros(1, 6, height, width)
    targets[0, 0, y, x] = 1.0
    return targets


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        (0.0, 0.0, 0.0),  # the same score in both views: nothing to pull
        (2.0, -1.0, 0.8808 - 0.2689),  # the weaker view's gap to the stronger
        (-1.0, 2.0, 0.8808 - 0.2689),  # either view can be the weaker
    ],
)
def test_the_consistency_loss_is_the_gap_between_the_views(
    ours: float, theirs: float, expected: float
) -> None:
    targets = _targets_with_centre(4, 5, 2, 2)
    heat = torch.full((1, 1, 4, 5), -9.0)
    moved = heat.clone()
    heat[0, 0, 2, 2] = ours
    moved[0, 0, 2, 3] = theirs  # the peak moved by a cell: still within reach
    loss = shift_consistency_loss(heat, moved, targets)
    assert float(loss) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(
    ("term", "on_a_fu", "pulled_view", "direction"),
    [
        (shift_consistency_loss, True, "weaker", +1),  # a 福's weaker peak is raised
        (shift_hold_down_loss, False, "stronger", -1),  # a look-alike's stronger peak is lowered
    ],
)
def test_each_shift_term_pulls_one_view_only(
    term: Callable[..., torch.Tensor], on_a_fu: bool, pulled_view: str, direction: int
) -> None:
    targets = _targets_with_centre(4, 5, 1, 1) if on_a_fu else torch.zeros(1, 6, 4, 5)
    stronger = torch.full((1, 1, 4, 5), -9.0)
    weaker = stronger.clone()
    stronger[0, 0, 1, 1] = 2.0
    weaker[0, 0, 1, 1] = -1.0
    stronger.requires_grad_(True)
    weaker.requires_grad_(True)
    term(stronger, weaker, targets).backward()
    pulled, held = (weaker, stronger) if pulled_view == "weaker" else (stronger, weaker)
    assert pulled.grad is not None and held.grad is not None
    assert float(held.grad.abs().sum()) == 0.0
    assert direction * float(pulled.grad[0, 0, 1, 1]) < 0  # descending moves it that way


def test_without_a_fu_the_consistency_loss_is_zero_and_differentiable() -> None:
    heat = torch.zeros(1, 1, 4, 5, requires_grad=True)
    loss = shift_consistency_loss(heat, heat.detach() + 1, torch.zeros(1, 6, 4, 5))
    loss.backward()
    assert float(loss.detach()) == 0.0


_GAP = 0.8808 - 0.2689  # sigmoid(2) - sigmoid(-1)


@pytest.mark.parametrize(
    ("why", "target_heat", "ours", "theirs", "expected"),
    [
        ("a look-alike's gap between the views", 0.0, 2.0, -1.0, _GAP),
        ("either view can be the stronger", 0.0, -1.0, 2.0, _GAP),
        ("the same score in both views", 0.0, 2.0, 2.0, 0.0),
        ("below the floor in both views", 0.0, -2.0, -3.0, 0.0),
        ("on a labelled 福's shoulder", 0.1, 2.0, -1.0, 0.0),
        ("on an ignored 福", 0.99, 2.0, -1.0, 0.0),
    ],
)
def test_away_from_every_fu_the_hold_down_loss_is_the_gap_between_the_views(
    why: str, target_heat: float, ours: float, theirs: float, expected: float
) -> None:
    targets = torch.zeros(1, 6, 6, 7)
    targets[0, 0, 3, 3] = target_heat  # a cell within reach of the peak in both views
    heat = torch.full((1, 1, 6, 7), -9.0)
    moved = heat.clone()
    heat[0, 0, 2, 2] = ours
    moved[0, 0, 2, 3] = theirs  # the peak moved by a cell: still within reach
    loss = shift_hold_down_loss(heat, moved, targets)
    assert float(loss) == pytest.approx(expected, abs=1e-3), why


def test_the_hold_down_loss_is_divided_by_the_labelled_fu_not_by_the_peaks() -> None:
    # A mean over the peaks pushed the last few ever harder.
    targets = torch.zeros(1, 6, 6, 9)
    targets[0, 0, 4, 7] = targets[0, 0, 1, 7] = 1.0  # two 福 centres, out of the peaks' reach
    heat = torch.full((1, 1, 6, 9), -9.0)
    moved = heat.clone()
    heat[0, 0, 2, 1] = heat[0, 0, 4, 3] = 2.0  # two look-alikes the shifted view misses
    loss = shift_hold_down_loss(heat, moved, targets)
    assert float(loss) == pytest.approx(2 * (0.8808 - 0.0001) / 2, abs=1e-3)


def test_without_a_peak_off_the_fu_the_hold_down_loss_is_zero_and_differentiable() -> None:
    heat = torch.full((1, 1, 4, 5), -5.0, requires_grad=True)
    loss = shift_hold_down_loss(heat, heat.detach() + 1, torch.zeros(1, 6, 4, 5))
    loss.backward()
    assert float(loss.detach()) == 0.0


@pytest.mark.parametrize("width_scale", [1.0, 1.5])
def test_a_frozen_supernet_computes_its_checkpoint_without_gradients(
    tmp_path: Path, width_scale: float
) -> None:
    torch.manual_seed(0)
    net = FuNet(width_scale=width_scale).eval()
    args = {"width_scale": width_scale}
    torch.save({"model": net.state_dict(), "args": args, "steps": 1}, tmp_path / "teacher.pt")
    frozen = frozen_supernet(tmp_path / "teacher.pt", torch.device("cpu"))
    assert not frozen.training
    assert not any(p.requires_grad for p in frozen.parameters())
    x = torch.rand(1, 3, 48, 64)
    for tier in ("s", "l"):
        net.set_tier(tier)
        frozen.set_tier(tier)
        for theirs, ours in zip(net(x), frozen(x), strict=True):
            torch.testing.assert_close(ours, theirs)


def test_a_narrow_checkpoint_widens_into_a_net_that_computes_the_same() -> None:
    torch.manual_seed(0)
    narrow = FuNet()
    for layer in narrow.modules():  # statistics as a trained net has them, not the defaults
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.5, 0.5)
            layer.running_var.uniform_(0.5, 2.0)
    wide = FuNet(width_scale=2.0)
    load_prefix(wide, narrow.state_dict())
    assert wide.layers["conv8"].weight.shape[:2] == (128, 128)
    narrow.eval(), wide.eval()
    x = torch.rand(1, 3, 48, 64)
    for tier in ("s", "l"):  # the tiers as wide as the widest; m only starts near its own
        narrow.set_tier(tier)
        wide.set_tier(tier)
        for theirs, ours in zip(narrow(x), wide(x), strict=True):
            torch.testing.assert_close(ours, theirs)


def _train_tiny(*args: str) -> None:
    """A few steps of training on tiny scenes, in its own process, as training runs: scene
    workers forked from a process whose torch threads are running (this one, after other
    tests) can deadlock."""
    subprocess.run(
        [
            sys.executable, "-m", "detectors.train.train",
            "--device", "cpu", "--images", "8", "--val", "4", "--batch", "2",
            "--width", "64", "--height", "48", "--min-ready", "8", *args,
        ],
        check=True,
        timeout=240,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip


def test_a_run_held_near_a_wider_teacher_trains_and_saves(tmp_path: Path) -> None:
    torch.manual_seed(0)
    torch.save({"model": FuNet().state_dict(), "steps": 5}, tmp_path / "start.pt")
    teacher = {"model": FuNet(width_scale=1.5).state_dict(), "args": {"width_scale": 1.5}}
    torch.save(teacher | {"steps": 9}, tmp_path / "teacher.pt")
    _train_tiny(
        "--max-steps", "2", "--warmup", "1", "--resume", str(tmp_path / "start.pt"),
        "--teacher", str(tmp_path / "teacher.pt"), "--teacher-tiers", "l", "s",
        "--teacher-off-target",
        "--shift-weight", "1.0", "--hold-down-weight", "2.0", "--max-shift", "1.5",
        "--bare-ink-share", "0.5", "--upside-down-share", "0.4", "--hard-share", "0.5",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    saved = torch.load(tmp_path / "out" / "supernet.pt", map_location="cpu")
    assert saved["steps"] == 5 + 3  # the step that reaches the budget is taken too
    assert saved["args"]["teacher_tiers"] == ["l", "s"]
    assert (saved["args"]["shift_weight"], saved["args"]["hold_down_weight"]) == (1.0, 2.0)
    assert (saved["args"]["bare_ink_share"], saved["args"]["upside_down_share"]) == (0.5, 0.4)
    assert saved["args"]["hard_share"] == 0.5


def test_a_wider_run_starts_from_a_narrow_checkpoint(tmp_path: Path) -> None:
    torch.save({"model": FuNet().state_dict(), "steps": 5}, tmp_path / "start.pt")
    out = tmp_path / "out"
    _train_tiny("--max-steps", "1", "--width-scale", "2", "--resume", str(tmp_path / "start.pt"),
                "--out", str(out))  # fmt: skip
    saved = torch.load(out / "supernet.pt", map_location="cpu")
    assert saved["args"]["width_scale"] == 2.0
    assert saved["model"]["layers.stem.weight"].shape[0] == 2 * 16


@pytest.mark.parametrize("flag", ["--bare-ink-share", "--upside-down-share", "--hard-share"])
def test_a_share_outside_0_1_is_refused_before_any_work(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([flag, "1.5", "--device", "cpu"])
    assert "must be within 0..1, got '1.5'" in capsys.readouterr().err


def _one_fu_targets() -> torch.Tensor:
    """Targets of one 福 at (16, 16)-(48, 48) on maps of 12 x 16 cells."""
    boxes = np.array([[16, 16, 48, 48]], np.float32)
    return torch.from_numpy(target_channels(boxes, 96, 128))[None]


def test_off_target_the_teacher_has_no_say_on_a_labelled_fu() -> None:
    targets = _one_fu_targets()
    teacher = (torch.full((1, 1, 12, 16), -6.0), torch.zeros(1, 4, 12, 16))
    student_heat = teacher[0].clone()
    student_heat[0, 0, 4, 4] = 6.0  # the student finds the 福 the teacher missed...
    student = (student_heat, torch.ones(1, 4, 12, 16))  # ...with other boxes
    zero = torch.zeros(())
    torch.testing.assert_close(distill_loss(*teacher, teacher, targets), zero)  # KL, no entropy
    torch.testing.assert_close(distill_loss(*student, teacher, targets, off_target=True), zero)
    assert distill_loss(*student, teacher, targets) > 1
    student_heat[0, 0, 10, 14] = 6.0  # and fires far from any 福: held back there
    assert distill_loss(*student, teacher, targets, off_target=True) > 1


def test_distillation_pulls_the_student_the_same_way_as_cross_entropy() -> None:
    # KL differs from cross-entropy by the teacher's entropy alone: the same gradient.
    targets = _one_fu_targets()
    teacher = (torch.randn(1, 1, 12, 16), torch.zeros(1, 4, 12, 16))
    student = torch.randn(1, 1, 12, 16, requires_grad=True)
    distill_loss(student, torch.zeros(1, 4, 12, 16), teacher, targets).backward()
    expected = (torch.sigmoid(student) - torch.sigmoid(teacher[0])).detach()
    assert student.grad is not None
    torch.testing.assert_close(student.grad, expected)  # one 福: divided by 1


SCHEDULE = Schedule(lr=1.0, warmup=4, minutes=1.0, max_steps=100)


@pytest.mark.parametrize(
    ("steps", "seconds", "progress", "lr"),
    [
        (0, 0.0, 0.0, 0.25),  # warming up: a quarter of the way after the first step
        (3, 0.0, 0.03, 0.998),  # warm; the cosine has barely begun
        (50, 0.0, 0.5, 0.5),  # half the steps
        (10, 30.0, 0.5, 0.5),  # half the minute: whichever budget is further on counts
        (100, 0.0, 1.0, 0.0),
        (120, 90.0, 1.5, 0.0),  # past the end: stays at zero
    ],
)
def test_the_schedule_warms_up_then_decays_over_the_budget_that_ends_first(
    steps: int, seconds: float, progress: float, lr: float
) -> None:
    assert SCHEDULE.progress(steps, seconds) == pytest.approx(progress)
    assert SCHEDULE.lr_at(steps, seconds) == pytest.approx(lr, abs=1e-3)


def test_a_run_cut_into_parts_goes_on_where_it_stopped(tmp_path: Path) -> None:
    torch.manual_seed(0)
    torch.save({"model": FuNet().state_dict(), "steps": 5}, tmp_path / "start.pt")
    first, second = tmp_path / "first", tmp_path / "second"
    _train_tiny(
        "--max-steps", "4", "--warmup", "1", "--lr", "0.01", "--stop-at", "0.5",
        "--resume", str(tmp_path / "start.pt"), "--out", str(first),
    )  # fmt: skip
    stopped = torch.load(first / "supernet.pt", map_location="cpu")
    assert stopped["schedule"] == {"lr": 0.01, "warmup": 1, "minutes": 5.0, "max_steps": 4}
    assert stopped["schedule_taken"]["steps"] == 3  # at 0, 1/4 and 1/2 of the schedule
    _train_tiny("--continue-from", str(first / "supernet.pt"), "--seed", "9", "--out", str(second))
    ended = torch.load(second / "supernet.pt", map_location="cpu")
    assert ended["schedule"] == stopped["schedule"]
    assert {k: ended["args"][k] for k in stopped["schedule"]} == stopped["schedule"]
    assert ended["schedule_taken"]["steps"] == 5  # at 3/4 and at the end
    assert ended["steps"] == 5 + 3 + 2
    # Adam's moments went on too: the optimizer counts every step of the schedule
    assert {int(state["step"]) for state in ended["optimizer"]["state"].values()} == {5}
    with pytest.raises(SystemExit, match="finished its schedule: --resume starts a new one"):
        main(["--continue-from", str(second / "supernet.pt"), "--device", "cpu"])
    with pytest.raises(SystemExit, match="not saved by a training part: --resume starts"):
        main(["--continue-from", str(tmp_path / "start.pt"), "--device", "cpu"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--continue-from", "a.pt", "--lr", "0.1", "--minutes", "3"], "drop --lr, --minutes"),
        (["--continue-from", "a.pt", "--resume", "b.pt"], "not allowed with argument"),
        (["--stop-at", "2"], "must be within 0..1, got '2'"),
    ],
)
def test_contradicting_schedule_flags_are_refused_before_any_work(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--device", "cpu"])
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--images", "220000", "--lr", "0.0004", "--minutes", "16.6", "--stop-at", "0.5"],
        ["--resume", "a.pt", "--cut-look-alikes", "--glyph-fill", "0.2:0.6"],
        ["--teacher", "t.pt", "--teacher-tiers", "l", "--teacher-off-target", "--seed", "7"],
        ["--continue-from", "part.pt", "--device", "cuda", "--bare-ink-share", "0.3"],
        ["--hard-share", "0.4"],
    ],
)
def test_the_recorded_command_runs_as_the_run_was_made(argv: list[str]) -> None:
    args = vars(make_parser().parse_args([*argv, "--out", "build/x"]))
    if args["continue_from"]:  # train() records the schedule the checkpoint gave it
        args |= {"lr": 0.0004, "warmup": 300, "minutes": 16.6, "max_steps": 30000}
    command = command_line(args)
    assert command.startswith("python -m detectors.train.train")
    assert "--out" not in command and "None" not in command and "False" not in command
    again = vars(make_parser().parse_args(shlex.split(command)[3:]))
    assert again == vars(make_parser().parse_args(argv))


def test_a_missed_fu_is_harder_than_a_found_one_and_than_a_quiet_background() -> None:
    heat = _one_fu_targets()[:, 0].repeat(3, 1, 1)
    heat[2] = 0.0  # a scene without a 福
    logits = torch.full_like(heat, -6.0)
    logits[1] = torch.where(heat[1] >= 1.0, 6.0, -6.0)  # scene 1 finds its 福
    missed, found, quiet = scene_hardness(logits, heat).tolist()
    assert missed > 100 * max(found, quiet)
    # the batch's loss is the same focal loss as always: the scenes' summed, over 2 peaks in all
    assert torch.isclose(focal_loss(logits, heat), scene_hardness(logits, heat).sum() / 2)


def test_hard_scenes_are_drawn_again_each_time_with_half_their_claim() -> None:
    replay = HardScenes(6, torch.device("cpu"))
    idx, hard = replay.draw(ready=4, size=8, share=0.5)
    assert hard == 0 and len(idx) == 8 and int(idx.max()) < 4  # nothing scored yet: uniform
    replay.remember(torch.tensor([0, 1, 2]), torch.tensor([0.0, 8.0, 0.0]), hard=0)
    torch.manual_seed(0)
    idx, hard = replay.draw(ready=4, size=8, share=0.5)
    assert hard == 4 and idx[:4].tolist() == [1, 1, 1, 1]  # only scene 1 has a claim
    replay.remember(idx[:1], torch.tensor([8.0]), hard=1)  # still as hard: half the claim
    assert replay.hardness.tolist() == [0.0, 4.0, 0.0, 0.0, 0.0, 0.0]
    idx, hard = replay.draw(ready=4, size=8, share=0.0)
    assert hard == 0
