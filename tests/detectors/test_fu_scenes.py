"""The synthetic scene generator: deterministic by seed, labels that fit what was drawn."""

import argparse
from collections.abc import Callable

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from detectors.synth import scenes
from detectors.synth.bank import HELD_OUT_FONTS, load_glyphs
from detectors.synth.scenes import (
    CUT_MIN_VISIBLE,
    MIN_VISIBLE,
    Poster,
    SceneOptions,
    make_clip,
    radical_in_view,
    render_posters,
    render_scene,
)


def test_same_seed_same_scene() -> None:
    a_image, a_boxes, _ = render_scene(7, 320, 240, "train", "mixed")
    b_image, b_boxes, _ = render_scene(7, 320, 240, "train", "mixed")
    assert np.array_equal(a_image, b_image)
    assert np.array_equal(a_boxes, b_boxes)


def test_other_seed_other_scene() -> None:
    assert not np.array_equal(render_scene(1)[0], render_scene(2)[0])


@pytest.mark.parametrize(
    ("content", "min_boxes", "max_boxes"),
    [("fu", 1, 3), ("negative", 0, 0), ("empty", 0, 0), ("mixed", 0, 3)],
)
@pytest.mark.parametrize("split", ["train", "eval"])
def test_labels_fit_the_content_and_the_frame(
    content: str, min_boxes: int, max_boxes: int, split: str
) -> None:
    for seed in range(8):
        image, boxes, _ = render_scene(seed, 200, 150, split, content)  # type: ignore[arg-type]
        assert image.shape == (150, 200, 3) and image.dtype == np.uint8
        assert boxes.shape[1:] == (4,) and boxes.dtype == np.float32
        assert min_boxes <= len(boxes) <= max_boxes
        assert np.all(boxes[:, 0] >= 0) and np.all(boxes[:, 2] <= 200)
        assert np.all(boxes[:, 1] >= 0) and np.all(boxes[:, 3] <= 150)
        assert np.all(boxes[:, 2] - boxes[:, 0] >= 4) and np.all(boxes[:, 3] - boxes[:, 1] >= 4)


def test_boxes_cover_the_ink() -> None:
    """A 福 box is where the poster is: it differs from the rest of the scene."""
    image, boxes, _ = render_scene(3, 320, 240, "eval", "fu")
    x0, y0, x1, y1 = boxes[0].round().astype(int)
    inside = image[y0:y1, x0:x1].astype(np.float32)
    assert inside.std() > 20  # ink on paper, not a flat background


def test_held_out_fonts_are_not_in_training() -> None:
    train, held = load_glyphs("train"), load_glyphs("eval")
    assert len(HELD_OUT_FONTS) >= 3
    assert len(train.target) > len(held.target) > 0
    assert len(held.negatives) > 0
    for mask in held.target:
        assert not any(np.array_equal(mask, other) for other in train.target)


def test_bad_split_is_refused() -> None:
    with pytest.raises(ValueError, match="split"):
        load_glyphs("test")


@pytest.mark.parametrize("content", ["fu", "negative", "empty", "mixed"])
def test_clip_is_deterministic_and_labelled(content: str) -> None:
    frames, boxes, contrast = make_clip(5, 12, 30, 160, 120, content)  # type: ignore[arg-type]
    again, again_boxes, _ = make_clip(5, 12, 30, 160, 120, content)  # type: ignore[arg-type]
    assert len(frames) == len(boxes) == 12
    assert all(f.shape == (120, 160, 3) and f.dtype == np.uint8 for f in frames)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(boxes, again_boxes, strict=True))
    counts = [len(b) for b in boxes]
    assert len(contrast) == max(counts)  # one per 福 of the scene
    if content == "fu":
        assert min(counts) >= 1
    elif content == "mixed":
        assert counts[:3] == [0, 0, 0] and min(counts[3:9]) >= 1 and counts[9:] == [0, 0, 0]
    else:
        assert max(counts) == 0


