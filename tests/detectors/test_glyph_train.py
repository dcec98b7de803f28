"""Training the glyph check: scene crops, the network, the threshold, the export and a tiny
run end to end (training-only code: skipped without torch)."""

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from detectors.card import MODELS_DIR, GlyphSpec, read_card, read_card_fields  # noqa: E402
from detectors.core import Box  # noqa: E402
from detectors.glyph_check import GLYPH_SIDE, GlyphCheck, glyph_crop  # noqa: E402
from detectors.synth.scenes import PosterScene, render_posters  # noqa: E402
from detectors.train import glyph  # noqa: E402
from detectors.train.glyph import (  # noqa: E402
    FRAME,
    LUMA_BGR,
    MIN_BOX_SIDE,
    SCENES,
    CropStream,
    GlyphNet,
    _jittered,
    _random_box,
    as_input,
    augment,
    colour_from_grey,
    export,
    from_file,
    load_net,
    main,
    pass_rates,
    pick_threshold,
    scene_crops,
    stacked,
    training_scenes,
)
from detectors.train.model import count_macs_params  # noqa: E402

WIDTH, HEIGHT = FRAME
CPU = torch.device("cpu")
SEEDS = range(20)
"""Of these training scenes, some hold a 福 and some (0, 2, 7, 11, 12, ...) none."""


Crops = tuple[np.ndarray, np.ndarray]


def _scene(seed: int) -> PosterScene:
    """The scene :func:`scene_crops` cuts ``seed``'s crops from."""
    return render_posters(seed, WIDTH, HEIGHT, "train", "mixed", SCENES)


def _as_input(crops: np.ndarray) -> torch.Tensor:
    return as_input(torch.from_numpy(crops))


@pytest.fixture(scope="module")
def crops_by_seed() -> dict[int, Crops]:
    """:func:`scene_crops` of each of :data:`SEEDS` (about 30 ms a scene)."""
    return {seed: scene_crops(seed) for seed in SEEDS}


@pytest.fixture(scope="module")
def some_crops(crops_by_seed: dict[int, Crops]) -> np.ndarray:
    """A dozen crops of the first scenes, 福 and not (a forward pass costs ~25 ms a crop)."""
    crops, _ = stacked(crops_by_seed[s] for s in range(4))
    return crops[:12]


@pytest.fixture(scope="module")
def settled_net(some_crops: np.ndarray) -> GlyphNet:
    """A fresh network whose batch-norm statistics are those of ``some_crops``, in eval mode.

    Freshly initialized, every crop's logit is within about 1e-3 of zero, so any comparison
    of outputs would hold trivially; with the statistics of real crops they spread out."""
    torch.manual_seed(0)
    net = GlyphNet()
    for module in net.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.momentum = None  # a plain average over the passes: the crops' statistics
    with torch.no_grad():
        net(_as_input(some_crops))
    return net.eval()


# --- scene_crops -----------------------------------------------------------------------------


def test_crops_are_grey_squares_with_a_label_each(crops_by_seed: dict[int, Crops]) -> None:
    for crops, labels in crops_by_seed.values():
        assert crops.dtype == np.uint8
        assert crops.shape == (len(labels), GLYPH_SIDE, GLYPH_SIDE)
        assert labels.dtype == np.uint8
        assert set(labels.tolist()) <= {0, 1}


def test_a_handful_of_scenes_gives_both_labels(crops_by_seed: dict[int, Crops]) -> None:
    _, labels = stacked(crops_by_seed.values())
    assert 0 < int(labels.sum()) < len(labels)


def test_a_scene_without_fu_gives_only_negatives_and_one_with_fu_gives_positives(
    crops_by_seed: dict[int, Crops],
) -> None:
    without = with_fu = 0
    for seed, (_, labels) in crops_by_seed.items():
        _, fu, _, others = _scene(seed)
        positives = int(labels.sum())
        # JITTERS crops of each labelled box (fewer where a jittered box is too small), then
        # RANDOM_BOXES random boxes away from every 福.
        assert positives <= glyph.JITTERS * len(fu)
        assert len(labels) - positives <= glyph.JITTERS * len(others) + glyph.RANDOM_BOXES
        if len(fu) == 0:
            assert positives == 0
            without += 1
        else:
            assert positives > 0
            with_fu += 1
    assert without > 0 and with_fu > 0  # both kinds of scene were looked at


