"""The second look: close-up crops of the first look's candidates decide what is reported."""

import dataclasses
import json

import numpy as np
import pytest

from detectors.card import ModelCard, ModelCardError, ZoomSpec, find_card, read_card
from detectors.close_ups import CloseUps, zoom_out_region, zoom_region
from detectors.core import Detection, Detections, iou
from detectors.network import suppress
from detectors.onnx_detector import GLYPH_REFUSED, OnnxDetector
from detectors.synth.scenes import SceneOptions, make_clip

ASPECT = 4 / 3


@pytest.mark.parametrize(
    ("box", "frame", "fill", "region"),
    [
        # a 40 px square in the middle: a 100 x 133 crop around it
        ((300, 220, 340, 260), (640, 480), 0.4, (253, 190, 387, 290)),
        # a wide box: its width sets the crop (aspect 4:3)
        ((300, 230, 380, 250), (640, 480), 0.5, (260, 180, 420, 300)),
        # at the top-left corner the crop moves inside the frame, its size kept
        ((0, 0, 40, 40), (640, 480), 0.4, (0, 0, 133, 100)),
        # at the bottom-right corner likewise
        ((600, 440, 640, 480), (640, 480), 0.4, (507, 380, 640, 480)),
        # so big that the crop would be the whole frame: no second look
        ((280, 100, 360, 300), (640, 480), 0.4, (0, 0, 640, 480)),
        # a wider frame: as tall as the frame, narrower than it, aspect kept
        ((600, 200, 680, 500), (1280, 720), 0.4, (140, 0, 1140, 720)),
        # a tiny box still gets a crop at least 8 px high
        ((10, 10, 11, 11), (640, 480), 0.4, (5, 6, 16, 14)),
    ],
)
def test_zoom_region(box, frame, fill, region) -> None:  # type: ignore[no-untyped-def]
    got = zoom_region(box, *frame, fill, ASPECT)
    if region == (0, 0, *frame):
        assert got is None  # the crop would be the whole frame: no second look
    else:
        assert got is not None
        assert got == pytest.approx(region, abs=1)
        x0, y0, x1, y1 = got
        assert 0 <= x0 < x1 <= frame[0] and 0 <= y0 < y1 <= frame[1]


@pytest.mark.parametrize(
    ("box", "min_zoom", "close_up"),
    [
        # a 150 px box: its crop (375 x 500) magnifies a 640x480 frame 1.28x
        ((245, 165, 395, 315), 1.0, True),
        ((245, 165, 395, 315), 1.25, True),
        ((245, 165, 395, 315), 1.5, False),
        # a 40 px box is magnified 4.8x: a close-up at any of these
        ((300, 220, 340, 260), 2.0, True),
    ],
)
def test_no_close_up_below_the_asked_magnification(  # type: ignore[no-untyped-def]
    box, min_zoom, close_up
) -> None:
    assert (zoom_region(box, 640, 480, 0.4, ASPECT, min_zoom) is not None) == close_up


def test_zoom_region_keeps_the_box_inside_and_at_the_asked_fill() -> None:
    box = (200.0, 150.0, 260.0, 210.0)
    x0, y0, x1, y1 = zoom_region(box, 640, 480, 0.4, ASPECT) or (0, 0, 0, 0)
    assert x0 <= box[0] and box[2] <= x1 and y0 <= box[1] and box[3] <= y1
    assert (box[3] - box[1]) / (y1 - y0) == pytest.approx(0.4, abs=0.01)


def test_suppress_keeps_the_best_of_overlapping_boxes_per_label() -> None:
    found = [
        Detection("fu", 0.7, (0, 0, 10, 10)),
        Detection("fu", 0.9, (1, 0, 11, 10)),
        Detection("cat", 0.8, (0, 0, 10, 10)),
        Detection("fu", 0.6, (50, 50, 60, 60)),
    ]
    assert [d.score for d in suppress(found)] == [0.9, 0.8, 0.6]


def zoomed(tier: str, precision: str = "int8") -> OnnxDetector:
    card = find_card(tier, precision)
    assert card.zoom is not None, f"{tier} {precision} ships with a second look"
    return OnnxDetector(card)


