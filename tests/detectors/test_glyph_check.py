"""The glyph check: its crops, its card field, and how the detector's confirmer asks it.

A stand-in recognizer built here with ``onnx.helper`` (no torch needed) scores a
crop by its mean level (over its channels: grey, or BGR), or by a constant, so that
each rule can be checked exactly.
"""

import dataclasses
import shutil
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from detectors.card import GlyphSpec, ModelCardError, find_card
from detectors.core import Detection
from detectors.glyph_check import GLYPH_PAD, GlyphCheck, crop_tensor, glyph_crop, glyph_region
from detectors.onnx_detector import GLYPH_REFUSED, OnnxDetector
from detectors.synth.scenes import make_clip


def stand_in(path: Path, constant: float | None = None, channels: int = 1) -> Path:
    """A recognizer of ``channels`` whose score is each crop's mean level (0..1), or
    ``constant``."""
    crops = helper.make_tensor_value_info("crops", TensorProto.FLOAT, ["n", channels, 64, 64])
    fu = helper.make_tensor_value_info("fu", TensorProto.FLOAT, ["n", 1])
    weight = 0.0 if constant is not None else 1.0
    nodes = [
        helper.make_node("ReduceMean", ["crops", "axes"], ["mean"], keepdims=0),
        helper.make_node("Reshape", ["mean", "shape"], ["column"]),
        helper.make_node("Mul", ["column", "weight"], ["scaled"]),
        helper.make_node("Add", ["scaled", "offset"], ["fu"]),
    ]
    initializers = [
        helper.make_tensor("axes", TensorProto.INT64, [3], [1, 2, 3]),
        helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 1]),
        helper.make_tensor("weight", TensorProto.FLOAT, [], [weight]),
        helper.make_tensor("offset", TensorProto.FLOAT, [], [constant or 0.0]),
    ]
    graph = helper.make_graph(nodes, "stand_in", [crops], [fu], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    ("box", "context", "region"),
    [
        ((10, 20, 50, 60), 1.0, (10, 20, 50, 60)),  # a square box at context 1 is itself
        ((10, 20, 50, 60), 1.5, (0, 10, 60, 70)),  # wider by half, about the same centre
        ((0, 0, 40, 20), 1.25, (-5, -15, 45, 35)),  # the longer side sets the square
        ((5, 5, 5, 5), 1.25, (4, 4, 5, 5)),  # an empty box still gets a pixel
    ],
)
def test_glyph_region(box, context, region) -> None:  # type: ignore[no-untyped-def]
    assert glyph_region(box, context) == region


def test_a_crop_is_grey_at_the_asked_side_and_padded_past_the_frame() -> None:
    image = np.zeros((100, 100, 3), np.uint8)
    image[:, :, 2] = 255  # red: grey 76 under BT.601
    crop = glyph_crop(image, (0.0, 0.0, 40.0, 40.0), side=32, context=2.0)
    assert crop.shape == (32, 32) and crop.dtype == np.uint8
    # The region is (-20, -20, 60, 60): its top-left quarter lies past the frame.
    assert crop[0, 0] == GLYPH_PAD and crop[-1, -1] == 76
    assert abs(int(glyph_crop(image, (10, 10, 90, 90), side=16)[8, 8]) - 76) <= 1


def test_a_colour_crop_keeps_the_frames_bgr_and_greys_as_the_grey_crop() -> None:
    image = np.zeros((100, 100, 3), np.uint8)
    image[:, :50] = (200, 40, 10)  # blue on the left
    image[:, 50:] = (10, 60, 220)  # red on the right
    box = (0.0, 0.0, 100.0, 50.0)  # the top half; at 1.25 the crop reaches above the frame
    colour = glyph_crop(image, box, side=32, channels=3)
    assert colour.shape == (32, 32, 3) and colour.dtype == np.uint8
    assert colour[0, 16].tolist() == [GLYPH_PAD] * 3  # past the frame: grey in every channel
    assert colour[-1, 8].tolist() == [200, 40, 10] and colour[-1, -8].tolist() == [10, 60, 220]
    grey = glyph_crop(image, box, side=32)
    assert np.abs(cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY).astype(int) - grey).max() <= 1


@pytest.mark.parametrize("channels", [0, 2, 4])
def test_a_crop_of_other_than_1_or_3_channels_is_refused(channels: int) -> None:
    with pytest.raises(ValueError, match="1 or 3 channels"):
        glyph_crop(np.zeros((40, 40, 3), np.uint8), (0, 0, 20, 20), channels=channels)