def test_without_jitter_each_crop_is_the_runtimes_crop_of_a_labelled_box(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(glyph, "BOX_JITTER", 0.0)
    monkeypatch.setattr(glyph, "RANDOM_BOXES", 0)
    looked_at = 0
    for seed in range(10):
        image, fu, _, others = _scene(seed)
        expected = [
            (glyph_crop(image, (r[0], r[1], r[2], r[3])), label)
            for label, rows in ((1, fu), (0, others))
            for r in rows.tolist()
            if min(r[2] - r[0], r[3] - r[1]) >= MIN_BOX_SIDE
            for _ in range(glyph.JITTERS)
        ]
        crops, labels = scene_crops(seed)
        assert labels.tolist() == [label for _, label in expected]  # 福 first, then the rest
        for crop, (want, _) in zip(crops, expected, strict=True):
            np.testing.assert_array_equal(crop, want)
        looked_at += len(expected)
    assert looked_at > 0


def test_colour_crops_are_the_grey_crops_in_colour(crops_by_seed: dict[int, Crops]) -> None:
    for seed in range(4):
        grey, labels = crops_by_seed[seed]
        colour, colour_labels = scene_crops(seed, channels=3)
        np.testing.assert_array_equal(colour_labels, labels)
        assert colour.shape == (*grey.shape, 3)
        greyed = (
            np.stack([cv2.cvtColor(c, cv2.COLOR_BGR2GRAY) for c in colour]) if len(colour) else grey
        )
        assert np.abs(greyed.astype(int) - grey).max(initial=0) <= 1


@pytest.mark.parametrize("seed", [1, 3, 9])
def test_crops_are_a_function_of_the_seed(seed: int, crops_by_seed: dict[int, Crops]) -> None:
    a_crops, a_labels = crops_by_seed[seed]
    b_crops, b_labels = scene_crops(seed)
    np.testing.assert_array_equal(a_crops, b_crops)
    np.testing.assert_array_equal(a_labels, b_labels)
    assert not np.array_equal(a_crops[:1], crops_by_seed[seed + 1][0][:1])


# --- _jittered -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "box",
    [
        (100.0, 100.0, 200.0, 180.0),  # well inside
        (0.0, 0.0, 120.0, 90.0),  # in a corner
        (560.0, 400.0, 640.0, 480.0),  # in the opposite corner
        (0.0, 0.0, 640.0, 480.0),  # the whole frame
        (600.0, 30.0, 640.0, 300.0),  # tall, on the right edge
    ],
)
def test_a_jittered_box_stays_within_the_frame(box: Box) -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        moved = _jittered(rng, box, WIDTH, HEIGHT)
        assert moved is not None  # big enough that the jitter never shrinks it below the floor
        x0, y0, x1, y1 = moved
        assert 0 <= x0 < x1 <= WIDTH and 0 <= y0 < y1 <= HEIGHT
        assert min(x1 - x0, y1 - y0) >= MIN_BOX_SIDE


@pytest.mark.parametrize(
    "box",
    [
        (100.0, 100.0, 105.0, 105.0),  # small everywhere
        (100.0, 100.0, 104.0, 300.0),  # thin
        (700.0, 100.0, 800.0, 200.0),  # right of the frame: nothing left after clipping
        (-200.0, 100.0, -100.0, 200.0),  # left of it
        (100.0, 540.0, 200.0, 640.0),  # below it
        (100.0, -200.0, 200.0, -100.0),  # above it
    ],
)
def test_a_box_too_small_within_the_frame_is_dropped(box: Box) -> None:
    rng = np.random.default_rng(0)
    assert all(_jittered(rng, box, WIDTH, HEIGHT) is None for _ in range(300))


def test_each_edge_moves_by_its_share_of_the_boxs_side() -> None:
    rng = np.random.default_rng(1)
    box = (200.0, 150.0, 300.0, 350.0)  # 100 wide, 200 high
    moves = np.array([_jittered(rng, box, WIDTH, HEIGHT) for _ in range(4000)]) - np.array(box)
    sides = np.array([100.0, 200.0, 100.0, 200.0])
    np.testing.assert_allclose(moves.mean(axis=0) / sides, 0.0, atol=0.01)
    np.testing.assert_allclose(moves.std(axis=0) / sides, glyph.BOX_JITTER, rtol=0.08)


