"""run.py eval-model: AP50 arithmetic, threshold picking and the printed table."""

import json
import math
import shutil
import types
from pathlib import Path

import numpy as np
import pytest

import run
from detectors.card import MODELS_DIR, find_card, read_card
from detectors.core import Detection, Detections
from detectors.synth.scenes import SceneOptions
from evals.detectors import evaluate


@pytest.mark.parametrize(
    ("scored", "positives", "expected"),
    [
        ([(0.9, True), (0.8, True)], 2, 1.0),
        ([(0.9, True), (0.8, False)], 2, 0.5),  # half the boxes found, precision 1 there
        ([(0.9, False), (0.8, True)], 1, 0.5),  # found at rank 2: precision 0.5
        ([], 3, 0.0),
        ([(0.9, True)], 0, math.nan),
    ],
)
def test_average_precision(
    scored: list[tuple[float, bool]], positives: int, expected: float
) -> None:
    ap = evaluate.average_precision(scored, positives)
    assert (math.isnan(ap) and math.isnan(expected)) or ap == pytest.approx(expected)


def test_pick_thresholds_meets_the_rate_on_the_scenes_it_saw() -> None:
    card = find_card("s", "int8")
    pick = evaluate.pick_thresholds([card], scenes=6, max_fp_rate=0.0)[card.path]
    assert pick.threshold in evaluate.THRESHOLD_GRID
    assert pick.fp_rate == 0.0
    assert 0.0 <= pick.recall <= 1.0


@pytest.fixture
def s_int8_dir(tmp_path: Path) -> Path:
    """A models folder holding a copy of the shipped ``fu_s.int8`` (the quickest tier)."""
    for suffix in (".onnx", ".json"):
        shutil.copy(MODELS_DIR / f"fu_s.int8{suffix}", tmp_path)
    return tmp_path


def test_eval_model_prints_a_row_per_model_and_writes_picked_thresholds(
    s_int8_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--models-dir", str(s_int8_dir), "--scenes", "3", "--latency-runs", "1"]
    assert run.main(["eval-model", *argv, "--pick-thresholds", "0.5", "--write-cards"]) == 0
    out = capsys.readouterr().out
    assert "fu_s.int8" in out and "AP50" in out
    assert f"thresholds written into 1 card(s) in {s_int8_dir}" in out
    card = read_card(s_int8_dir / "fu_s.int8.json")
    assert card.threshold in evaluate.THRESHOLD_GRID
    raw = json.loads(card.path.read_text(encoding="utf-8"))
    assert "--pick-thresholds 0.5" in raw["provenance"]["threshold_rule"]
    assert raw["provenance"]["metrics_command"].startswith("python run.py eval-model")
    assert set(card.metrics) >= {"ap50", "hard_negative_fp_rate", "latency_ms", "frame_ms"}
    assert card.metrics["frame_ms_p90"] >= card.metrics["frame_ms"] > 0
    assert 0.0 <= card.metrics["ap50"] <= 1.0


SQUARE = (100.0, 60.0, 140.0, 100.0)


def square_scene() -> tuple[np.ndarray, np.ndarray]:
    image = np.zeros((240, 320, 3), np.uint8)
    x0, y0, x1, y1 = (int(v) for v in SQUARE)
    image[y0:y1, x0:x1] = 255
    return image, np.array([SQUARE], np.float32)


@pytest.mark.parametrize(("dx", "dy"), evaluate.SHIFTS)
def test_a_shifted_scene_moves_its_pixels_and_boxes_alike(dx: int, dy: int) -> None:
    image, boxes = square_scene()
    moved, moved_boxes = evaluate.shifted(image, boxes, dx, dy)
    ys, xs = np.nonzero(moved[..., 0])
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == tuple(moved_boxes[0])


class ParityDetector:
    """Finds the white square, sure of it only where its left edge falls on an even pixel."""

    card = types.SimpleNamespace(threshold=0.5)

    def detect(self, image: np.ndarray) -> Detections:
        ys, xs = np.nonzero(image[..., 0])
        box = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
        return Detections((Detection("fu", 0.9 if xs.min() % 2 == 0 else 0.3, box),))


def test_shift_stability_counts_a_verdict_that_flips_with_a_pixel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(evaluate, "held_out", lambda *_: [(*square_scene(), None)])
    path = Path("parity")
    got = evaluate.shift_stability({path: ParityDetector()}, scenes=1)[path]
    assert (got.objects, got.found, got.toggled) == (1, 1, 1)
    assert got.toggle_rate == 1.0
    assert got.spread == pytest.approx(0.6) and got.spread_p90 == pytest.approx(0.6)


def test_eval_model_prints_the_shift_table_when_asked(
    s_int8_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--models-dir", str(s_int8_dir), "--scenes", "4", "--latency-runs", "1"]
    # of bare-ink scenes alone, as a retrain for them is judged
    assert run.main(["eval-model", *argv, "--shift-stability", "--bare-ink-share", "1"]) == 0
    table = capsys.readouterr().out.split("under small shifts")[1].splitlines()[2:]
    (row,) = table
    name, objects, found, flicker, spread, p90 = row.split()
    assert name == "fu_s.int8" and int(found) <= int(objects)
    assert math.isnan(float(flicker)) or 0.0 <= float(flicker) <= 1.0
    assert float(spread) <= float(p90)


def test_held_out_scenes_follow_the_scene_options() -> None:
    plain = list(evaluate.held_out("mixed", 4))
    bare = list(evaluate.held_out("mixed", 4, "eval", SceneOptions(bare_ink_share=1.0)))
    assert not all(np.array_equal(a.image, b.image) for a, b in zip(plain, bare, strict=True))


@pytest.mark.parametrize("writes", [["--write-cards"], ["--pick-thresholds", "0.01"]])
def test_eval_model_writes_no_card_from_another_mix(
    writes: list[str], s_int8_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        run.main(
            ["eval-model", "--models-dir", str(s_int8_dir), *writes, "--upside-down-share", "0.9"]
        )
    assert "no scene options with them" in capsys.readouterr().err
