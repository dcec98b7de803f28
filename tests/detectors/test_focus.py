"""The second look spends on a recognized track only what keeps it, and nothing on clutter it
just saw through (detect_in)."""

import dataclasses

import pytest

from detectors.card import find_card
from detectors.close_ups import (
    CLUTTER_KEPT_S,
    KEPT_TRACK_MARGIN,
    known_clutter,
    on_recognized_track,
    unexamined_clutter,
)
from detectors.core import Clutter, Detection, FrameContext
from detectors.onnx_detector import OnnxDetector
from detectors.synth.scenes import make_clip

FU = Detection("fu", 0.8, (100.0, 100.0, 140.0, 140.0))
NEAR = (102.0, 101.0, 141.0, 142.0)
FAR = (300.0, 300.0, 340.0, 340.0)


@pytest.mark.parametrize(
    ("recognized", "expected"),
    [
        ((("fu", NEAR),), True),
        ((("fu", FAR),), False),  # another track
        ((("poster", NEAR),), False),  # another label
        ((), False),
    ],
)
def test_a_candidate_lies_on_a_recognized_track_of_its_label_that_it_overlaps(
    recognized: tuple[tuple[str, tuple[float, ...]], ...], expected: bool
) -> None:
    context = FrameContext(recognized=recognized)  # type: ignore[arg-type]
    assert on_recognized_track(FU, context) is expected


@pytest.fixture(scope="module")
def detector() -> OnnxDetector:
    return OnnxDetector(find_card("l", "int8"))


def test_told_nothing_it_detects_as_without_a_context(detector: OnnxDetector) -> None:
    frame = make_clip(5, n_frames=1).frames[0]  # a small 福: close-ups at both shares
    plain, told = detector.detect(frame), detector.detect_in(frame, FrameContext())
    assert told == plain and told.runs > 1


def test_a_recognized_fu_the_first_look_scores_high_gets_no_close_up(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(5, n_frames=1).frames[0]
    (first,) = [c for c in detector.network.look(frame, 0.5)]
    assert first.score >= detector.threshold
    told = detector.detect_in(frame, FrameContext(recognized=(("fu", first.box),)))
    assert told.items == (first,) and told.runs == 1


def test_a_recognized_fu_the_first_look_scores_a_little_low_is_kept_at_the_threshold(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(5, n_frames=1).frames[0]
    (first,) = [c for c in detector.network.look(frame, 0.5)]
    # A threshold just over the first look's score: within the margin, kept without a close-up.
    strict = OnnxDetector(detector.card, threshold=first.score + 0.01)
    told = strict.detect_in(frame, FrameContext(recognized=(("fu", first.box),)))
    assert told.items == (dataclasses.replace(first, score=strict.threshold),)
    assert told.runs == 1


def test_a_recognized_fu_the_first_look_scores_low_gets_close_ups_until_one_keeps_it(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(5, n_frames=1).frames[0]  # close-ups at both shares, the first confirms
    (first,) = [c for c in detector.network.look(frame, 0.5)]
    low = dataclasses.replace(first, score=detector.threshold - KEPT_TRACK_MARGIN - 0.01)
    plain = detector.second_looks(frame, [low])
    told = detector.second_looks(frame, [low], FrameContext(recognized=(("fu", first.box),)))
    (kept,) = told.items
    assert kept.score >= detector.threshold and told.runs == 2 < plain.runs == 3


SEEN = Clutter("fu", FU.box, 0.2, 1.0)  # close-ups saw nothing like 福 at t = 1.0


@pytest.mark.parametrize(
    ("candidate", "t", "skipped"),
    [
        (Detection("fu", 0.2, FU.box), 1.2, True),
        (Detection("fu", 0.29, NEAR), 1.2, True),  # the same, scored a little higher
        (Detection("fu", 0.31, FU.box), 1.2, False),  # scored 0.1 higher: looked at again
        (Detection("fu", 0.2, FU.box), 1.0 + CLUTTER_KEPT_S, False),  # a moment has passed
        (Detection("fu", 0.2, FU.box), 0.9, False),  # another stream's time, or a reset
        (Detection("fu", 0.2, FAR), 1.2, False),  # elsewhere
        (Detection("poster", 0.2, FU.box), 1.2, False),  # another label
    ],
)
def test_clutter_is_skipped_for_a_moment_unless_the_first_look_scores_it_higher(
    candidate: Detection, t: float, skipped: bool
) -> None:
    found = known_clutter(candidate, FrameContext(t=t, clutter=(SEEN,)))
    assert (found == SEEN) is skipped


@pytest.mark.parametrize(
    ("examined", "t", "kept"),
    [
        ((), 1.2, True),  # ranked below the candidates examined this frame
        ((Detection("fu", 0.5, FAR),), 1.2, True),  # others examined
        ((Detection("poster", 0.2, NEAR),), 1.2, True),  # another label
        ((Detection("fu", 0.2, NEAR),), 1.2, False),  # examined: its verdict is this frame's
        ((), 1.0 + CLUTTER_KEPT_S, False),  # a moment has passed
        ((), 0.9, False),  # another stream's time, or a reset
    ],
)
def test_clutter_no_candidate_stands_on_is_remembered_for_its_moment(
    examined: tuple[Detection, ...], t: float, kept: bool
) -> None:
    context = FrameContext(t=t, clutter=(SEEN,))
    assert unexamined_clutter(context, examined) == ([SEEN] if kept else [])


def test_a_candidate_its_close_ups_see_nothing_in_is_skipped_on_the_next_frames(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(114, n_frames=1, content="empty").frames[0]  # one candidate, at 0.12
    first = detector.detect_in(frame, FrameContext(t=1.0))
    assert first.items == () and first.runs == 3  # two close-ups saw nothing
    (clutter,) = first.clutter
    assert (clutter.t, clutter.score) == (1.0, pytest.approx(0.12, abs=0.01))
    later = detector.detect_in(frame, FrameContext(t=1.2, clutter=first.clutter))
    assert later.items == () and later.runs == 1 and later.clutter == first.clutter
    again = detector.detect_in(frame, FrameContext(t=1.0 + CLUTTER_KEPT_S, clutter=first.clutter))
    assert again.runs == 3 and again.clutter[0].t == 1.0 + CLUTTER_KEPT_S
    elsewhere = Clutter("fu", FAR, 0.2, 1.0)  # clutter the first look ranks out of view
    carried = detector.detect_in(frame, FrameContext(t=1.2, clutter=(*first.clutter, elsewhere)))
    assert carried.clutter == (*first.clutter, elsewhere)
    assert detector.detect(frame).clutter == ()  # told nothing, it remembers nothing