class _Extreme:
    """A stand-in generator: every uniform draw at its top, every normal draw ``sigmas`` out."""

    def __init__(self, sigmas: float) -> None:
        self.sigmas = sigmas

    def uniform(self, low: float, high: float) -> float:
        return high

    def normal(self, mean: float, std: float) -> float:
        return mean + self.sigmas * std


@pytest.mark.parametrize("sigmas", [-6.0, -3.0, 0.0, 3.0, 6.0])
def test_a_random_box_of_any_aspect_lies_within_the_frame(sigmas: float) -> None:
    x0, y0, x1, y1 = _random_box(_Extreme(sigmas), WIDTH, HEIGHT)  # type: ignore[arg-type]
    assert 0 <= x0 < x1 <= WIDTH and 0 <= y0 < y1 <= HEIGHT


# --- pick_threshold and pass_rates -----------------------------------------------------------

FIVE = [0.1, 0.2, 0.9, 0.95, 0.99]
FIVE_LABELS = [0, 0, 1, 1, 1]


@pytest.mark.parametrize(
    ("scores", "labels", "pass_target", "threshold", "fu_pass", "other_pass"),
    [
        (FIVE, FIVE_LABELS, 1.0, 0.9, 1.0, 0.0),  # every 福 passes: the lowest 福 score
        (FIVE, FIVE_LABELS, 0.6, 0.95, 2 / 3, 0.0),  # two of three is enough
        (FIVE, FIVE_LABELS, 0.34, 0.95, 2 / 3, 0.0),  # one of three (0.33) is not
        (FIVE, FIVE_LABELS, 0.3, 0.99, 1 / 3, 0.0),  # one of three is
        ([0.99, 0.1, 0.9, 0.2, 0.95], [1, 0, 1, 0, 1], 1.0, 0.9, 1.0, 0.0),  # in any order
        ([0.5, 0.97, 0.9, 0.95, 0.99], FIVE_LABELS, 1.0, 0.9, 1.0, 0.5),  # a look-alike passes
        ([0.3, 0.3, 0.3, 0.8], [1, 0, 1, 1], 1.0, 0.3, 1.0, 1.0),  # a score at it passes
        ([0.7, 0.8, 0.7, 0.75], [1, 1, 1, 0], 0.5, 0.7, 1.0, 1.0),  # tied 福 scores
    ],
)  # fmt: skip
def test_the_threshold_passes_the_target_share_of_fu(
    scores: list[float],
    labels: list[int],
    pass_target: float,
    threshold: float,
    fu_pass: float,
    other_pass: float,
) -> None:
    s, lab = np.array(scores, np.float32), np.array(labels, np.uint8)
    picked = pick_threshold(s, lab, pass_target)
    assert picked == pytest.approx(threshold)
    rates = pass_rates(s, lab, picked)
    assert rates["fu_pass"] == pytest.approx(fu_pass)
    assert rates["other_pass"] == pytest.approx(other_pass)
    assert rates["fu_crops"] == int(lab.sum())
    assert rates["other_crops"] == len(lab) - int(lab.sum())
    assert rates["fu_pass"] >= pass_target


@pytest.mark.parametrize("labels", [[0, 0, 0], []])
def test_no_fu_crops_no_threshold(labels: list[int]) -> None:
    scores = np.linspace(0, 1, len(labels), dtype=np.float32)
    with pytest.raises(ValueError, match="no 福 crops"):
        pick_threshold(scores, np.array(labels, np.uint8), 0.99)


@pytest.mark.parametrize(("target", "threshold"), [(0.9, 0.2), (0.8, 0.3), (0.99, 0.1)])
def test_the_threshold_is_the_highest_that_passes_the_target(
    target: float, threshold: float
) -> None:
    scores = np.arange(1, 11, dtype=np.float32) / 10  # ten 福: 0.1 .. 1.0
    # 0.2 passes nine of ten, exactly 0.9 (1 - 0.9 rounds below 0.1: it once picked 0.1).
    assert pick_threshold(scores, np.ones(10, np.uint8), target) == pytest.approx(threshold)