def close_ups(detector: OnnxDetector) -> CloseUps:
    assert detector.close_ups is not None
    return detector.close_ups


@pytest.mark.parametrize(("tier", "min_found"), [("s", 0.6), ("m", 0.75), ("l", 0.75)])
def test_second_look_confirms_real_fu_with_close_up_boxes(tier: str, min_found: float) -> None:
    detector = zoomed(tier)
    found = total = 0
    for seed in range(8):
        clip = make_clip(seed, n_frames=1)
        frame, truth = clip.frames[0], clip.boxes[0]
        total += len(truth)
        found += sum(
            any(iou(d.box, tuple(t)) >= 0.5 for d in detector.detect(frame)) for t in truth.tolist()
        )
    assert found >= min_found * total


def test_first_look_candidates_below_threshold_can_only_pass_through_a_close_up() -> None:
    detector = zoomed("l")
    clip = make_clip(3, n_frames=1)
    frame = clip.frames[0]
    candidates = detector.network.look(frame, detector.candidate_threshold)
    assert detector.candidate_threshold < detector.threshold
    reported = detector.detect(frame)
    assert all(d.score >= detector.threshold for d in reported)
    # every reported box comes from a close-up of some candidate
    assert all(any(iou(d.box, c.box) >= 0.3 for c in candidates) for d in reported)


def test_a_candidate_as_big_as_the_frame_keeps_its_first_score() -> None:
    detector = zoomed("l")
    frame = np.zeros((480, 640, 3), np.uint8)
    whole = Detection("fu", 0.9, (100.0, 0.0, 540.0, 480.0))
    assert close_ups(detector).region(frame, whole, min_zoom=1.0) is None
    assert close_ups(detector).best(frame, whole, []) == (whole, 0, True)
    # under the lowest close-up score kept (the threshold, or the rescue's): dropped
    weak = Detection("fu", close_ups(detector).floor - 0.05, (100.0, 0.0, 540.0, 480.0))
    assert close_ups(detector).best(frame, weak, []) == (None, 0, True)


def test_a_candidate_on_a_blank_close_up_is_dropped() -> None:
    detector = zoomed("l")
    frame = np.full((480, 640, 3), 128, np.uint8)
    candidate = Detection("fu", 0.95, (300, 220, 340, 260))
    region = close_ups(detector).region(frame, candidate, min_zoom=1.0)
    assert region is not None
    assert close_ups(detector).best(frame, candidate, [region])[:2] == (None, 1)


def test_detections_count_the_network_runs_of_both_looks() -> None:
    detector = zoomed("l")
    zoom = detector.card.zoom
    assert zoom is not None
    frame = make_clip(5, n_frames=1).frames[0]  # a small 福: a close-up at any min_zoom
    candidates = detector.network.look(frame, detector.candidate_threshold)[: zoom.max_candidates]
    looks = sum(len(close_ups(detector).regions(frame, c)) for c in candidates)
    assert looks > 0
    assert detector.detect(frame).runs == 1 + looks
    assert detector.detect(frame).above(0.99).runs == 1 + looks
    one_look = OnnxDetector(dataclasses.replace(detector.card, zoom=None))
    assert one_look.detect(frame).runs == 1


def test_a_candidate_the_first_look_saw_big_enough_gets_no_close_up_at_fill() -> None:
    card = find_card("l", "int8")
    assert card.zoom is not None and card.zoom.min_zoom == 1.5
    assert card.zoom.extra_fills == (0.6,)
    frame = make_clip(16, n_frames=1).frames[0]  # one 福, 172 x 177 pixels

    def found(**zoom: object) -> Detections:
        assert card.zoom is not None
        spec = dataclasses.replace(card.zoom, **zoom)  # type: ignore[arg-type]
        return OnnxDetector(dataclasses.replace(card, zoom=spec)).detect(frame)

    fill_only, shipped, always = found(extra_fills=None), found(), found(min_zoom=None)
    # at 0.4 its crop would magnify the frame 1.1x: only the 0.6 close-up (1.7x) is taken
    assert (fill_only.runs, shipped.runs, always.runs) == (1, 2, 3)
    assert [d.label for d in fill_only] == [d.label for d in shipped] == ["fu"]
    assert iou(fill_only.items[0].box, shipped.items[0].box) > 0.8