@pytest.mark.parametrize(
    ("shape", "tensor_shape"),
    [((2, 8, 8), (2, 1, 8, 8)), ((2, 8, 8, 3), (2, 3, 8, 8)), ((0, 8, 8, 3), (0, 3, 8, 8))],
)
def test_crops_become_channels_first_floats(shape, tensor_shape) -> None:  # type: ignore[no-untyped-def]
    crops = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    tensor = crop_tensor(crops)
    assert tensor.shape == tensor_shape and tensor.dtype == np.float32
    channels_last = tensor[:, 0] if len(shape) == 3 else tensor.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(channels_last * 255, crops, atol=1e-4)


@pytest.mark.parametrize(("channels", "score"), [(1, 29 / 255), (3, 1 / 3)])
def test_the_check_reads_the_channels_its_recognizer_asks_for(  # type: ignore[no-untyped-def]
    tmp_path, channels, score
) -> None:
    check = GlyphCheck(stand_in(tmp_path / "g.onnx", channels=channels), GlyphSpec("g.onnx", 0.5))
    assert check.channels == channels
    image = np.zeros((200, 200, 3), np.uint8)
    image[:] = (255, 0, 0)  # pure blue: grey 29 under BT.601, a third of the colour crop's level
    assert check.score(image, (50.0, 50.0, 150.0, 150.0)) == pytest.approx(score, abs=0.005)


def test_a_recognizer_of_other_channels_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"g\.onnx: a glyph check reads 1 or 3 channels"):
        GlyphCheck(stand_in(tmp_path / "g.onnx", channels=2), GlyphSpec("g.onnx", 0.5))


@pytest.mark.parametrize(
    ("contexts", "expected"),
    [
        ((1.0,), 1.0),  # the box alone: all white
        ((2.0,), 0.25),  # a quarter of the crop is the white box
        ((1.0, 2.0), 0.25),  # the least view decides
    ],
)
def test_the_score_is_the_least_over_the_views(  # type: ignore[no-untyped-def]
    tmp_path, contexts, expected
) -> None:
    check = GlyphCheck(stand_in(tmp_path / "g.onnx"), GlyphSpec("g.onnx", 0.5, 64, contexts))
    image = np.zeros((400, 400, 3), np.uint8)
    image[100:200, 100:200] = 255
    assert check.score(image, (100.0, 100.0, 200.0, 200.0)) == pytest.approx(expected, abs=0.02)


