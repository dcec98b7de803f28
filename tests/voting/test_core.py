"""The wire form of what voters produce (the ``frame`` and ``event`` messages' parts)."""

import pytest

from voting.core import TrackedDetection, VoteEvent


def test_a_tracked_detection_rounds_its_score_and_box() -> None:
    tracked = TrackedDetection("fu", 0.876543, (10.123, 20.456, 110.789, 220.0), track=3)
    assert tracked.to_json() == {
        "label": "fu",
        "score": 0.8765,
        "box": [10.1, 20.5, 110.8, 220.0],
        "track": 3,
    }


@pytest.mark.parametrize(
    ("event", "extra"),
    [
        pytest.param(VoteEvent("lost", "fu", 2, 1.23456), {}, id="lost-without-score-or-box"),
        pytest.param(
            VoteEvent("recognized", "fu", 2, 1.23456, score=0.912345, box=(1.04, 2.0, 3.0, 4.0)),
            {"score": 0.9123, "box": [1.0, 2.0, 3.0, 4.0]},
            id="recognized-with-both",
        ),
        pytest.param(
            VoteEvent("updated", "fu", 2, 1.23456, box=(1.0, 2.0, 3.0, 4.0)),
            {"box": [1.0, 2.0, 3.0, 4.0]},
            id="updated-with-a-box-only",
        ),
    ],
)
def test_an_event_carries_score_and_box_only_when_it_has_them(
    event: VoteEvent, extra: dict[str, object]
) -> None:
    base = {"type": "event", "event": event.event, "label": "fu", "track": 2, "t": 1.235}
    assert event.to_json() == base | extra
