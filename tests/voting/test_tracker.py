import pytest

from detectors.core import Detection
from voting.tracker import IouTracker, centre_distance


def det(box, score=0.9, label="fu"):
    return Detection(label, score, box)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 0, 10, 10), (0, 0, 10, 10), 0.0),
        ((0, 0, 10, 10), (10, 0, 20, 10), 10 / (10 * 2**0.5)),
        ((0, 0, 0, 0), (0, 0, 0, 0), float("inf")),
    ],
)
def test_centre_distance(a, b, expected):
    assert centre_distance(a, b) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("second", "same_track"),
    [
        ((2, 2, 102, 102), True),  # overlaps a lot
        ((40, 0, 140, 100), True),  # IoU 0.43
        ((60, 0, 160, 100), True),  # IoU 0.25 < 0.3 but centres 0.42 diagonals apart
        ((80, 0, 180, 100), False),  # neither
        ((0, 0, 30, 30), False),  # same corner, different size: centres too far
    ],
)
def test_association_by_overlap_or_centre(second, same_track):
    tracker = IouTracker()
    ((first, _),) = tracker.associate([det((0, 0, 100, 100))], 0.0)
    ((again, _),) = tracker.associate([det(second)], 0.1)
    assert (again is first) == same_track


def test_labels_never_mix():
    tracker = IouTracker()
    ((a, _),) = tracker.associate([det((0, 0, 100, 100), label="fu")], 0.0)
    ((b, _),) = tracker.associate([det((0, 0, 100, 100), label="cat")], 0.1)
    assert a.id != b.id


def test_best_pairs_win_regardless_of_detection_order():
    tracker = IouTracker()
    pairs = tracker.associate([det((0, 0, 100, 100)), det((200, 0, 300, 100))], 0.0)
    left, right = (track for track, _ in pairs)
    # The lower-scored detection comes first but must still go to its own track.
    pairs = tracker.associate([det((205, 0, 305, 100), 0.5), det((5, 0, 105, 100), 0.9)], 0.1)
    assert [track for track, _ in pairs] == [right, left]


def test_a_track_takes_its_best_detection_and_the_other_starts_a_track():
    tracker = IouTracker()
    ((first, _),) = tracker.associate([det((0, 0, 100, 100))], 0.0)
    pairs = tracker.associate([det((2, 2, 102, 102)), det((4, 4, 104, 104), 0.8)], 0.1)
    assert [track is first for track, _ in pairs] == [True, False]


@pytest.mark.parametrize(("gap", "kept"), [(0.5, True), (1.0, True), (1.01, False)])
def test_tracks_survive_gaps_in_media_time(gap, kept):
    tracker = IouTracker(max_gap=1.0)
    ((track, _),) = tracker.associate([det((0, 0, 100, 100))], 0.0)
    gone = tracker.expire(gap)
    assert (track in tracker.tracks) == kept
    assert (gone == [track]) != kept


def test_full_tracker_evicts_the_stalest_unmatched_track():
    tracker = IouTracker(max_tracks=2)
    ((old, _),) = tracker.associate([det((0, 0, 10, 10))], 0.0)
    ((newer, _),) = tracker.associate([det((100, 0, 110, 10))], 0.5)
    ((third, _),) = tracker.associate([det((200, 0, 210, 10))], 0.6)
    assert tracker.tracks == [newer, third]
    assert tracker.expire(0.6) == [old]
    assert tracker.expire(0.6) == []


def test_full_tracker_ignores_a_detection_when_every_track_is_in_use():
    tracker = IouTracker(max_tracks=1)
    pairs = tracker.associate([det((0, 0, 10, 10)), det((100, 0, 110, 10))], 0.0)
    assert len(pairs) == 1
    assert len(tracker.tracks) == 1


def test_drop_retires_a_track():
    tracker = IouTracker()
    ((track, _),) = tracker.associate([det((0, 0, 10, 10))], 0.0)
    tracker.drop(track)
    ((again, _),) = tracker.associate([det((0, 0, 10, 10))], 0.1)
    assert again.id != track.id