def test_clip_shakes_like_a_hand() -> None:
    frames, boxes, _ = make_clip(2, n_frames=10, content="fu")
    centres = np.array([b[0, :2] + b[0, 2:] for b in boxes]) / 2
    steps = np.linalg.norm(np.diff(centres, axis=0), axis=1)
    assert 0 < steps.max() < 20  # it moves, a few pixels a frame
    assert not np.array_equal(frames[0], frames[1])


def _poster(upside_down: bool) -> Poster:
    """A 100 px poster whose 福 ink fills it; its radical is the left (or right) 40 %."""
    side = 100
    radical = (60.0, 0.0, 100.0, 100.0) if upside_down else (0.0, 0.0, 40.0, 100.0)
    return Poster(
        np.zeros((side, side, 3), np.float32),
        np.ones((side, side), np.float32),
        (0.0, 0.0, 100.0, 100.0),
        radical,
        np.ones((side, side), np.float32),
    )


@pytest.mark.parametrize(
    ("left", "upside_down", "labelled"),
    [
        (50.0, False, True),  # whole in the 200 px wide frame
        (-30.0, False, False),  # the frame's left edge cuts the radical off: 畐 is left
        (130.0, False, True),  # the right edge cuts into 畐: 礻 still says 福
        (-30.0, True, True),  # upside down (倒福): the radical is on the right
        (130.0, True, False),
    ],
)
def test_with_cut_look_alikes_a_fu_is_labelled_only_with_its_radical_in_view(
    left: float, upside_down: bool, labelled: bool
) -> None:
    corners = np.array([[left, 20], [left + 100, 20], [left + 100, 120], [left, 120]], np.float32)
    assert radical_in_view(_poster(upside_down), corners, 200, 150) is labelled


def _placed(render: Callable[[], object]) -> list[float]:
    """How far inside the frame each poster that ``render`` pastes is."""
    shares: list[float] = []
    paste = scenes._paste

    def spy(canvas: np.ndarray, poster: Poster, corners: np.ndarray) -> None:
        ink = scenes._in_scene(poster, corners, scenes._box_corners(poster.ink_box))
        height, width = canvas.shape[:2]
        shares.append(scenes._visible_fraction(scenes._box_of(ink), width, height))
        paste(canvas, poster, corners)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenes, "_paste", spy)
        render()
    return shares


def test_only_stills_asked_for_it_hold_look_alikes_cut_by_the_edge() -> None:
    seeds = range(40)
    cut = _placed(
        lambda: [
            render_scene(s, 320, 240, "train", "negative", SceneOptions(cut_look_alikes=True))
            for s in seeds
        ]
    )
    plain = _placed(lambda: [render_scene(s, 320, 240, "train", "negative") for s in seeds])
    clips = _placed(lambda: [make_clip(s, 2, content="negative") for s in seeds])
    assert min(cut) >= CUT_MIN_VISIBLE and any(v < MIN_VISIBLE for v in cut)
    assert min(plain) >= MIN_VISIBLE and min(clips) >= MIN_VISIBLE


def test_with_cut_look_alikes_a_fu_cut_far_by_the_edge_is_ignored_not_labelled() -> None:
    cut = [
        render_scene(s, 320, 240, "eval", "fu", SceneOptions(cut_look_alikes=True))
        for s in range(200)
    ]
    ignored = np.concatenate([scene.ignore for scene in cut])
    at_edge = (
        (ignored[:, 0] <= 0)
        | (ignored[:, 1] <= 0)
        | (ignored[:, 2] >= 320)
        | (ignored[:, 3] >= 240)
    )
    assert len(ignored) > 0 and at_edge.all()
    assert all(len(scene.boxes) + len(scene.ignore) for scene in cut)  # a "fu" scene holds a 福
    plain = [render_scene(s, 320, 240, "eval", "fu") for s in range(200)]
    assert all(len(scene.boxes) and not len(scene.ignore) for scene in plain)


