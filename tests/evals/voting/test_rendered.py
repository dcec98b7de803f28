import dataclasses
from pathlib import Path

import pytest

from detectors.card import InputSpec, ModelCard, ZoomSpec, find_card
from detectors.core import Detector
from detectors.onnx_detector import OnnxDetector
from detectors.synth.backgrounds import PACK_ENV
from detectors.synth.scenes import SceneOptions, make_clip
from evals.voting.rendered import (
    clip_path,
    detected_clip,
    detector_fingerprint,
    generator_fingerprint,
    render_missing,
    synth_cache_name,
)
from voting.simulate import BASE_FPS, FRAME_H, FRAME_W


def _never() -> Detector:
    raise AssertionError("cached clips must not need a detector")


def card_in(folder: Path, model: bytes = b"weights", **fields) -> ModelCard:
    path = folder / "fu_t.int8.json"
    path.with_suffix(".onnx").write_bytes(model)
    spec = InputSpec("images", 320, 240)
    card = ModelCard(path, "t", "int8", ("fu",), spec, "heatmap", "boxes", 8, 0.6)
    return dataclasses.replace(card, **fields)


@pytest.mark.parametrize(
    ("model", "fields", "runtime"),
    [
        (b"retrained", {}, "ort 1"),
        (b"weights", {"threshold": 0.63}, "ort 1"),
        (b"weights", {"input": InputSpec("images", 640, 480)}, "ort 1"),
        (b"weights", {"stride": 4}, "ort 1"),
        (b"weights", {"zoom": ZoomSpec()}, "ort 1"),
        (b"weights", {}, "ort 2"),
    ],
)
def test_detector_fingerprint_changes_with_what_detections_depend_on(
    tmp_path, model, fields, runtime
):
    base = detector_fingerprint(card_in(tmp_path), "ort 1")
    assert detector_fingerprint(card_in(tmp_path), "ort 1") == base
    assert detector_fingerprint(card_in(tmp_path, model, **fields), runtime) != base


@pytest.mark.parametrize(
    "zoom", [ZoomSpec(out_fill=0.5), ZoomSpec(extra_fills=(0.6,)), ZoomSpec(min_zoom=1.5)]
)
def test_detector_fingerprint_changes_with_how_close_ups_are_taken(tmp_path, zoom):
    default = detector_fingerprint(card_in(tmp_path, zoom=ZoomSpec()), "ort")
    assert detector_fingerprint(card_in(tmp_path, zoom=zoom), "ort") != default


def test_detector_fingerprint_changes_with_the_turned_check(tmp_path):
    plain = detector_fingerprint(card_in(tmp_path, zoom=ZoomSpec()), "ort")
    checked = detector_fingerprint(card_in(tmp_path, zoom=ZoomSpec(turned_min=0.4)), "ort")
    assert checked != plain


def test_detector_fingerprint_changes_with_the_code_that_runs_the_model(tmp_path):
    card, code = card_in(tmp_path), tmp_path / "onnx_detector.py"
    code.write_text("THRESHOLD = 0.5\n")
    base = detector_fingerprint(card, "ort", [code])
    assert detector_fingerprint(card, "ort", [code]) == base
    code.write_text("THRESHOLD = 0.6\n")
    assert detector_fingerprint(card, "ort", [code]) != base


def test_detector_fingerprint_ignores_measured_numbers(tmp_path):
    card = card_in(tmp_path)
    remeasured = dataclasses.replace(card, metrics={"ap50": 0.99}, macs=1)
    assert detector_fingerprint(remeasured, "ort") == detector_fingerprint(card, "ort")


def test_generator_fingerprint_covers_every_file(tmp_path):
    (tmp_path / "scenes.py").write_text("A = 1\n")
    (tmp_path / "bank.npz").write_bytes(b"glyphs")
    base = generator_fingerprint(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "scenes.pyc").write_bytes(b"compiled")
    assert generator_fingerprint(tmp_path) == base  # compiled files say nothing new
    (tmp_path / "bank.npz").write_bytes(b"more glyphs")
    assert generator_fingerprint(tmp_path) != base


def test_generator_fingerprint_tells_a_background_pack_from_the_photo_files(tmp_path, monkeypatch):
    package, pack = tmp_path / "synth", tmp_path / "pack.npz"
    package.mkdir()
    (package / "scenes.py").write_text("A = 1\n")
    files = generator_fingerprint(package)
    pack.write_bytes(b"jpeg photos")
    monkeypatch.setenv(PACK_ENV, str(pack))
    packed = generator_fingerprint(package)
    pack.write_bytes(b"other jpeg photos")
    assert len({files, packed, generator_fingerprint(package)}) == 3
    monkeypatch.delenv(PACK_ENV)
    assert generator_fingerprint(package) == files


def test_synth_cache_name_names_tier_precision_and_both_versions():
    name = synth_cache_name(find_card("l", "int8"))
    tier, precision, model, generator = name.split("-")
    assert (tier, precision) == ("l", "int8")
    assert generator == generator_fingerprint()
    assert len(model) == 16


