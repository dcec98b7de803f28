"""eval-real on a tiny set written here: the clips, the report's rows, recognition through the
session, the stage that lost a forced miss, and determinism by the seed."""

import dataclasses
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

import run as run_py
from detectors.card import MODELS_DIR, find_card, read_card_fields, write_card
from detectors.onnx_detector import OnnxDetector
from detectors.synth.bank import load_glyphs
from evals.detectors.evaluate import held_out
from evals.real import (
    STAGES,
    ClipSpec,
    Evaluator,
    RunConfig,
    clip_specs,
    frame_hits,
    stage_reached,
)
from evals.real_scenes import RealClip, RealSetError, ink_box, load_set, scene_clip, style_group
from evals.voting.evaluate import real_source
from hw_sim import get_profile

SIZE = (640, 360)
FPS = 15.0
SECONDS = 1.5


def character(char: str, paper: tuple[int, int, int], ink: tuple[int, int, int]) -> np.ndarray:
    """A 240 x 240 picture of ``char`` from the held-out fonts of the glyph bank, on paper."""
    glyphs = load_glyphs("eval")
    if char == "福":
        mask = glyphs.target[0]
    else:
        mask = glyphs.negatives[list(glyphs.negative_chars).index(char)]
    cover = cv2.resize(mask, (160, 160), interpolation=cv2.INTER_LINEAR)[..., None] / 255.0
    picture = np.full((240, 240, 3), paper, np.float64)
    picture[40:200, 40:200] = picture[40:200, 40:200] * (1 - cover) + np.array(ink) * cover
    return picture.astype(np.uint8)


@pytest.fixture(scope="module")
def real_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("realworld")
    (root / "pos").mkdir()
    (root / "neg").mkdir()
    cv2.imwrite(str(root / "pos" / "fu_black.png"), character("福", (240, 240, 240), (20, 20, 20)))
    cv2.imwrite(str(root / "neg" / "chun.png"), character("春", (240, 240, 240), (20, 20, 20)))
    (root / "PROVENANCE.tsv").write_text(
        "file\tstyle\tlicence\npos/fu_black.png\tregular (font, test)\tMIT\n", encoding="utf-8"
    )
    return root


def config(directory: Path, models_dir: Path = MODELS_DIR, seed: int = 0) -> RunConfig:
    return RunConfig(
        directory, None, SECONDS, FPS, SIZE, "ink", "mid", None, "int8", models_dir, seed
    )


@pytest.fixture(scope="module")
def evaluator(real_dir):
    made = Evaluator(config(real_dir))
    yield made
    made.shutdown()


def test_the_set_is_read_with_its_styles(real_dir):
    images = load_set(real_dir)
    assert [(i.name, i.label, i.script) for i in images] == [
        ("pos/fu_black.png", "pos", "regular"),
        ("neg/chun.png", "neg", "-"),
    ]
    x0, y0, x1, y1 = images[0].ink  # the glyph's ink lies within its 160 px square at 40
    assert 35 <= x0 < 70 and 35 <= y0 < 70 and 170 < x1 <= 205 and 170 < y1 <= 205


def test_a_folder_without_pictures_of_fu_is_refused(tmp_path):
    with pytest.raises(RealSetError, match="pos/"):
        load_set(tmp_path)


@pytest.mark.parametrize(
    ("style", "group"),
    [
        ("running (calligraphy dictionary)", "running"),
        ("photo/print: 福 on red paper", "photo"),
        ("photo: brush 福 on red paper", "photo"),
        ("", "-"),
    ],
)
def test_styles_group_by_their_first_word(style, group):
    assert style_group(style) == group


def test_ink_on_a_diamond_of_paper_is_found_inside_it():
    picture = np.full((300, 300, 3), 250, np.uint8)
    diamond = np.array([[150, 10], [290, 150], [150, 290], [10, 150]], np.int32)
    cv2.fillPoly(picture, [diamond], (30, 30, 200))
    cv2.rectangle(picture, (110, 100), (190, 200), (10, 10, 10), 12)
    x0, y0, x1, y1 = ink_box(picture)
    assert abs(x0 - 104) <= 4 and abs(y0 - 94) <= 4 and abs(x1 - 197) <= 4 and abs(y1 - 207) <= 4


def test_clips_are_deterministic_by_seed_and_render_any_frame_alone(real_dir):
    image = load_set(real_dir)[0]
    one = RealClip([image], (0, 1, 0), 12, FPS, SIZE, turned=True)
    two = RealClip([image], (0, 1, 0), 12, FPS, SIZE, turned=True)
    other = RealClip([image], (1, 1, 0), 12, FPS, SIZE, turned=True)
    assert np.array_equal(one[7], two[7])  # two's frames 0-6 never rendered
    assert np.array_equal(one.boxes[7], two.boxes[7])
    assert not np.array_equal(one[7], other[7])
    assert one[7].shape == (SIZE[1], SIZE[0], 3)
    x0, y0, x1, y1 = one.boxes[7][0]
    assert 0 <= x0 < x1 <= SIZE[0] and 0 <= y0 < y1 <= SIZE[1]


def test_a_share_of_each_labels_clips_is_upside_down(real_dir):
    images = load_set(real_dir)
    specs = clip_specs(images, 4, 0.25)
    assert [(s.image, s.turned) for s in specs] == [
        (0, False), (0, False), (0, False), (0, True),
        (1, False), (1, False), (1, False), (1, True),
    ]  # fmt: skip


