"""A stream's memory of what its detector found lately, and the close-ups that follow it."""

from collections.abc import Sequence

import numpy as np
import pytest
from fakes import RedSquareDetector, red_square_frame

from detectors.core import Detection, Detections, ImageBGR
from detectors.follow import Follower, FollowingDetector, Recent

A = Detection("fu", 0.9, (10.0, 10.0, 50.0, 50.0))
A_MOVED = Detection("fu", 0.8, (14.0, 12.0, 54.0, 52.0))
B = Detection("fu", 0.7, (200.0, 100.0, 260.0, 160.0))
TARGET_AT_A = Detection("poster-3", 0.9, (10.0, 10.0, 50.0, 50.0))
FRAME = np.zeros((240, 320, 3), np.uint8)


def found(*dets: Detection) -> Detections:
    return Detections(dets)


@pytest.mark.parametrize(
    ("frames", "t", "hints"),
    [
        # nothing found yet: nothing to follow
        ([], 0.0, ()),
        # what the last frame found, within the memory's 0.5 s
        ([(0.0, [A, B])], 0.5, (A, B)),
        # older than that: forgotten
        ([(0.0, [A, B])], 0.51, ()),
        # a frame that found nothing forgets nothing before its time
        ([(0.0, [A]), (0.3, [])], 0.4, (A,)),
        # the object found again replaces its older box, the newest first
        ([(0.0, [A, B]), (0.2, [A_MOVED])], 0.3, (A_MOVED, B)),
        # and keeps being followed from its newest sighting
        ([(0.0, [A, B]), (0.2, [A_MOVED])], 0.65, (A_MOVED,)),
        # another label over the same box is another object
        ([(0.0, [A]), (0.1, [TARGET_AT_A])], 0.2, (TARGET_AT_A, A)),
        # time going back (another stream's clock) starts afresh
        ([(1.0, [A])], 0.5, ()),
    ],
)
def test_recent_keeps_what_was_confirmed_lately_one_per_object(
    frames: list[tuple[float, list[Detection]]], t: float, hints: tuple[Detection, ...]
) -> None:
    recent = Recent(0.5, limit=6)
    for seen, dets in frames:
        recent.remember(seen, found(*dets))
    assert recent.hints(t) == hints


def test_recent_keeps_at_most_its_limit_newest_first() -> None:
    recent = Recent(1.0, limit=2)
    recent.remember(0.0, found(B))
    recent.remember(0.1, found(A, TARGET_AT_A, A_MOVED))  # more at once than the limit
    assert recent.hints(0.2) == (A, TARGET_AT_A)
    recent.remember(0.3, found(B))
    assert recent.hints(0.3) == (B, A)


@pytest.mark.parametrize(("seconds", "limit"), [(0.0, 6), (-1.0, 6), (0.5, 0)])
def test_recent_refuses_a_memory_that_keeps_nothing(seconds: float, limit: int) -> None:
    with pytest.raises(ValueError, match="seconds > 0 and limit >= 1"):
        Recent(seconds, limit)


class ScriptedFollowing:
    """A following detector that reports a scripted frame's detections and notes its hints."""

    tier = "l"

    def __init__(self, script: list[list[Detection]], follow: tuple[float, int] | None) -> None:
        self._script = iter(script)
        self._follow = follow
        self.hints: list[tuple[Detection, ...]] = []

    @property
    def follow(self) -> tuple[float, int] | None:
        return self._follow

    def detect(self, image: ImageBGR, hints: Sequence[Detection] = ()) -> Detections:
        self.hints.append(tuple(hints))
        return found(*next(self._script))


def test_a_follower_hands_the_detector_what_it_found_before() -> None:
    detector = ScriptedFollowing([[A, B], [], [], [B]], (0.1, 6))
    stream = Follower(detector)
    assert stream.recent is not None and stream.recent.seconds == 0.1
    seen = [stream.detect(FRAME, t) for t in (0.0, 1 / 30, 0.2, 0.3)]
    assert [len(s) for s in seen] == [2, 0, 0, 1]
    # the second frame follows the first's finds; the third comes too late for them
    assert detector.hints == [(), (A, B), (), ()]


def test_a_detector_that_follows_nothing_judges_each_frame_alone() -> None:
    plain = Follower(RedSquareDetector())
    assert plain.recent is None
    assert len(plain.detect(red_square_frame(), 0.0)) == 1
    assert len(plain.detect(red_square_frame(square=False), 0.1)) == 0
    unset = ScriptedFollowing([[A], []], None)  # its card sets no follow
    assert isinstance(unset, FollowingDetector)
    stream = Follower(unset)
    assert stream.recent is None
    assert [len(stream.detect(FRAME, t)) for t in (0.0, 0.1)] == [1, 0]
    assert unset.hints == [(), ()]
