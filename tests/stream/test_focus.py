"""A session's memory of what earlier frames settled, handed to the detector before each frame."""

from detectors.core import Clutter, Detections
from stream.focus import Focus
from voting.core import TrackedDetection, VoteEvent, VoteUpdate

BOX = (10.0, 20.0, 30.0, 40.0)
NONE = Detections()


def test_recognized_tracks_are_remembered_with_their_latest_box_until_lost() -> None:
    focus = Focus()
    focus.update(VoteUpdate(events=(VoteEvent("recognized", "fu", 3, 0.0, 0.9, BOX),)), NONE)
    assert focus.context(0.0).recognized == (("fu", BOX),)
    moved = (12.0, 20.0, 32.0, 40.0)
    focus.update(VoteUpdate((TrackedDetection("fu", 0.8, moved, 3),)), NONE)
    focus.update(VoteUpdate((TrackedDetection("fu", 0.8, BOX, 4),)), NONE)  # not recognized
    assert focus.context(0.1).recognized == (("fu", moved),)
    focus.update(VoteUpdate(events=(VoteEvent("lost", "fu", 3, 0.3),)), NONE)
    assert focus.context(0.3).recognized == ()


def test_the_last_frames_clutter_is_handed_on_until_a_frame_finds_none() -> None:
    focus = Focus()
    clutter = Clutter("fu", BOX, 0.2, 0.5)
    focus.update(VoteUpdate(), Detections(clutter=(clutter,)))
    assert focus.context(0.6).clutter == (clutter,)
    assert focus.context(0.6).t == 0.6
    focus.update(VoteUpdate(), NONE)
    assert focus.context(0.7).clutter == ()


def test_the_context_is_in_the_detectors_pixels() -> None:
    focus = Focus()
    focus.update(VoteUpdate(events=(VoteEvent("recognized", "fu", 1, 0.0, 0.9, BOX),)), NONE)
    focus.update(VoteUpdate(), Detections(clutter=(Clutter("fu", BOX, 0.2, 0.0),)))
    context = focus.context(0.1, scale=0.5)
    assert context.recognized == (("fu", (5.0, 10.0, 15.0, 20.0)),)
    assert context.clutter == (Clutter("fu", (5.0, 10.0, 15.0, 20.0), 0.2, 0.0),)
