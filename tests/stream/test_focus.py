"""A session's memory of what its vote settled, handed to the detector before each frame."""

from detectors.core import Detections, Verdict
from stream.focus import Focus
from voting.core import TrackedDetection, VoteEvent, VoteUpdate

BOX = (10.0, 20.0, 30.0, 40.0)


def test_recognized_tracks_are_remembered_with_their_latest_box_until_lost() -> None:
    focus = Focus()
    focus.update(
        Detections(), VoteUpdate(events=(VoteEvent("recognized", "fu", 3, 0.0, 0.9, BOX),))
    )
    assert focus.context(0.1).recognized == (("fu", BOX),)
    moved = (12.0, 20.0, 32.0, 40.0)
    focus.update(Detections(), VoteUpdate((TrackedDetection("fu", 0.8, moved, 3),)))
    focus.update(Detections(), VoteUpdate((TrackedDetection("fu", 0.8, BOX, 4),)))  # not recognized
    assert focus.context(0.2).recognized == (("fu", moved),)
    focus.update(Detections(), VoteUpdate(events=(VoteEvent("lost", "fu", 3, 0.3),)))
    assert focus.context(0.3).recognized == ()


def test_the_context_is_in_the_detectors_pixels_and_carries_the_last_verdicts() -> None:
    focus = Focus()
    verdict = Verdict("fu", BOX, 0.0, False)
    focus.update(
        Detections(verdicts=(verdict,)),
        VoteUpdate(events=(VoteEvent("recognized", "fu", 1, 0.0, 0.9, BOX),)),
    )
    context = focus.context(0.5, scale=0.5)
    assert context.t == 0.5
    assert context.recognized == (("fu", (5.0, 10.0, 15.0, 20.0)),)
    assert context.verdicts == (Verdict("fu", (5.0, 10.0, 15.0, 20.0), 0.0, False),)
    focus.update(Detections(), VoteUpdate())
    assert focus.context(0.6).verdicts == ()