@pytest.mark.parametrize("target", [0.0, -0.1, 1.5])
def test_a_pass_target_outside_0_1_is_refused(target: float) -> None:
    with pytest.raises(ValueError, match="pass_target"):
        pick_threshold(np.ones(3, np.float32), np.ones(3, np.uint8), target)


def test_pass_rates_of_a_kind_without_crops_are_none() -> None:
    rates = pass_rates(np.array([0.9], np.float32), np.array([1], np.uint8), 0.5)
    assert rates == {"fu_pass": 1.0, "other_pass": None, "fu_crops": 1, "other_crops": 0}


# --- GlyphNet and augment --------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5])
def test_glyph_net_gives_one_logit_a_crop(n: int) -> None:
    net = GlyphNet().eval()
    with torch.no_grad():
        out = net(torch.rand(n, 1, GLYPH_SIDE, GLYPH_SIDE))
    assert out.shape == (n,)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("channels", [0, 2])
def test_a_glyph_net_of_other_than_1_or_3_channels_is_refused(channels: int) -> None:
    with pytest.raises(ValueError, match="1 or 3 channels"):
        GlyphNet(channels=channels)


def _luma(x: torch.Tensor) -> torch.Tensor:
    """N x 3 x H x W BGR to N x 1 x H x W luma, unrounded."""
    return sum((w * x[:, i : i + 1] for i, w in enumerate(LUMA_BGR)), torch.zeros(()))


def test_a_colour_net_standardizes_luma_and_two_chromas(some_crops: np.ndarray) -> None:
    """A colour crop becomes luma (the crop's grey), blue less luma and red less luma, each
    standardized as a grey crop is: ink that differs from its ground only in hue shows in the
    chroma channels."""
    x = torch.rand(5, 3, GLYPH_SIDE, GLYPH_SIDE)
    seen: list[torch.Tensor] = []
    net = GlyphNet(widths=(4, 8), channels=3).eval()
    net.features.register_forward_pre_hook(lambda _, args: seen.append(args[0]))
    with torch.no_grad():
        assert net(x).shape == (5,)
    luma = _luma(x)
    planes = torch.cat((luma, x[:, 0:1] - luma, x[:, 2:3] - luma), 1)
    mean = planes.mean(dim=(2, 3), keepdim=True)
    spread = planes.std(dim=(2, 3), keepdim=True, unbiased=False)
    torch.testing.assert_close(seen[0], (planes - mean) / (spread + 0.02), rtol=1e-4, atol=1e-4)


def test_a_colour_net_from_a_grey_one_scores_as_the_grey_one(
    tmp_path: Path, settled_net: GlyphNet
) -> None:
    """Its chroma channels start with no weight, so a fine-tune from the shipped grey network
    starts where that network is."""
    colour, _ = stacked(scene_crops(s, channels=3) for s in range(4))
    x = _as_input(colour[:12])
    torch.save(settled_net.state_dict(), tmp_path / "glyph.pt")
    net = load_net(tmp_path / "glyph.pt", torch.device("cpu"), channels=3).eval()
    assert net.channels == 3
    with torch.no_grad():
        from_grey = settled_net(_luma(x))
        from_colour = net(x)
    assert float(from_grey.std()) > 0.05
    torch.testing.assert_close(from_colour, from_grey, rtol=0, atol=1e-4)


def test_a_grey_net_is_loaded_as_saved_and_a_colour_one_is_not_made_grey(tmp_path: Path) -> None:
    torch.save(GlyphNet(widths=(4, 8)).state_dict(), tmp_path / "small.pt")
    torch.save(GlyphNet(channels=3).state_dict(), tmp_path / "colour.pt")
    assert load_net(tmp_path / "colour.pt", torch.device("cpu")).channels == 3
    with pytest.raises(ValueError, match="reads 3 channels; it cannot be made to read 1"):
        load_net(tmp_path / "colour.pt", torch.device("cpu"), channels=1)
    with pytest.raises(ValueError, match="not a grey glyph net"):
        colour_from_grey(GlyphNet(channels=3).state_dict())


@pytest.mark.parametrize("offset", [0.2, -0.3, 0.5])
def test_glyph_net_ignores_a_change_of_brightness(
    offset: float, some_crops: np.ndarray, settled_net: GlyphNet
) -> None:
    x = _as_input(some_crops)
    with torch.no_grad():
        plain, brighter = settled_net(x), settled_net(x + offset)
    assert float(plain.std()) > 0.05  # the logits spread out: the comparison means something
    torch.testing.assert_close(brighter, plain, rtol=0, atol=1e-4)


