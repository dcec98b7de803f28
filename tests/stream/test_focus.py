"""A session's memory of what its vote settled, handed to the detector before each frame."""

from stream.focus import Focus
from voting.core import TrackedDetection, VoteEvent, VoteUpdate

BOX = (10.0, 20.0, 30.0, 40.0)


def test_recognized_tracks_are_remembered_with_their_latest_box_until_lost() -> None:
    focus = Focus()
    focus.update(VoteUpdate(events=(VoteEvent("recognized", "fu", 3, 0.0, 0.9, BOX),)))
    assert focus.context().recognized == (("fu", BOX),)
    moved = (12.0, 20.0, 32.0, 40.0)
    focus.update(VoteUpdate((TrackedDetection("fu", 0.8, moved, 3),)))
    focus.update(VoteUpdate((TrackedDetection("fu", 0.8, BOX, 4),)))  # not recognized
    assert focus.context().recognized == (("fu", moved),)
    focus.update(VoteUpdate(events=(VoteEvent("lost", "fu", 3, 0.3),)))
    assert focus.context().recognized == ()


def test_the_context_is_in_the_detectors_pixels() -> None:
    focus = Focus()
    focus.update(VoteUpdate(events=(VoteEvent("recognized", "fu", 1, 0.0, 0.9, BOX),)))
    assert focus.context(scale=0.5).recognized == (("fu", (5.0, 10.0, 15.0, 20.0)),)
