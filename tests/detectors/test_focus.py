"""The second look spends nothing on candidates the vote has settled (detect_in)."""

import pytest

from detectors.card import find_card
from detectors.close_ups import REFUSAL_KEPT_S, refused_before, settled
from detectors.core import Detection, FrameContext, Verdict
from detectors.onnx_detector import OnnxDetector
from detectors.synth.scenes import make_clip

FU = Detection("fu", 0.8, (100.0, 100.0, 140.0, 140.0))
NEAR = (102.0, 101.0, 141.0, 142.0)
FAR = (300.0, 300.0, 340.0, 340.0)


@pytest.mark.parametrize(
    ("candidate", "recognized", "expected"),
    [
        (FU, (("fu", NEAR),), True),
        (FU, (("fu", FAR),), False),  # another track
        (FU, (("poster", NEAR),), False),  # another label
        (Detection("fu", 0.5, FU.box), (("fu", NEAR),), False),  # under the threshold
        (FU, (), False),
    ],
)
def test_a_candidate_is_settled_on_a_recognized_track_at_the_threshold(
    candidate: Detection, recognized: tuple[tuple[str, tuple[float, ...]], ...], expected: bool
) -> None:
    context = FrameContext(1.0, recognized)  # type: ignore[arg-type]
    assert settled(candidate, context, 0.69) is expected


@pytest.mark.parametrize(
    ("verdict", "t", "expected"),
    [
        (Verdict("fu", NEAR, 1.0, False), 1.2, True),
        (Verdict("fu", NEAR, 1.0, False), 1.0 + REFUSAL_KEPT_S, False),  # too old
        (Verdict("fu", NEAR, 1.0, True), 1.2, False),  # confirmed: looked at again
        (Verdict("fu", FAR, 1.0, False), 1.2, False),  # another candidate
        (Verdict("poster", NEAR, 1.0, False), 1.2, False),
        (Verdict("fu", NEAR, 1.5, False), 1.2, False),  # from a later frame
    ],
)
def test_a_refusal_stands_for_a_moment(verdict: Verdict, t: float, expected: bool) -> None:
    found = refused_before(FU, FrameContext(t, verdicts=(verdict,)))
    assert (found is verdict) if expected else found is None


@pytest.fixture(scope="module")
def detector() -> OnnxDetector:
    return OnnxDetector(find_card("l", "int8"))


def test_told_nothing_it_detects_as_without_a_context(detector: OnnxDetector) -> None:
    frame = make_clip(5, n_frames=1).frames[0]  # a small 福: close-ups at both shares
    plain, told = detector.detect(frame), detector.detect_in(frame, FrameContext(2.0))
    assert told.items == plain.items and told.runs == plain.runs > 1
    assert [(v.label, v.t, v.confirmed) for v in told.verdicts] == [("fu", 2.0, True)]
    assert plain.verdicts == ()


def test_a_recognized_fu_the_first_look_scores_high_gets_no_close_up(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(5, n_frames=1).frames[0]
    (first,) = [c for c in detector.network.look(frame, 0.5)]
    assert first.score >= detector.threshold
    told = detector.detect_in(frame, FrameContext(0.0, (("fu", first.box),)))
    assert told.items == (first,) and told.runs == 1 and told.verdicts == ()


def test_a_candidate_refused_a_moment_ago_is_dropped_without_close_ups(
    detector: OnnxDetector,
) -> None:
    frame = make_clip(5, n_frames=1).frames[0]
    (first,) = [c for c in detector.network.look(frame, 0.5)]
    refusal = Verdict("fu", first.box, 0.0, False)
    told = detector.detect_in(frame, FrameContext(0.1, verdicts=(refusal,)))
    assert told.items == () and told.runs == 1 and told.verdicts == (refusal,)