@pytest.mark.parametrize(
    ("seed", "content", "frame", "turned"),
    [
        (16, "fu", 0, True),  # a 福 framed big (no close-up at min_zoom 1.5): still checked
        (5, "fu", 0, True),  # a small 福
        (1843, "fu", 84, False),  # 逼 cut by the bottom edge, by a 福: 0.69 one way up, 0.31 turned
        (1815, "negative", 6, False),  # red 逼 on a yellow poster, which the glyph check refuses
    ],
)
def test_the_turned_check_confirms_fu_and_refuses_look_alikes_that_read_as_fu_one_way_up(
    seed: int, content: str, frame: int, turned: bool
) -> None:
    n_frames = 1 if frame == 0 else 120  # the clips eval-voting renders (drift depends on length)
    image = make_clip(seed, n_frames, content=content).frames[frame]  # type: ignore[arg-type]
    # Close-ups at fill only: the examples are what that second look reads
    detector = with_fills(find_card("l", "int8"))
    found = detector.detect(image)
    confirmer = detector.confirmer(image)
    assert len(found) == 1 and confirmer is not None
    assert confirmer(found.items[0]) is turned
    score = confirmer.check(found.items[0])
    assert (score >= 0.4) is turned
    # The glyph check's views, then the close-up unless the glyph check refused (1815)
    close_up = 0.0 if score == GLYPH_REFUSED else 1.0
    assert detector.glyph is not None
    assert confirmer.runs == close_up + detector.glyph.work


def with_zoom(card: ModelCard, **fields: object) -> OnnxDetector:
    """``card``'s detector with those fields of its second look changed."""
    assert card.zoom is not None
    zoom = dataclasses.replace(card.zoom, **fields)  # type: ignore[arg-type]
    return OnnxDetector(dataclasses.replace(card, zoom=zoom))


def without_rescue(card: ModelCard) -> ModelCard:
    """``card`` with its glyph check's rescue off: what the second look does on its own."""
    assert card.glyph is not None and card.glyph.rescue_from is not None
    return dataclasses.replace(card, glyph=dataclasses.replace(card.glyph, rescue_from=None))


def with_fills(card: ModelCard, *extra: float) -> OnnxDetector:
    """``card``'s detector with close-ups at ``fill`` and ``extra`` shares only."""
    return with_zoom(card, extra_fills=extra or None)


def test_a_large_fu_without_a_close_up_at_fill_gets_one_at_a_larger_share() -> None:
    card = without_rescue(find_card("l", "int8"))
    clip = make_clip(18605, n_frames=1)  # a 倒福 in bare ink on a cup, cut at the bottom, 132 px
    frame, truth = clip.frames[0], tuple(clip.boxes[0][0].tolist())
    fill_only, more = with_fills(card).detect(frame), with_fills(card, 0.6).detect(frame)
    assert not any(iou(d.box, truth) >= 0.5 for d in fill_only)
    found = [d for d in more if iou(d.box, truth) >= 0.5]
    assert len(found) == 1 and found[0].score >= card.threshold
    assert more.runs == 2  # the first look and the one close-up that magnifies enough


def test_the_best_close_up_decides_and_each_is_charged() -> None:
    card = find_card("l", "int8")
    detector = with_fills(card, 0.5, 0.6)
    zoom = detector.card.zoom
    assert zoom is not None
    frame = make_clip(5, n_frames=1).frames[0]  # a small 福: a close-up at every share
    candidate = detector.network.look(frame, detector.candidate_threshold)[0]
    regions = close_ups(detector).regions(frame, candidate)
    assert len(regions) == 3
    each = [close_ups(detector).best(frame, candidate, [region])[0] for region in regions]
    best, looked, _ = close_ups(detector).best(frame, candidate, regions)
    assert best is not None and looked == 3
    assert best == max((d for d in each if d is not None), key=lambda d: d.score)
    assert detector.detect(frame).runs == 1 + 3 * len(
        detector.network.look(frame, detector.candidate_threshold)[: zoom.max_candidates]
    )