def test_synth_cache_name_names_scene_options_away_from_the_mix():
    card = find_card("l", "int8")
    mix = synth_cache_name(card)
    assert synth_cache_name(card, SceneOptions()) == mix  # the mix keeps its caches
    close = synth_cache_name(card, SceneOptions(glyph_fill=(0.6, 0.9), aimed=True))
    aimed = synth_cache_name(card, SceneOptions(aimed=True))
    assert close.startswith(f"{mix}-scenes-") and aimed.startswith(f"{mix}-scenes-")
    assert len({mix, close, aimed}) == 3


def test_a_clip_rendered_with_scene_options_is_the_generators_clip_with_them(tmp_path):
    card = find_card("s", "int8")
    options = SceneOptions(glyph_fill=(0.7, 0.75), aimed=True)
    name, n_frames = synth_cache_name(card, options), 2
    assert render_missing([card], [("fu", 3)], n_frames / 30, tmp_path, 2, options) == 1
    cached = detected_clip(_never, name, 3, "fu", n_frames / 30, tmp_path, options)
    frames = make_clip(3, n_frames, BASE_FPS, FRAME_W, FRAME_H, "fu", options)
    (truth,) = cached.objects
    assert truth.boxes[0] == pytest.approx(tuple(frames.boxes[0][0].tolist()), abs=1e-3)
    assert truth.boxes[0][3] - truth.boxes[0][1] > 0.6 * FRAME_H


def test_render_missing_fills_the_cache_in_worker_processes_as_one_process_would(tmp_path):
    card = find_card("s", "int8")
    name, n_frames = synth_cache_name(card), 6
    specs = [("fu", 3), ("negative", 3)]
    made = render_missing([card], specs, seconds=n_frames / 30, cache=tmp_path, jobs=2)
    assert made == 2
    assert all(clip_path(tmp_path, name, k, s, n_frames).exists() for k, s in specs)
    assert render_missing([card], specs, seconds=n_frames / 30, cache=tmp_path, jobs=2) == 0

    cached = detected_clip(_never, name, 3, "fu", n_frames / 30, tmp_path)
    fresh = detected_clip(lambda: OnnxDetector(card), name, 3, "fu", n_frames / 30, None)
    assert cached.detections == fresh.detections
    assert cached.check is None  # the s card offers no check


def test_render_missing_renders_a_clip_once_for_the_cards_that_lack_it(tmp_path):
    small, large = find_card("s", "int8"), find_card("l", "int8")
    n_frames, seconds = 4, 4 / 30
    assert render_missing([small], [("fu", 5)], seconds, tmp_path, jobs=2) == 1
    # ("fu", 5) only for l, ("fu", 6) for both: two clips rendered, three caches filled
    assert render_missing([small, large], [("fu", 5), ("fu", 6)], seconds, tmp_path, 2) == 2
    assert render_missing([small, large], [("fu", 5), ("fu", 6)], seconds, tmp_path, 2) == 0
    for card in (small, large):
        name = synth_cache_name(card)
        cached = detected_clip(_never, name, 6, "fu", seconds, tmp_path)
        fresh = detected_clip(lambda card=card: OnnxDetector(card), name, 6, "fu", seconds, None)
        assert cached.detections == fresh.detections
        assert (cached.check is None) == (card is small)  # only l has a glyph check
        assert clip_path(tmp_path, name, "fu", 5, n_frames).exists()


def test_cached_clips_keep_the_check_of_every_detection_for_the_voter_to_ask(tmp_path):
    card = find_card("l", "int8")
    name, n_frames = synth_cache_name(card), 4
    detector = OnnxDetector(card)
    fresh = detected_clip(lambda: detector, name, 3, "fu", n_frames / 30, tmp_path)
    cached = detected_clip(_never, name, 3, "fu", n_frames / 30, tmp_path)
    assert cached.check is not None and cached.check == fresh.check
    frames = make_clip(3, n_frames, BASE_FPS, FRAME_W, FRAME_H, content="fu").frames
    for i, frame in enumerate(frames):
        own = detector.confirmer(frame)
        assert own is not None and cached.detections[i]
        for found in cached.detections[i]:
            assert cached.check.scores[i][found] == own.check(found)
            confirm = cached.confirmer(i)
            assert confirm is not None and confirm(found) == own(found)


def test_detector_fingerprint_covers_the_weights_a_file_borrows(tmp_path):
    shipped = find_card("s", "fp32")
    for name in ("fu_s.fp32.onnx", "fu_s.fp32.json", "fu_l.fp32.onnx"):
        (tmp_path / name).write_bytes((shipped.path.parent / name).read_bytes())
    card = dataclasses.replace(shipped, path=tmp_path / "fu_s.fp32.json")
    before = detector_fingerprint(card, "ort")
    donor = tmp_path / "fu_l.fp32.onnx"
    donor.write_bytes(donor.read_bytes() + b"\0")
    assert detector_fingerprint(card, "ort") != before
