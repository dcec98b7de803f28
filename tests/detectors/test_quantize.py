"""run.py quantize: a user's FP32 ONNX model and a folder of photos -> INT8 model and report."""

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from detectors import quantize
from detectors.card import MODELS_DIR, read_card
from detectors.shared_weights import read_model
from detectors.synth.scenes import render_scene


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("calib")
    for i in range(6):
        image = render_scene(123_000 + i, 640, 480, "train", "fu").image
        cv2.imwrite(str(folder / f"{i}.jpg"), image)
    (folder / "notes.txt").write_text("not an image")
    (folder / "broken.png").write_bytes(b"\x89PNG but cut off")
    return folder


def run_quantize(*argv: str) -> quantize.Report:
    parser = quantize.argparse.ArgumentParser()
    quantize.add_arguments(parser)
    return quantize.quantize_main(parser.parse_args([*argv, "--latency-runs", "2"]))


def test_a_carded_detector_gets_an_int8_model_card_and_report(tmp_path: Path, photos: Path) -> None:
    for name in ("fu_m.fp32.onnx", "fu_m.fp32.json", "fu_glyph.int8.json", "fu_glyph.int8.onnx"):
        shutil.copy(MODELS_DIR / name, tmp_path)  # the card and what it names
    out = tmp_path / "out"
    out.mkdir()
    int8 = out / "fu_m.int8.onnx"
    report = run_quantize(
        str(tmp_path / "fu_m.fp32.onnx"), "--calib", str(photos), "--out", str(int8)
    )
    card = read_card(int8.with_suffix(".json"))
    assert card.precision == "int8" and card.tier == "m"
    assert card.glyph_path == out / "fu_glyph.int8.onnx" and card.glyph_path.is_file()
    raw = json.loads(card.path.read_text())
    assert raw["fp32_model"] == "fu_m.fp32.onnx" and raw["file_size"] == int8.stat().st_size
    assert "metrics" not in raw  # the FP32 model's numbers are not the INT8 model's
    assert report.photos == 6  # the text file and the broken PNG are skipped
    assert report.int8_bytes < 0.35 * report.fp32_bytes
    assert set(report.outputs) == {"heatmap", "boxes"}
    assert report.outputs["heatmap"][0] > 0.95  # cosine similarity
    assert report.detections_kept is not None
    kept, total = report.detections_kept
    assert total > 0 and kept >= 0.8 * total
    assert "file bytes" in report.format()


def test_a_model_without_card_is_fed_by_the_given_preprocessing(
    tmp_path: Path, photos: Path
) -> None:
    model = tmp_path / "theirs.onnx"
    onnx.save(read_model(MODELS_DIR / "fu_s.fp32.onnx"), model)  # no donor beside it
    out = tmp_path / "theirs-int8.onnx"
    report = run_quantize(
        str(model), "--calib", str(photos), "--out", str(out), "--resize", "letterbox"
    )
    assert out.exists() and not out.with_suffix(".json").exists()
    assert report.detections_kept is None
    assert report.outputs["heatmap"][0] > 0.9


def test_input_format_makes_nchw_floats_with_mean_and_std() -> None:
    fmt = quantize.InputFormat(4, 2, "stretch", 1.0, (1.0, 2.0, 3.0), (2.0, 2.0, 2.0), "RGB")
    image = np.zeros((8, 8, 3), np.uint8)
    image[:] = (30, 20, 10)  # BGR
    tensor = fmt(image)
    assert tensor.shape == (1, 3, 2, 4) and tensor.dtype == np.float32
    assert tensor[0, :, 0, 0].tolist() == [(10 - 1) / 2, (20 - 2) / 2, (30 - 3) / 2]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing model", "does not exist"),
        ("not onnx", "not a loadable ONNX model"),
        ("empty folder", "no readable image"),
        ("missing folder", "calibration folder"),
        ("overwrite", "must not overwrite"),
    ],
)
def test_unusable_input_is_refused_with_a_reason(
    tmp_path: Path, photos: Path, setup: str, message: str
) -> None:
    model = tmp_path / "m.onnx"
    onnx.save(read_model(MODELS_DIR / "fu_s.fp32.onnx"), model)  # no donor beside it
    calib = photos
    extra: list[str] = []
    if setup == "missing model":
        model = tmp_path / "absent.onnx"
    elif setup == "not onnx":
        model.write_bytes(b"not a model")
    elif setup == "empty folder":
        calib = tmp_path / "empty"
        calib.mkdir()
    elif setup == "missing folder":
        calib = tmp_path / "absent"
    else:
        extra = ["--out", str(model)]
    with pytest.raises(quantize.QuantizeError, match=message):
        run_quantize(str(model), "--calib", str(calib), *extra)