def test_a_clear_fu_is_recognized_and_another_character_is_not(evaluator):
    fu = evaluator.run(ClipSpec(0, 0, False))
    turned = evaluator.run(ClipSpec(0, 1, True))
    other = evaluator.run(ClipSpec(1, 0, False))
    assert fu.recognized and fu.lost_at is None and fu.false_events == ()
    assert fu.decision_s is not None and 0 < fu.decision_s < SECONDS
    assert 0 < fu.hits <= fu.frames
    assert turned.recognized
    assert not other.recognized and other.false_events == () and other.frames == 0
    assert evaluator.run(ClipSpec(0, 0, False)) == fu  # the same seed, the same outcome


def test_stages_of_a_frame(evaluator):
    """The furthest stage of one frame, through the shipped card and cards made to fail."""
    clip = evaluator.clip(ClipSpec(0, 0, False))
    frame, truth = clip[int(FPS)], tuple(float(v) for v in clip.boxes[int(FPS)][0])
    profile = get_profile("mid")
    card = find_card("l", "int8")
    assert card.glyph is not None
    unrescued = dataclasses.replace(card.glyph, rescue_from=None)
    strict = dataclasses.replace(card, threshold=0.999, glyph=unrescued)
    picky = dataclasses.replace(card, glyph=dataclasses.replace(card.glyph, min_score=1.01))
    blank = np.full_like(frame, 128)
    assert STAGES[stage_reached(OnnxDetector(card), profile, frame, truth)] == "vote"
    assert STAGES[stage_reached(OnnxDetector(card), profile, blank, truth)] == "first look"
    assert STAGES[stage_reached(OnnxDetector(strict), profile, frame, truth)] == "close-up"
    assert STAGES[stage_reached(OnnxDetector(picky), profile, frame, truth)] == "glyph check"


def test_the_report_has_its_rows_and_names_the_stage_of_a_forced_miss(real_dir, tmp_path, capsys):
    models = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models)
    for path in models.glob("fu_[lms].*.json"):  # no close-up scores the threshold, none is rescued
        fields = read_card_fields(path) | {"threshold": 0.999}
        if "glyph" in fields:
            fields["glyph"] = {k: v for k, v in fields["glyph"].items() if "rescue" not in k}
        write_card(path, fields)
    out = tmp_path / "report.json"
    status = run_py.main(
        ["eval-real", str(real_dir), "--clips-per-image", "1", "--seconds", str(SECONDS),
         "--fps", str(FPS), "--size", "640x360", "--models-dir", str(models),
         "--json", str(out), "--list-misses"]
    )  # fmt: skip
    assert status == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert list(report["overall"]) == ["福, all", "福, upright", "others (neg/)"]
    assert list(report["styles"]) == ["regular", "others: -"]
    fu = report["overall"]["福, all"]
    assert fu["event_recall"] == 0.0 and fu["lost_at"]["close-up"] == 1
    assert report["overall"]["others (neg/)"]["false_recognitions"] == 0
    assert [image["clips"][0]["lost_at"] for image in report["images"]] == ["close-up", None]
    assert report["images"][0]["clips"][0]["frame_hits_at_threshold"] == 0
    printed = capsys.readouterr().out
    assert (
        "pos/fu_black.png #0: 0/" in printed and "0 at the threshold, lost at close-up" in printed
    )


@pytest.mark.parametrize(
    ("content", "with_fu"),
    [
        ("fu", [True] * 8),
        ("mixed", [False] * 2 + [True] * 4 + [False] * 2),
        ("negative", [False] * 8),
        ("empty", [False] * 8),
    ],
)
def test_scene_clips_of_real_pictures_have_the_generators_kinds(real_dir, content, with_fu):
    clip = scene_clip(load_set(real_dir), content, 3, 8, FPS, SIZE)
    assert [len(boxes) == 1 for boxes in clip.boxes] == with_fu


def test_eval_model_scenes_can_be_stills_of_real_pictures(real_dir):
    images = load_set(real_dir)
    stills = list(held_out("mixed", 3, real=images)) + list(held_out("negative", 2, real=images))
    assert [len(s.boxes) for s in stills] == [1, 1, 1, 0, 0]
    assert all(s.image.shape == (480, 640, 3) and not len(s.ignore) for s in stills)


def test_eval_voting_clips_of_real_pictures_carry_detections_and_truth(real_dir):
    source = real_source(find_card("l", "int8"), 0.5, real_dir)
    clip = source("fu", 0)
    assert len(clip.detections) == 15 and len(clip.objects) == 1
    assert not source("empty", 0).objects


class _Run:
    """The parts of a session's run :func:`frame_hits` reads."""

    def __init__(self, truth: list[list[list[float]]], detections: list[list[dict]]) -> None:
        self.clip = type("Clip", (), {"boxes": [np.array(t) for t in truth]})()
        self._frames = [{"frame": i, "detections": d} for i, d in enumerate(detections)]

    def frames(self) -> list[dict]:
        return self._frames


@pytest.mark.parametrize(
    ("threshold", "counted"),
    [(0.69, (3, 2, 1)), (0.5, (3, 2, 0)), (None, (3, 2, 0))],
)
def test_frame_hits_count_the_frames_the_best_detection_held_at_the_threshold(threshold, counted):
    box, elsewhere = [10.0, 10.0, 50.0, 50.0], [200.0, 200.0, 240.0, 240.0]
    run = _Run(
        [[box], [box], [box], []],
        [
            [{"box": box, "score": 0.69}, {"box": elsewhere, "score": 0.9}],  # held there
            [{"box": box, "score": 0.8}, {"box": box, "score": 0.69}],  # the best is above
            [{"box": elsewhere, "score": 0.69}],  # nothing on the 福
            [{"box": box, "score": 0.69}],  # no 福 in view
        ],
    )
    assert frame_hits(run, threshold) == counted  # type: ignore[arg-type]