def with_glyph(
    tmp_path: Path,
    constant: float,
    card_threshold: float | None = None,
    threshold: float | None = None,
    changes: dict[str, object] | None = None,
    **fields: object,
) -> OnnxDetector:
    """The shipped ``l`` INT8 detector, copied beside a stand-in glyph check scoring
    ``constant``, at a tenth of a detector run a view; its card's threshold
    ``card_threshold`` (default: the shipped one) and other fields ``changes``, run at
    ``threshold`` (default: the card's)."""
    card = find_card("l", "int8")
    copy = tmp_path / card.path.name
    shutil.copy(card.model_path, copy.with_suffix(".onnx"))
    stand_in(tmp_path / "g.onnx", constant)
    spec = GlyphSpec("g.onnx", 0.5, macs=card.macs // 10, **fields)  # type: ignore[arg-type]
    card = dataclasses.replace(
        card, path=copy, glyph=spec, threshold=card_threshold or card.threshold, **(changes or {})
    )
    return OnnxDetector(card, threshold=threshold)


@pytest.fixture(scope="module")
def fu_frame() -> np.ndarray:
    return make_clip(5, 1).frames[0]  # a small 福 the turned check confirms (test_zoom.py)


def test_a_detection_the_glyph_check_refuses_is_refused_before_the_turned_check(
    tmp_path, fu_frame
) -> None:  # type: ignore[no-untyped-def]
    detector = with_glyph(tmp_path, 0.2)
    (found,) = detector.detect(fu_frame).items
    confirmer = detector.confirmer(fu_frame)
    assert confirmer is not None
    assert confirmer.check(found) == GLYPH_REFUSED
    assert not confirmer(found)
    assert confirmer.runs == pytest.approx(0.1, rel=0.01)  # one view; the close-up never ran


@pytest.mark.parametrize(("turned_min", "expected"), [(0.4, None), (None, 1.0)])
def test_a_detection_the_glyph_check_passes_gets_the_turned_checks_score(  # type: ignore[no-untyped-def]
    tmp_path, fu_frame, turned_min, expected
) -> None:
    zoom = find_card("l", "int8").zoom
    assert zoom is not None
    changes = {"zoom": dataclasses.replace(zoom, turned_min=turned_min)}
    detector = with_glyph(tmp_path, 0.9, changes=changes, contexts=(1.1, 1.2, 1.3, 1.4))
    (found,) = detector.detect(fu_frame).items
    confirmer = detector.confirmer(fu_frame)
    assert confirmer is not None and confirmer(found)
    score = confirmer.check(found)
    if expected is None:
        assert detector.close_ups is not None
        assert score == detector.close_ups.turned_score(fu_frame, found, 0.1) >= 0.4
    else:
        assert score == expected and confirmer.min_score == 0.0
    # Four views of a tenth of a run each, and the turned check's close-up if the card has one
    close_up = 0.0 if turned_min is None else 1.0
    assert detector.glyph is not None
    assert detector.glyph.work == pytest.approx(0.4, rel=0.01)
    assert confirmer.work == pytest.approx(0.4 + close_up, rel=0.01)
    assert confirmer.runs == confirmer.work  # a check that passed ran every stage


def test_other_labels_pass_without_a_glyph_check(tmp_path, fu_frame) -> None:  # type: ignore[no-untyped-def]
    detector = with_glyph(tmp_path, 0.0)
    confirmer = detector.confirmer(fu_frame)
    assert confirmer is not None and confirmer(Detection("poster-7", 0.9, (0, 0, 10, 10)))
    assert confirmer.runs == 0


def test_a_card_whose_glyph_check_is_missing_says_so(tmp_path: Path) -> None:
    card = find_card("l", "int8")
    copy = tmp_path / card.path.name
    shutil.copy(card.model_path, copy.with_suffix(".onnx"))
    with pytest.raises(
        ModelCardError, match=r"glyph check fu_glyph\.int8\.onnx, which is not beside"
    ):
        OnnxDetector(dataclasses.replace(card, path=copy))


def test_the_shipped_cards_of_both_profiles_tiers_carry_the_glyph_check() -> None:
    for tier, precision in (("l", "int8"), ("m", "fp32")):
        card = find_card(tier, precision)
        assert card.glyph is not None and card.glyph_path is not None
        assert card.glyph_path.is_file() and card.glyph.views == 3
    assert find_card("s", "int8").glyph is None  # not measured with s (docs/detector.md)


UNDER = 0.9999
"""A card threshold over what the shipped detector scores ``fu_frame``'s 福 (0.9-0.99), so that
it is a candidate under the threshold; the stand-in glyph check decides its rescue."""
SURE = 0.99995
"""A score between ``UNDER`` and 1 that a rescue the check is sure of is reported at."""


@pytest.mark.parametrize(
    ("glyph", "card_threshold", "rescue_from", "threshold", "score", "checks"),
    [
        (0.95, UNDER, 0.3, None, UNDER, 1),  # read as 福: raised to the card's threshold
        (0.95, UNDER, 0.99999, None, None, 0),  # its close-up scores under rescue_from
        (0.95, UNDER, None, None, None, 0),  # no rescue on the card
        (0.5, UNDER, 0.3, None, None, 1),  # the recognizer unsure (under rescue_min): dropped
        (0.0, None, 0.3, None, "own", 0),  # over the card's threshold: reported unchecked
        # eval-model's curve keeps low scores: the rescue is at the card's threshold...
        (0.95, UNDER, 0.3, 0.05, UNDER, 1),
        # ...and one it refuses keeps its own score there
        (0.5, UNDER, 0.3, 0.05, "own", 1),
    ],
)
def test_a_candidate_under_the_threshold_is_rescued_if_the_glyph_check_reads_it_as_fu(  # type: ignore[no-untyped-def]
    tmp_path, fu_frame, glyph, card_threshold, rescue_from, threshold, score, checks
) -> None:
    plain = with_glyph(tmp_path, 0.0)
    (own,) = plain.detect(fu_frame).items
    assert 0.69 <= own.score < UNDER
    detector = with_glyph(
        tmp_path, glyph, card_threshold, threshold, contexts=(1.1, 1.3), rescue_from=rescue_from
    )
    found = detector.detect(fu_frame)
    expected = {None: None, "own": own.score}.get(score, score)  # type: ignore[call-overload]
    assert [d.score for d in found] == ([] if expected is None else [expected])
    if expected is not None:
        assert found.items[0].box == own.box  # the close-up's box, as without a rescue
    # each check is charged its two views (a tenth of a run each) beside both looks
    assert found.runs == pytest.approx(plain.detect(fu_frame).runs + checks * 0.2, rel=1e-3)


@pytest.mark.parametrize(
    ("glyph", "threshold", "score"),
    [
        (0.995, None, SURE),  # every view at rescue_sure_min: the sure score
        (0.95, None, UNDER),  # read as 福, not surely: the card's threshold
        (0.995, 0.05, SURE),  # eval-model's curve: the same scores
    ],
)
def test_a_rescue_the_glyph_check_is_sure_of_is_reported_at_its_score(  # type: ignore[no-untyped-def]
    tmp_path, fu_frame, glyph, threshold, score
) -> None:
    sure = {"rescue_sure_min": 0.99, "rescue_sure_score": SURE}
    detector = with_glyph(tmp_path, glyph, UNDER, threshold, rescue_from=0.3, **sure)
    assert [d.score for d in detector.detect(fu_frame)] == [score]