@pytest.mark.parametrize(
    ("seed", "frame", "fu", "cut_before"),
    [
        (19024, 84, 0, 0.3),  # a white 倒福 on red paper cut by the right edge: 0.26 first
        (19009, 91, 0, 0.2),  # thin white bare ink on a saucer, cut at the foot: 0.10 first
    ],
)
def test_a_fu_the_first_look_scores_under_an_earlier_cut_is_found_through_its_close_up(
    seed: int, frame: int, fu: int, cut_before: float
) -> None:
    card = find_card("l", "int8")
    assert card.zoom is not None and card.zoom.candidates == 0.1
    clip = make_clip(seed, 120, content="fu")
    image, truth = clip.frames[frame], tuple(clip.boxes[frame][fu].tolist())
    shipped = OnnxDetector(card)
    first = [c for c in shipped.network.look(image, 0.05) if iou(c.box, truth) >= 0.3]
    assert 0.1 <= first[0].score < cut_before  # a candidate at the shipped cut only
    found = [d for d in shipped.detect(image) if iou(d.box, truth) >= 0.5]
    assert len(found) == 1 and found[0].score >= 0.85  # its close-up reads it plainly
    earlier = with_zoom(card, candidates=cut_before)
    assert not any(iou(d.box, truth) >= 0.5 for d in earlier.detect(image))


def test_a_card_reads_extra_fills(tmp_path) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(find_card("l", "int8").path.read_text(encoding="utf-8"))
    zoom = {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "extra_fills": [0.6, 0.8]}
    path = tmp_path / "fu_l.int8.json"  # without its glyph check, which is not copied
    path.write_text(json.dumps(raw | {"zoom": zoom, "glyph": None}), encoding="utf-8")
    spec = read_card(path).zoom
    assert spec is not None and spec.fills == (0.4, 0.6, 0.8)
    assert ZoomSpec().fills == (0.4,)


def test_the_turned_check_is_offered_only_by_cards_that_set_it_and_passes_other_labels() -> None:
    card = find_card("l", "int8")
    assert card.zoom is not None and card.zoom.turned_min == 0.4
    frame = make_clip(3, n_frames=1).frames[0]
    plain = dataclasses.replace(
        card, zoom=dataclasses.replace(card.zoom, turned_min=None), glyph=None
    )
    assert OnnxDetector(plain).confirmer(frame) is None
    confirmer = OnnxDetector(card).confirmer(frame)
    assert confirmer is not None
    assert confirmer(Detection("poster-7", 0.5, (0, 0, 10, 10)))  # a target: not its label
    assert confirmer.runs == 0  # and no close-up for it


def test_without_zoom_the_detector_reports_the_first_look() -> None:
    card = dataclasses.replace(find_card("l", "int8"), zoom=None)
    detector = OnnxDetector(card)
    frame = make_clip(3, n_frames=1).frames[0]
    assert list(detector.detect(frame)) == detector.network.look(frame, card.threshold)


@pytest.mark.parametrize(
    "zoom",
    [
        {"fill": 0, "candidates": 0.3, "max_candidates": 6},
        {"fill": 1.2, "candidates": 0.3, "max_candidates": 6},
        {"fill": 0.4, "candidates": 1.5, "max_candidates": 6},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 0},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "min_zoom": 0.5},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "turned_min": 1.5},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "extra_fills": [1.2]},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "extra_fills": [0]},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "extra_fills": []},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "extra_fills": 0.6},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "out_fill": 0},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "out_fill": 1.5},
        {"fill": 0.4, "candidates": 0.3, "max_candidates": 6, "size": [160, 120]},  # no more
    ],
)
def test_bad_zoom_specs_are_refused(tmp_path, zoom) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(find_card("l", "int8").path.read_text(encoding="utf-8"))
    path = tmp_path / "fu_l.int8.json"  # without its glyph check, which is not copied
    path.write_text(json.dumps(raw | {"zoom": zoom, "glyph": None}), encoding="utf-8")
    with pytest.raises(ModelCardError, match=r"fu_l\.int8\.json: zoom\."):
        read_card(path)


