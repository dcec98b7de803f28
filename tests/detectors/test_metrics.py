"""Matching detections to labelled boxes, and timing calls in turn."""

import numpy as np

from detectors import metrics
from detectors.core import Detection, Detections


def test_each_truth_box_is_matched_once_best_detection_first() -> None:
    truth = np.array([[0, 0, 10, 10]], np.float32)
    found = Detections((Detection("fu", 0.9, (0, 0, 10, 10)), Detection("fu", 0.8, (1, 1, 10, 10))))
    assert metrics.match(found, truth) == [(0.9, True), (0.8, False)]


def test_a_detection_of_an_ignored_fu_counts_neither_way() -> None:
    truth = np.array([[0, 0, 10, 10]], np.float32)
    ignore = np.array([[50, 50, 60, 70]], np.float32)
    found = Detections(
        (Detection("fu", 0.9, (50, 50, 60, 69)), Detection("fu", 0.8, (0, 0, 10, 9)))
    )
    assert metrics.match(found, truth, ignore) == [(0.8, True)]
    assert metrics.match(found, truth) == [(0.9, False), (0.8, True)]


def test_median_ms_times_every_call_in_turn() -> None:
    calls: list[str] = []
    medians = metrics.median_ms([lambda: calls.append("a"), lambda: calls.append("b")], 3)
    assert len(medians) == 2 and all(m >= 0 for m in medians)
    assert calls == ["a", "b"] * 8  # 5 warm-up rounds + 3 timed, alternating
