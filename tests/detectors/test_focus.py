"""The second look spends nothing on candidates the vote has settled (detect_in)."""

import pytest

from detectors.card import find_card
from detectors.close_ups import settled
from detectors.core import Detection, FrameContext
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
    context = FrameContext(recognized)  # type: ignore[arg-type]
    assert settled(candidate, context, 0.69) is expected


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
    told = detector.detect_in(frame, FrameContext((("fu", first.box),)))
    assert told.items == (first,) and told.runs == 1