@pytest.mark.parametrize(("gain", "offset"), [(1.0, 0.2), (0.5, 0.2), (0.8, -0.1), (2.0, -0.5)])
def test_each_crop_is_standardized_inside_the_network(
    gain: float, offset: float, some_crops: np.ndarray
) -> None:
    """What the layers see is each crop less its mean over its spread plus 0.02. A change of
    brightness leaves that exactly as it was; a change of contrast ``gain`` only turns the
    0.02 into 0.02 / gain, which matters for crops of little contrast (and moves a settled
    network's logits by about 0.3 at gain 0.5 on scene crops: not invariant)."""
    x = _as_input(some_crops)
    seen: list[torch.Tensor] = []
    net = GlyphNet(widths=(4, 8)).eval()  # what the layers are does not matter here
    net.features.register_forward_pre_hook(lambda _, args: seen.append(args[0]))
    with torch.no_grad():
        net(x)
        net(x * gain + offset)
    mean = x.mean(dim=(2, 3), keepdim=True)
    spread = x.std(dim=(2, 3), keepdim=True, unbiased=False)
    torch.testing.assert_close(seen[0], (x - mean) / (spread + 0.02), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(seen[1], (x - mean) / (spread + 0.02 / gain), rtol=1e-4, atol=1e-4)


_NOISE = torch.Generator().manual_seed(0)


@pytest.mark.parametrize(
    "crops",
    [
        torch.randint(0, 256, (7, GLYPH_SIDE, GLYPH_SIDE), generator=_NOISE, dtype=torch.uint8),
        torch.randint(0, 256, (3, 20, 30), generator=_NOISE, dtype=torch.uint8),  # any size
        torch.zeros((4, GLYPH_SIDE, GLYPH_SIDE), dtype=torch.uint8),  # black: noise below 0
        torch.full((4, GLYPH_SIDE, GLYPH_SIDE), 255, dtype=torch.uint8),  # white: above 1
    ],
)
def test_augment_gives_float_crops_within_0_and_1(crops: torch.Tensor) -> None:
    torch.manual_seed(0)
    out = augment(crops)
    assert out.dtype == torch.float32
    assert out.shape == (crops.shape[0], 1, *crops.shape[1:])
    assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0


def test_augment_turns_some_crops_upside_down_and_mirrors_none() -> None:
    crops = torch.zeros((64, 16, 16), dtype=torch.uint8)
    crops[:, :8, :8] = 255  # a bright top-left quarter
    torch.manual_seed(0)
    out = augment(crops)[:, 0]
    quarters = torch.stack(
        [out[:, :8, :8], out[:, :8, 8:], out[:, 8:, :8], out[:, 8:, 8:]], dim=1
    ).mean(dim=(2, 3))
    brightest = quarters.argmax(dim=1)
    assert set(brightest.tolist()) == {0, 3}  # top-left as it was, or bottom-right: turned


def test_augment_reorders_the_channels_of_half_the_colour_crops_and_mixes_none() -> None:
    crops = torch.zeros((400, 8, 8, 3), dtype=torch.uint8)
    crops[..., 1], crops[..., 2] = 120, 250  # B < G < R in every crop
    torch.manual_seed(0)
    out = augment(crops)
    assert out.shape == (400, 3, 8, 8)
    # Gamma and noise keep each crop's order of levels, so the order tells the permutation.
    orders = out.mean(dim=(2, 3)).argsort(dim=1)
    assert all(sorted(o) == [0, 1, 2] for o in orders.tolist())
    kept = int((orders == torch.arange(3)).all(dim=1).sum())
    assert 400 * 0.5 < kept < 400 * 0.7  # half kept, and one in six of the rest by chance
    assert len({tuple(o) for o in orders.tolist()}) == 6


# --- count_macs_params -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("widths", "macs"),
    [
        # 64x64x4 x 9 + 32x32x8 x 9x4 + 32x32x8 x 9x8 + 8x32x32 (the head)
        ((4, 8), 147_456 + 294_912 + 589_824 + 8_192),
        ((16, 32, 64, 96, 128), 41_879_552),  # the trained network
    ],
)
def test_macs_and_params_of_the_glyph_net(widths: tuple[int, ...], macs: int) -> None:
    net = GlyphNet(widths)
    counted = count_macs_params(net, GLYPH_SIDE, GLYPH_SIDE, channels=1)
    assert counted == (macs, sum(p.numel() for p in net.parameters()))


