import json

import pytest

from clients.labels import ClipLabels, LabelError, read_labels, score_replay


def recognized(t, label="fu", track=1):
    return {"type": "event", "event": "recognized", "label": label, "track": track, "t": t}


def frame(index, *boxes, label="fu"):
    detections = [{"label": label, "score": 0.9, "box": list(b), "track": 1} for b in boxes]
    return {"type": "frame", "frame": index, "t": index / 10, "detections": detections}


@pytest.mark.parametrize(
    ("visible", "events", "right", "wrong", "missed", "delays"),
    [
        ([(1.0, 3.0)], [recognized(1.4)], 1, 0, 0, [0.4]),
        ([(1.0, 3.0)], [], 0, 0, 1, []),
        ([(1.0, 3.0)], [recognized(0.5)], 0, 1, 1, []),
        ([(1.0, 3.0)], [recognized(3.3)], 1, 0, 0, [2.3]),  # late, within grace
        ([(1.0, 3.0)], [recognized(3.6)], 0, 1, 1, []),  # too late
        ([(1.0, 3.0)], [recognized(1.2), recognized(1.3, track=2)], 1, 0, 0, [0.2]),
        ([(1.0, 1.5)], [], 0, 0, 0, []),  # too short to be required
        ([(0.0, 2.0), (5.0, 8.0)], [recognized(0.3), recognized(5.5)], 2, 0, 0, [0.3, 0.5]),
        ([], [recognized(2.0, label="cup")], 0, 0, 0, []),  # other labels are not judged
    ],
)
def test_event_scoring(visible, events, right, wrong, missed, delays):
    score = score_replay(events, ClipLabels("fu", tuple(visible)))
    assert (score.true_events, score.false_events, score.missed_ranges) == (right, wrong, missed)
    assert score.delays == pytest.approx(delays)


def test_frame_scoring_matches_boxes_by_iou():
    labels = ClipLabels("fu", (), {0: ((0, 0, 10, 10),), 1: ((0, 0, 10, 10),)})
    messages = [frame(0, (1, 1, 10, 10), (50, 50, 60, 60)), frame(1), frame(2, (0, 0, 5, 5))]
    score = score_replay(messages, labels)
    assert (score.frame_tp, score.frame_fp, score.frame_fn) == (1, 2, 1)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "Expecting value"),
        (json.dumps([["a.mp4", [0, 1]]]), "not a JSON object"),
        (json.dumps({"a.mp4": [[0, 4]]}), "'a.mp4': not an object with a 'visible' list"),
        (json.dumps({"a.mp4": {}}), "'a.mp4': not an object with a 'visible' list"),
        (json.dumps({"a.mp4": {"visible": [0, 4]}}), "cannot unpack"),
        (json.dumps({"a.mp4": {"visible": [[3, 1]]}}), "range end before start"),
        (json.dumps({"a.mp4": {"visible": [], "boxes": [[1, 2, 3, 4]]}}), "'boxes' is not"),
        (json.dumps({"a.mp4": {"visible": [[0, 1]], "boxes": {"x": []}}}), "invalid literal"),
    ],
)
def test_bad_label_files_are_refused_with_the_path_and_the_expected_shape(tmp_path, content, says):
    path = tmp_path / "labels.json"
    path.write_text(content)
    with pytest.raises(LabelError, match=r"labels\.json") as error:
        read_labels(path)
    assert says in str(error.value)
    if content != "not json":
        assert '"visible": [[START_S, END_S], ...]' in str(error.value)


def test_label_file_round_trip(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"a.mp4": {"visible": [[0.5, 2]], "boxes": {"3": [[1, 2, 3, 4]]}}}))
    labels = read_labels(path)["a.mp4"]
    assert labels.label == "fu" and labels.visible == ((0.5, 2.0),)
    assert labels.boxes == {3: ((1.0, 2.0, 3.0, 4.0),)}