@pytest.mark.parametrize("share", [-0.1, 1.5])
@pytest.mark.parametrize(
    "name",
    [
        "bare_ink_share",
        "upside_down_share",
        "low_contrast_share",
        "ornament_share",
        "favoured_share",
        "hand_share",
        "brush_share",
        "media_share",
    ],
)
def test_scene_options_refuse_a_share_outside_0_1(name: str, share: float) -> None:
    with pytest.raises(ValueError, match=name):
        SceneOptions(**{name: share, "favoured_look_alikes": "逼"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("chars", "share", "refusal"),
    [
        ("福", 0.5, "must be among"),  # the target is no look-alike
        ("逼x", 0.5, "not x"),
        ("", 0.3, "needs favoured_look_alikes"),
    ],
)
def test_scene_options_refuse_favoured_look_alikes_that_are_none(
    chars: str, share: float, refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        SceneOptions(favoured_look_alikes=chars, favoured_share=share)


def _look_alikes_drawn(options: SceneOptions, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The character of every look-alike poster made for 40 "negative" stills of ``options``."""
    negatives = load_glyphs("train")
    drawn: list[str] = []
    make_poster = scenes._make_poster

    def spy(rng: np.random.Generator, mask: np.ndarray, *rest: object) -> Poster:
        index = [i for i, m in enumerate(negatives.negatives) if np.array_equal(m, mask)]
        drawn.extend(str(negatives.negative_chars[i]) for i in index[:1])
        return make_poster(rng, mask, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(scenes, "_make_poster", spy)
    for seed in range(40):
        render_posters(seed, 64, 48, "train", "negative", options)
    return drawn


@pytest.mark.parametrize(("share", "low", "high"), [(0.0, 0.0, 0.2), (0.5, 0.4, 0.7), (1.0, 1, 1)])
def test_the_favoured_share_of_look_alikes_are_the_favoured_characters(
    share: float, low: float, high: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = SceneOptions(favoured_look_alikes="逼", favoured_share=share)
    drawn = _look_alikes_drawn(options, monkeypatch)
    assert len(drawn) > 40  # at least one look-alike a "negative" still
    assert low <= drawn.count("逼") / len(drawn) <= high


def test_favoured_look_alikes_at_no_share_leave_the_scene_as_the_mix_makes_it() -> None:
    options = SceneOptions(favoured_look_alikes="逼")
    for seed in range(5):
        mixed = render_posters(seed, 64, 48, "train", "mixed")
        favoured = render_posters(seed, 64, 48, "train", "mixed", options)
        assert all(np.array_equal(a, b) for a, b in zip(mixed, favoured, strict=True))


def test_by_default_scenes_hold_the_generators_own_mix() -> None:
    assert SceneOptions().style_p() == scenes._STYLE_P
    assert SceneOptions().upside_down_share == scenes.UPSIDE_DOWN_SHARE
    assert SceneOptions().content_p() == (("fu", 0.55), ("negative", 0.3), ("empty", 0.15))


@pytest.mark.parametrize("share", [-0.1, 0.9])
def test_scene_options_refuse_a_negative_share_that_leaves_no_room_for_empty_scenes(
    share: float,
) -> None:
    with pytest.raises(ValueError, match=r"negative_share must be within 0\.\.0\.85"):
        SceneOptions(negative_share=share)


def test_a_negative_share_moves_mixed_stills_from_fu_to_look_alikes_only() -> None:
    def holding_fu(options: SceneOptions) -> int:
        stills = (render_scene(s, 64, 48, "train", "mixed", options) for s in range(300))
        return sum(len(still.boxes) > 0 for still in stills)

    usual, more = holding_fu(SceneOptions()), holding_fu(SceneOptions(negative_share=0.6))
    assert 0.45 < usual / 300 < 0.65 and 0.17 < more / 300 < 0.33


def test_a_bare_ink_share_keeps_the_paper_styles_in_proportion() -> None:
    p = SceneOptions(bare_ink_share=0.35).style_p()
    assert p[-1] == 0.35 and sum(p) == pytest.approx(1.0)
    assert np.allclose(np.array(p[:-1]) / sum(p[:-1]), np.array(scenes._STYLE_P[:-1]) / 0.85)


def _posters(options: SceneOptions, glyph_side: int = 60) -> list[Poster]:
    rng = np.random.default_rng(0)
    glyphs = load_glyphs("train").target
    return [
        scenes._make_poster(rng, glyphs[i % len(glyphs)], glyph_side, options) for i in range(30)
    ]


@pytest.mark.parametrize("bare", [0.0, 1.0])
def test_the_bare_ink_share_decides_which_posters_have_paper(bare: float) -> None:
    # bare ink is printed straight onto the scene: the poster is the glyph's square alone
    sides = {p.alpha.shape[0] for p in _posters(SceneOptions(bare_ink_share=bare), 60)}
    assert (sides == {60}) if bare else (min(sides) > 60)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_the_upside_down_share_decides_which_glyphs_are_turned(share: float) -> None:
    # an upside-down 福's radical is at the right of its ink box
    for poster in _posters(SceneOptions(upside_down_share=share)):
        side = 2 if share else 0
        assert poster.radical_box[side] == poster.ink_box[side]


Colour = tuple[float, float, float]
WHITE: Colour = (245.0, 245.0, 245.0)
BLACK: Colour = (20.0, 20.0, 20.0)
RED: Colour = (35.0, 30.0, 200.0)
DARK_RED: Colour = (30.0, 40.0, 150.0)


def _printed(paper: Colour | None, ink: Colour) -> Poster:
    """A 100 px poster: two strokes of ``ink`` on ``paper``, or bare ink (``None``)."""
    side = 100
    strokes = np.zeros((side, side), np.float32)
    strokes[20:80, 30:42] = 1.0
    strokes[44:56, 20:80] = 1.0
    under = np.zeros(3) if paper is None else np.array(paper)
    color = under * (1 - strokes[..., None]) + np.array(ink) * strokes[..., None]
    alpha = strokes if paper is None else np.ones((side, side), np.float32)
    box = (20.0, 20.0, 80.0, 80.0)
    return Poster(color.astype(np.float32), alpha, box, box, strokes)


@pytest.mark.parametrize(
    ("scene", "paper", "ink", "low", "high"),
    [
        (RED, WHITE, BLACK, 85, 100),  # black on white paper: L* 7 against 96
        (WHITE, RED, BLACK, 75, 95),  # a classic 福 poster: black on red paper
        (WHITE, RED, RED, 0, 0.5),  # ink the paper's colour: nothing to see
        (RED, None, RED, 0, 0.5),  # bare red ink on a red wall
        (DARK_RED, None, RED, 15, 30),  # bare red ink on a darker red: chroma alike, L* 43 and 33
        (WHITE, None, BLACK, 85, 100),  # bare black ink on a white wall
    ],
)
def test_ink_contrast_is_the_colour_difference_across_the_strokes_outline(
    scene: Colour, paper: Colour | None, ink: Colour, low: float, high: float
) -> None:
    canvas = np.empty((150, 200, 3), np.float32)
    canvas[:] = scene
    poster = _printed(paper, ink)
    corners = np.array([[50, 20], [150, 20], [150, 120], [50, 120]], np.float32)
    scenes._paste(canvas, poster, corners)
    assert low <= scenes.ink_contrast(canvas, poster, corners) <= high


def test_ink_contrast_of_a_character_out_of_frame_is_unknown() -> None:
    canvas = np.full((150, 200, 3), 128.0, np.float32)
    outside = np.array([[300, 20], [400, 20], [400, 120], [300, 120]], np.float32)
    bare_corner = np.array([[-99, -99], [1, -99], [1, 1], [-99, 1]], np.float32)  # no stroke in
    for corners in (outside, bare_corner):
        assert np.isnan(scenes.ink_contrast(canvas, _printed(None, BLACK), corners))


def test_each_fu_of_a_clip_carries_its_ink_contrast() -> None:
    clip = make_clip(16, n_frames=1)  # one 福: a poster printed to be seen
    (contrast,) = clip.contrast
    assert contrast > 40


SCENE_W, SCENE_H = 320, 240


def _fu_scenes(options: SceneOptions) -> list[tuple[scenes.FloatImage, scenes.Placed]]:
    """30 held-out "fu" scenes' canvases with the posters ``options`` placed on them."""
    made = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        canvas = scenes._background(rng, "eval", SCENE_W, SCENE_H)
        made.append((canvas, scenes._place_posters(rng, canvas, "eval", "fu", options)))
    return made


def _first_fu_contrast(low_contrast_share: float) -> list[float]:
    """The ink contrast of each scene's first 福 (placed before the fading draws anything)."""
    options = SceneOptions(bare_ink_share=1.0, low_contrast_share=low_contrast_share)
    scenes_made = _fu_scenes(options)
    return [scenes.ink_contrast(canvas, *placed.labelled[0]) for canvas, placed in scenes_made]


def test_a_low_contrast_share_fades_bare_ink_toward_the_scene_under_it() -> None:
    plain, faded = np.array(_first_fu_contrast(0.0)), np.array(_first_fu_contrast(1.0))
    measured = ~np.isnan(plain)
    assert measured.sum() > 20
    assert (faded[measured] < plain[measured]).all()
    assert np.median(faded[measured] / plain[measured]) < 0.8


@pytest.mark.parametrize("fill", [(0.0, 0.5), (0.5, 0.4), (0.5, 1.2), (-0.1, 0.3)])
def test_scene_options_refuse_a_glyph_fill_outside_0_1_or_upside_down(
    fill: tuple[float, float],
) -> None:
    with pytest.raises(ValueError, match="glyph_fill"):
        SceneOptions(glyph_fill=fill)


def _fu_heights(options: SceneOptions) -> list[float]:
    """The ink box height, over the scene's short side, of each first 福 in 30 scenes."""
    return [float(np.ptp(placed.targets[0][:, 1])) / SCENE_H for _, placed in _fu_scenes(options)]


def test_the_glyph_fill_sets_the_range_of_character_sizes() -> None:
    # the ink box of a glyph side s is at most s high (glyphs touch their square on the
    # longer side); turned by up to 0.7 rad and tilted, up to about 1.45 s
    default, large = _fu_heights(SceneOptions()), _fu_heights(SceneOptions(glyph_fill=(0.8, 0.9)))
    assert min(default) < 0.3 and max(default) < 0.75 * 1.45
    assert min(large) > 0.5 and max(large) < 0.9 * 1.45
    assert np.median(large) > 2 * np.median(default)


def _fu_centres(options: SceneOptions) -> npt.NDArray[np.float64]:
    """Where each first 福's ink lands, as shares of the scene's width and height."""
    return np.array(
        [placed.targets[0].mean(axis=0) / (SCENE_W, SCENE_H) for _, placed in _fu_scenes(options)]
    )


def test_an_aimed_fu_lands_near_the_middle_of_the_scene() -> None:
    aimed, anywhere = _fu_centres(SceneOptions(aimed=True)), _fu_centres(SceneOptions())
    assert np.abs(aimed - 0.5).max() < 0.2  # a tenth of the scene, plus the poster's tilt
    assert np.abs(anywhere - 0.5).max() > 0.3


def test_a_clip_follows_its_scene_options_and_refuses_the_stills_own() -> None:
    close = SceneOptions(glyph_fill=(0.7, 0.75), aimed=True)
    clip = make_clip(3, n_frames=1, options=close)
    (box,) = clip.boxes[0].tolist()
    assert box[3] - box[1] > 0.6 * 480  # 0.7 of the camera's 1.12x scene, less the frame's cut
    assert np.array_equal(make_clip(3, n_frames=1).frames[0], make_clip(3, 1).frames[0])
    with pytest.raises(ValueError, match="cut_look_alikes"):
        make_clip(3, n_frames=1, options=SceneOptions(cut_look_alikes=True))
    with pytest.raises(ValueError, match="negative_share"):
        make_clip(3, n_frames=1, options=SceneOptions(negative_share=0.5))


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        ([], SceneOptions()),
        (["--glyph-fill", "0.6:0.9", "--aimed"], SceneOptions(glyph_fill=(0.6, 0.9), aimed=True)),
        (["--bare-ink-share", "1"], SceneOptions(bare_ink_share=1.0)),
        (["--ornament-share", "0.4"], SceneOptions(ornament_share=0.4)),
        (
            ["--hand-share", "0.3", "--brush-share", "0.2", "--media-share", "0.1"],
            SceneOptions(hand_share=0.3, brush_share=0.2, media_share=0.1),
        ),
        (
            ["--favoured-look-alikes", "逼富", "--favoured-share", "0.3"],
            SceneOptions(favoured_look_alikes="逼富", favoured_share=0.3),
        ),
    ],
)
def test_scene_flags_parse_to_options(argv: list[str], options: SceneOptions) -> None:
    parser = argparse.ArgumentParser()
    scenes.add_scene_arguments(parser, clips=True)
    assert scenes.scene_options(parser.parse_args(argv)) == options
    for still_only in ("--cut-look-alikes", "--negative-share=0.5"):
        with pytest.raises(SystemExit):
            parser.parse_args([still_only])  # clips label every 福, content is the caller's


def test_still_flags_parse_to_options() -> None:
    parser = argparse.ArgumentParser()
    scenes.add_scene_arguments(parser)
    args = parser.parse_args(["--cut-look-alikes", "--negative-share", "0.45"])
    assert scenes.scene_options(args) == SceneOptions(cut_look_alikes=True, negative_share=0.45)


@pytest.mark.parametrize("text", ["0.6", "0.9:0.6", "0:0.5", "a:b", "0.5:1.5"])
def test_a_bad_glyph_fill_flag_is_refused(text: str) -> None:
    parser = argparse.ArgumentParser()
    scenes.add_scene_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--glyph-fill", text])


@pytest.mark.parametrize(
    ("content", "fu", "others"),
    [("negative", False, True), ("empty", False, False), ("fu", True, None)],
)
def test_render_posters_adds_the_other_characters_boxes_to_the_scene(
    content: str, fu: bool, others: bool | None
) -> None:
    for seed in range(6):
        scene = render_posters(seed, 320, 240, "train", content)  # type: ignore[arg-type]
        image, boxes, ignore = render_scene(seed, 320, 240, "train", content)  # type: ignore[arg-type]
        np.testing.assert_array_equal(scene.image, image)  # the same still, drawn once
        np.testing.assert_array_equal(scene.boxes, boxes)
        np.testing.assert_array_equal(scene.ignore, ignore)
        assert (len(scene.boxes) > 0) is fu
        if others is not None:
            assert (len(scene.others) > 0) is others
        assert scene.others.shape[1:] == (4,)
        assert (scene.others[:, 2:] <= (320, 240)).all() and (scene.others >= 0).all()


# --- painted architecture (ornament_share) ----------------------------------------------------


def _edge_share(image: npt.NDArray[np.float32]) -> float:
    """The share of pixels on a strong edge (Sobel magnitude of grey over 100)."""
    grey = cv2.cvtColor(np.clip(image, 0, 255).astype(np.uint8), cv2.COLOR_BGR2GRAY)
    dx, dy = cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1)
    return float((np.hypot(dx, dy) > 100).mean())