@pytest.mark.parametrize("training", [True, False])
def test_counting_leaves_the_mode_and_the_batch_norm_statistics_alone(training: bool) -> None:
    torch.manual_seed(0)
    net = GlyphNet(widths=(4, 8)).train()
    net(torch.rand(8, 1, GLYPH_SIDE, GLYPH_SIDE))  # statistics away from their start
    net.train(training)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    count_macs_params(net, GLYPH_SIDE, GLYPH_SIDE, channels=1)
    assert all(m.training == training for m in net.modules())
    for key, value in net.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)


# --- export ----------------------------------------------------------------------------------


def test_export_writes_fp32_and_int8_files_the_glyph_check_reads(
    tmp_path: Path, some_crops: np.ndarray, settled_net: GlyphNet
) -> None:
    crops = some_crops
    with torch.no_grad():
        expected = torch.sigmoid(settled_net(_as_input(crops))).numpy()
    export(settled_net, tmp_path, crops)
    assert not settled_net.training  # left in eval mode, its statistics untouched by later use
    names = ("fu_glyph.fp32.onnx", "fu_glyph.int8.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # no leftovers
    scores = {}
    for name in names:
        scores[name] = GlyphCheck(tmp_path / name, GlyphSpec(name, 0.5)).scores(crops)
        assert scores[name].shape == (len(crops),)
        assert float(scores[name].min()) >= 0.0 and float(scores[name].max()) <= 1.0
    np.testing.assert_allclose(scores["fu_glyph.fp32.onnx"], expected, rtol=0, atol=1e-4)


# --- recovery from an exported file ----------------------------------------------------------


def _colour_settled(settled_net: GlyphNet) -> GlyphNet:
    """``settled_net`` made to read colour, its chroma planes given weight."""
    torch.manual_seed(1)
    state = colour_from_grey(settled_net.state_dict())
    state[glyph.FIRST_CONV][:, 1:] = torch.randn_like(state[glyph.FIRST_CONV][:, 1:]) * 0.3
    net = GlyphNet(channels=3)
    net.load_state_dict(state)
    return net.eval()


@pytest.mark.parametrize("channels", [1, 3])
def test_a_net_rebuilt_from_its_exported_file_computes_it_in_eval_and_training_mode(
    tmp_path: Path, settled_net: GlyphNet, channels: int
) -> None:
    crops, _ = stacked(scene_crops(s, channels=channels) for s in range(4))
    net = settled_net if channels == 1 else _colour_settled(settled_net)
    export(net, tmp_path, crops)
    expected = GlyphCheck(tmp_path / "fu_glyph.fp32.onnx", GlyphSpec("g", 0.5)).scores(crops)
    assert float(expected.std()) > 0.01  # scores that differ: a comparison that can fail
    rebuilt = from_file(tmp_path / "fu_glyph.fp32.onnx", crops)
    assert rebuilt.channels == channels
    for training in (False, True):  # on the calibration crops, batch statistics are its own
        rebuilt.train(training)
        with torch.no_grad():
            got = torch.sigmoid(rebuilt(_as_input(crops))).numpy()
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


def test_a_file_that_is_no_glyph_net_is_not_rebuilt(some_crops: np.ndarray) -> None:
    with pytest.raises(ValueError, match="is not a glyph net"):
        from_file(MODELS_DIR / "fu_l.fp32.onnx", some_crops)  # a detector: no dense layer


def test_recover_writes_a_checkpoint_that_training_resumes_from(
    tmp_path: Path, settled_net: GlyphNet, some_crops: np.ndarray
) -> None:
    export(settled_net, tmp_path, some_crops)
    main(["--recover", str(tmp_path / "fu_glyph.fp32.onnx"), "--val-scenes", "6",
          "--workers", "1", "--out", str(tmp_path / "g0")])  # fmt: skip
    net = load_net(tmp_path / "g0" / "glyph.pt", CPU).eval()
    expected = GlyphCheck(tmp_path / "fu_glyph.fp32.onnx", GlyphSpec("g", 0.5)).scores(some_crops)
    with torch.no_grad():
        got = torch.sigmoid(net(_as_input(some_crops))).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


# --- end to end ------------------------------------------------------------------------------


TINY_RUN = [
    "--scenes", "40", "--val-scenes", "12", "--minutes", "1", "--max-steps", "1",
    "--batch", "16", "--workers", "1",
]  # fmt: skip
"""One step of training (whatever the machine's speed), on crops of 40 scenes."""


def test_a_tiny_colour_run_from_a_grey_net_then_its_export(
    tmp_path: Path, settled_net: GlyphNet
) -> None:
    torch.save(settled_net.state_dict(), tmp_path / "grey.pt")
    out = str(tmp_path / "colour")
    main([*TINY_RUN, "--colour", "--resume", str(tmp_path / "grey.pt"), "--out", out])
    report = json.loads((tmp_path / "colour" / "report.json").read_text())
    assert report["macs"] == 41_879_552 + 64 * 64 * 16 * 9 * 2  # the chroma planes' first layer
    main(["--export", "--val-scenes", "12", "--workers", "1", "--out", out])
    check = GlyphCheck(tmp_path / "colour" / "fu_glyph.int8.onnx", GlyphSpec("g", 0.5))
    assert check.channels == 3


def test_a_tiny_training_run_then_its_export(tmp_path: Path) -> None:
    out = str(tmp_path)
    main([*TINY_RUN, "--out", out])
    assert (tmp_path / "glyph.pt").is_file()
    report = json.loads((tmp_path / "report.json").read_text())
    assert {"threshold", "train_split", "held_out", "macs", "params"} <= report.keys()
    assert report["steps"] == 1 and report["crop_failure"] is None
    assert report["training_scenes"] == "cut_look_alikes=True"  # the mix, look-alikes cut
    assert 0.0 <= report["threshold"] <= 1.0
    assert report["macs"] == 41_879_552
    assert report["train_split"]["fu_crops"] > 0 and report["held_out"]["fu_crops"] > 0
    assert report["train_split"]["fu_pass"] >= glyph.PASS_TARGET

    main(["--export", "--val-scenes", "12", "--workers", "1", "--out", out])
    for name in ("fu_glyph.fp32.onnx", "fu_glyph.int8.onnx", "export.json"):
        assert (tmp_path / name).is_file()
    compared = json.loads((tmp_path / "export.json").read_text())
    assert compared["params"] == report["params"]
    for name in ("fu_glyph.fp32.onnx", "fu_glyph.int8.onnx"):
        for split in ("train_split", "held_out"):
            assert 0.0 <= compared[f"{name} {split}"]["fu_pass"] <= 1.0

    # shipped into a folder of cards: the files, and what describes them in the glyph card
    models = tmp_path / "models"
    models.mkdir()
    for card in ("fu_l.int8.json", "fu_glyph.int8.json"):
        shutil.copyfile(MODELS_DIR / card, models / card)
    described = {"provenance": {"training": "a tiny run", "rule": "none"}}
    (tmp_path / "fields.json").write_text(json.dumps(described))
    before = read_card_fields(models / "fu_glyph.int8.json")
    main(["--ship", str(models), "--describe", str(tmp_path / "fields.json"), "--out", out])
    shipped = read_card_fields(models / "fu_glyph.int8.json")
    assert shipped["provenance"] == before["provenance"] | described["provenance"]
    assert (shipped["macs"], shipped["params"]) == (report["macs"], report["params"])
    assert shipped["file_size"] == (tmp_path / "fu_glyph.int8.onnx").stat().st_size
    assert (shipped["min_score"], shipped["contexts"]) == (before["min_score"], before["contexts"])
    assert read_card_fields(models / "fu_l.int8.json") == read_card_fields(
        MODELS_DIR / "fu_l.int8.json"
    )  # a detector's card names the glyph card and is left alone
    assert read_card(models / "fu_l.int8.json").glyph_path == models / "fu_glyph.int8.onnx"
    for name in ("fu_glyph.fp32.onnx", "fu_glyph.int8.onnx"):
        assert (models / name).read_bytes() == (tmp_path / name).read_bytes()


@pytest.mark.parametrize(
    ("exported", "card", "message"),
    [
        (False, "fu_l.int8.json", "has no fu_glyph.fp32.onnx, fu_glyph.int8.onnx, export.json"),
        (True, "fu_s.int8.json", "has no fu_glyph.int8.json to ship into"),
    ],
)
def test_shipping_is_refused_without_an_export_or_a_card_to_ship_into(
    tmp_path: Path, exported: bool, card: str, message: str
) -> None:
    if exported:
        for name in ("fu_glyph.fp32.onnx", "fu_glyph.int8.onnx", "export.json"):
            (tmp_path / name).write_text("{}")
    models = tmp_path / "models"
    models.mkdir()
    shutil.copyfile(MODELS_DIR / card, models / card)
    with pytest.raises(SystemExit, match=message):
        main(["--ship", str(models), "--out", str(tmp_path)])
    assert sorted(p.name for p in models.iterdir()) == [card]  # nothing copied


@pytest.mark.parametrize(
    ("argv", "changes"),
    [
        ([], {}),
        (["--ornament-share", "0.25"], {"ornament_share": 0.25}),
        (["--bare-ink-share", "0.5", "--aimed"], {"bare_ink_share": 0.5, "aimed": True}),
        (
            ["--favoured-look-alikes", "逼", "--favoured-share", "0.3"],
            {"favoured_look_alikes": "逼", "favoured_share": 0.3},
        ),
    ],
)
def test_the_scene_flags_change_the_training_scenes_whose_look_alikes_stay_cut(
    argv: list[str], changes: dict[str, object]
) -> None:
    args = glyph.make_parser().parse_args(argv)
    assert training_scenes(args) == dataclasses.replace(SCENES, **changes)  # type: ignore[arg-type]


def test_cut_look_alikes_is_no_flag_of_glyph_training() -> None:
    with pytest.raises(SystemExit):
        glyph.make_parser().parse_args(["--cut-look-alikes"])  # always on


def test_scene_crops_are_cut_from_scenes_of_their_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []

    def render(*args: object) -> PosterScene:
        asked.append(args[-1])
        return render_posters(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(glyph, "render_posters", render)
    painted = dataclasses.replace(SCENES, ornament_share=1.0)
    crops, labels = scene_crops(1, options=painted)
    assert asked == [painted] and len(crops) == len(labels) > 0
    scene_crops(1)
    assert asked[-1] == SCENES


# --- the crop stream ---------------------------------------------------------------------------


def _chunks_then(failure: Exception | None, n_chunks: int = 2) -> Iterator[Crops]:
    """Chunks of four grey crops labelled 1, then ``failure`` raised (if any)."""
    for i in range(n_chunks):
        yield np.full((4, GLYPH_SIDE, GLYPH_SIDE), i, np.uint8), np.ones(4, np.uint8)
    if failure is not None:
        raise failure


def test_the_crop_stream_trains_on_what_its_workers_made_and_keeps_what_failed() -> None:
    stream = CropStream(_chunks_then(ValueError("a box beyond the frame")), 64, 1, CPU)
    with pytest.raises(
        RuntimeError,
        match=r"8 training crops, fewer than a batch of 9: "
        r"ValueError: a box beyond the frame \(after 8 crops\)",
    ):
        stream.batch(9)
    x, y = stream.batch(8)
    assert x.shape == (8, 1, GLYPH_SIDE, GLYPH_SIDE) and bool((y == 1).all())
    assert stream.failure == "ValueError: a box beyond the frame (after 8 crops)"


def test_a_crop_stream_that_made_every_chunk_has_no_failure_and_drops_what_has_no_room() -> None:
    stream = CropStream(_chunks_then(None, n_chunks=3), 10, 1, CPU)
    with pytest.raises(RuntimeError, match=r"^10 training crops, fewer than a batch of 11$"):
        stream.batch(11)
    assert stream.failure is None


@pytest.mark.parametrize(
    ("text", "message"),
    [(None, "No such file"), ("{not json", "Expecting property name"), ("[1]", "got list")],
)
def test_fields_to_describe_a_shipped_recognizer_must_be_a_json_object(
    tmp_path: Path, text: str | None, message: str
) -> None:
    fields = tmp_path / "fields.json"
    if text is not None:
        fields.write_text(text)
    with pytest.raises(SystemExit, match=message):
        main(["--ship", str(tmp_path), "--describe", str(fields), "--out", str(tmp_path)])
