"""The shipped 福 models: cards agree with the files, and INT8 finds 福 in held-out frames."""

import json

import numpy as np
import onnxruntime as ort
import pytest

from detectors.card import MODELS_DIR, find_card, list_cards
from detectors.core import BadImageError, iou
from detectors.onnx_detector import load_detector
from detectors.shared_weights import check_donors, model_files, read_model
from detectors.synth.scenes import make_clip

CARDS = [c for c in list_cards() if c.model_path.name.startswith("fu_")]
TIERS = sorted({c.tier for c in CARDS})


def test_every_tier_ships_fp32_and_int8() -> None:
    assert set(TIERS) == {"s", "m", "l"}
    for tier in TIERS:
        assert find_card(tier, "fp32").input == find_card(tier, "int8").input


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.model_path.name)
def test_card_matches_its_file(card) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(card.path.read_text(encoding="utf-8"))
    assert raw["file_size"] == card.model_path.stat().st_size
    assert card.classes == ("fu",)
    assert card.model_path.name == f"fu_{card.tier}.{card.precision}.onnx"
    assert card.macs > 0 and card.params > 0 and 0 < card.threshold < 1
    assert {"command"} <= set(raw["provenance"]["training"])
    if card.precision == "int8":
        fp32 = MODELS_DIR / raw["fp32_model"]
        assert fp32.exists()
        # Against the weights the FP32 file loads, which may live in another file.
        assert card.model_path.stat().st_size <= 0.3 * read_model(fp32).ByteSize()
    if "weights_from" in raw:
        assert model_files(card.model_path) == [card.model_path, MODELS_DIR / raw["weights_from"]]
        check_donors(card.model_path)
    if card.glyph_path is not None:
        glyph = json.loads((MODELS_DIR / raw["glyph"]["card"]).read_text(encoding="utf-8"))
        assert glyph["file_size"] == card.glyph_path.stat().st_size
        assert (card.glyph_path.parent / glyph["fp32_model"]).exists()


def test_a_tier_as_wide_as_l_stores_only_what_differs() -> None:
    """s runs l's channels (its own batch norm, half the input side): its FP32 file borrows."""
    s, widest = find_card("s", "fp32"), find_card("l", "fp32")
    assert model_files(s.model_path) == [s.model_path, widest.model_path]
    assert s.model_path.stat().st_size < 0.05 * widest.model_path.stat().st_size
    x = np.random.default_rng(0).random((1, 3, s.input.height, s.input.width), np.float32)
    runs = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"images": x})
        for model in (str(s.model_path), read_model(s.model_path).SerializeToString())
    ]
    for borrowed, plain in zip(*runs, strict=True):
        np.testing.assert_allclose(borrowed, plain, rtol=1e-4, atol=1e-4)


def test_models_stay_small() -> None:
    total = sum(c.model_path.stat().st_size for c in CARDS)
    assert total < 5_000_000


@pytest.mark.parametrize(("tier", "min_found"), [("s", 0.6), ("m", 0.75), ("l", 0.9)])
def test_int8_finds_fu_in_held_out_frames(tier: str, min_found: float) -> None:
    detector = load_detector(tier, "int8")
    found = 0
    frames = 0
    for seed in range(3):
        clip = make_clip(seed, n_frames=4, content="fu")
        for frame, truth in zip(clip.frames, clip.boxes, strict=True):
            frames += 1
            detections = detector.detect(frame)
            assert detections.frame == (640, 480)  # the voter tells boxes cut by the edge by it
            hits = [d for d in detections if iou(d.box, tuple(truth[0])) >= 0.5]
            found += bool(hits)
    assert found >= min_found * frames


@pytest.mark.parametrize("tier", ["s", "m", "l"])
def test_int8_stays_quiet_on_empty_frames(tier: str) -> None:
    detector = load_detector(tier, "int8")
    fired = sum(
        len(detector.detect(frame)) > 0
        for seed in range(3)
        for frame in make_clip(100 + seed, n_frames=4, content="empty").frames
    )
    assert fired == 0
    assert len(detector.detect(np.zeros((480, 640, 3), np.uint8))) == 0


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ([[0, 0, 0]], "numpy array"),
        (np.zeros((48, 64, 3), np.float32), "uint8"),
        (np.zeros((48, 64), np.uint8), "H x W x 3"),
        (np.zeros((48, 64, 4), np.uint8), "H x W x 3"),
        (np.zeros((0, 64, 3), np.uint8), "empty"),
        (np.zeros((1, 4096 * 4096 + 1, 3), np.uint8), "limit"),
    ],
    ids=["list", "float", "grey", "bgra", "empty", "huge"],
)
def test_bad_images_are_refused_with_a_clear_error(image: object, message: str) -> None:
    with pytest.raises(BadImageError, match=message):
        load_detector("s", "int8").detect(image)  # type: ignore[arg-type]