@pytest.mark.parametrize(("share", "low", "high"), [(0.0, 0, 0), (0.25, 70, 130), (1.0, 400, 400)])
def test_ornament_backgrounds_take_their_share(
    monkeypatch: pytest.MonkeyPatch, share: float, low: int, high: int
) -> None:
    marker = np.full((24, 32, 3), 7.0, np.float32)
    monkeypatch.setattr(scenes, "_ornament", lambda rng, width, height: marker)
    rng = np.random.default_rng(0)
    drawn = [scenes._background(rng, "train", 32, 24, share) for _ in range(400)]
    assert low <= sum(image is marker for image in drawn) <= high


def test_an_ornament_is_a_stroke_rich_float_image_made_by_its_seed() -> None:
    made = [scenes._ornament(np.random.default_rng(seed), 320, 240) for seed in range(20)]
    for image in made:
        assert image.shape == (240, 320, 3) and image.dtype == np.float32
        assert image.min() >= 0 and image.max() <= 255
    again = scenes._ornament(np.random.default_rng(3), 320, 240)
    np.testing.assert_array_equal(made[3], again)
    # Most training photos put a strong edge under 7 % of their pixels; the held-out ones
    # where bare ink was missed, 16-36 %.
    assert np.median([_edge_share(image) for image in made]) > 0.15