@pytest.mark.parametrize(
    ("box", "fill", "min_zoom", "region"),
    [
        # a 福 filling the frame's height: a view twice the frame's size, centred on it
        ((100, 0, 540, 480), 0.5, 1.5, (-320, -240, 960, 720)),
        # off centre and cut by the top: the view stays centred on the box
        ((200, -40, 600, 360), 0.5, 1.5, (-133, -240, 933, 560)),
        # a wide box: its width sets the view (aspect 4:3)
        ((0, 100, 640, 400), 0.6, 1.5, (-213, -150, 853, 650)),
        # 300 px high: shrunk 1.25x only, less than min_zoom
        ((170, 90, 470, 390), 0.5, 1.5, None),
        ((170, 90, 470, 390), 0.5, 1.2, (-80, -60, 720, 540)),
        # a small box would be magnified, not shrunk
        ((300, 220, 340, 260), 0.5, 1.0, None),
    ],
)
def test_zoom_out_region(box, fill, min_zoom, region) -> None:  # type: ignore[no-untyped-def]
    got = zoom_out_region(box, 640, 480, fill, ASPECT, min_zoom)
    assert got == (None if region is None else pytest.approx(region, abs=1))
    if got is not None:
        x0, y0, x1, y1 = got
        assert (box[3] - box[1]) / (y1 - y0) <= fill + 0.01
        assert (x0 + x1) / 2 == pytest.approx((box[0] + box[2]) / 2, abs=1)


CLOSE = SceneOptions(glyph_fill=(0.8, 0.85), aimed=True)
"""A 福 filling the screen, as people hold a phone to scan one."""


def with_out_fill(out_fill: float | None) -> OnnxDetector:
    return with_zoom(without_rescue(find_card("l", "int8")), out_fill=out_fill)


@pytest.mark.parametrize("seed", [2, 13, 15])  # first look 0.62, 0.48, 0.45
def test_a_fu_filling_the_screen_is_found_zoomed_out_and_passes_the_turned_check(
    seed: int,
) -> None:
    clip = make_clip(seed, n_frames=1, options=CLOSE)
    frame, truth = clip.frames[0], tuple(clip.boxes[0][0].tolist())
    assert truth[3] - truth[1] > 0.9 * 480
    first_look, zoomed_out = with_out_fill(None), with_out_fill(0.5)
    assert not any(iou(d.box, truth) >= 0.5 for d in first_look.detect(frame))
    found = zoomed_out.detect(frame)
    (hit,) = [d for d in found if iou(d.box, truth) >= 0.5]
    assert hit.score >= zoomed_out.threshold
    assert all(0 <= v <= limit for v, limit in zip(hit.box, (640, 480, 640, 480), strict=True))
    assert found.runs == 2  # the first look and the zoomed-out one
    confirmer = zoomed_out.confirmer(frame)
    assert confirmer is not None and confirmer(hit)


@pytest.mark.parametrize(
    ("seed", "options"),
    [(2, CLOSE), (13, CLOSE), (15, CLOSE), (18236, SceneOptions())],  # close, and cut by an edge
)
def test_the_shipped_rescue_keeps_what_the_close_ups_alone_miss(
    seed: int, options: SceneOptions
) -> None:
    clip = make_clip(seed, n_frames=1, options=options)
    frame, truth = clip.frames[0], tuple(clip.boxes[0][0].tolist())
    # the shipped card with neither the zoomed-out look nor the extra fill
    card = find_card("l", "int8")
    rescuing = with_zoom(card, out_fill=None, extra_fills=None)
    (hit,) = [d for d in rescuing.detect(frame) if iou(d.box, truth) >= 0.5]
    assert card.glyph is not None and card.glyph.rescue_sure_score is not None
    assert hit.score == card.glyph.rescue_sure_score  # every glyph view sure of these 福


def test_a_fu_the_first_look_saw_at_a_known_scale_gets_no_zoomed_out_look() -> None:
    frame = make_clip(16, n_frames=1).frames[0]  # one 福, 172 x 177 pixels: a close-up
    plain, zoomed_out = with_out_fill(None).detect(frame), with_out_fill(0.5).detect(frame)
    assert plain.runs == zoomed_out.runs == 2 and list(plain) == list(zoomed_out)