def test_scenes_and_clips_on_ornaments_keep_their_labels_in_the_frame() -> None:
    options = SceneOptions(ornament_share=1.0)
    for seed in range(10):
        image, boxes, _ = render_scene(seed, 320, 240, "train", "fu", options)
        assert image.shape == (240, 320, 3) and len(boxes) >= 1
        assert (boxes[:, 2:] <= (320, 240)).all() and (boxes >= 0).all()
    clip = make_clip(3, n_frames=2, options=options)
    assert _edge_share(clip.frames[0].astype(np.float32)) > 0.05 and len(clip.boxes[0]) >= 1


# --- the world's 福: hand-written faces, a hand's strokes, door decorations --------------------

WORLD = SceneOptions(hand_share=1.0, brush_share=1.0, media_share=1.0)


def test_hand_written_faces_are_a_pool_of_their_own_split_by_font() -> None:
    for split in ("train", "eval"):
        hand, printed = load_glyphs(split, hand=True), load_glyphs(split)
        assert len(hand.target) > 0 and len(hand.negatives) > 0
        for mask in hand.target:
            assert not any(np.array_equal(mask, other) for other in printed.target)
    for mask in load_glyphs("eval", hand=True).target:
        assert not any(np.array_equal(mask, other) for other in load_glyphs("train", True).target)


def test_world_scenes_are_deterministic_and_labelled_in_the_frame() -> None:
    for seed in range(6):
        image, boxes, _ = render_scene(seed, 320, 240, "train", "fu", WORLD)
        again, same_boxes, _ = render_scene(seed, 320, 240, "train", "fu", WORLD)
        np.testing.assert_array_equal(image, again)
        np.testing.assert_array_equal(boxes, same_boxes)
        assert 1 <= len(boxes) <= 3
        assert (boxes[:, 2:] <= (320, 240)).all() and (boxes >= 0).all()
        negative = render_posters(seed, 320, 240, "eval", "negative", WORLD)
        assert len(negative.boxes) == 0 and len(negative.others) >= 1


def test_a_decorations_label_is_its_characters_ink_not_its_paper_or_trim() -> None:
    rng = np.random.default_rng(0)
    fu = load_glyphs("train").target[0]
    for _ in range(12):
        poster = scenes._decoration(rng, fu, 60, WORLD)
        x0, y0, x1, y1 = poster.ink_box
        side = poster.alpha.shape[0]
        assert side > 60 and poster.alpha.max() == pytest.approx(1.0)
        ys, xs = np.nonzero(poster.ink > 0.3)
        assert (x0, y0, x1, y1) == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
        assert max(x1 - x0, y1 - y0) >= 58  # the whole glyph, centred on the paper
        assert poster.color.min() >= 0 and poster.color.max() <= 255


def test_the_worlds_shares_at_zero_leave_the_scene_as_the_mix_makes_it() -> None:
    options = SceneOptions(hand_share=0.0, brush_share=0.0, media_share=0.0)
    for seed in range(4):
        mixed = render_posters(seed, 64, 48, "train", "mixed")
        world = render_posters(seed, 64, 48, "train", "mixed", options)
        assert all(np.array_equal(a, b) for a, b in zip(mixed, world, strict=True))


def test_room_light_darkens_the_corners_and_casts_a_colour() -> None:
    canvas = np.full((60, 80, 3), 128.0, np.float32)
    scenes._room_light(np.random.default_rng(1), canvas)
    assert canvas[0, 0].mean() < canvas[30, 40].mean()
    assert np.ptp(canvas[30, 40]) > 0
