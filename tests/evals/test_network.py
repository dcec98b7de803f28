"""eval-network's bookkeeping: which clips run, and a path's summary of its runs."""

from __future__ import annotations

import argparse

import pytest

from evals.browser import SENDER_FIELDS
from evals.network import Run, clips, longest_gap, report_table, summarize


def run(content: str, decision_t: float | None, gap: float = 0.1, nacks: float = 0) -> Run:
    decided = None if decision_t is None else decision_t + 2.0
    sender = dict.fromkeys(SENDER_FIELDS, 0.0) | {"nackCount": nacks, "bytesSent": 1000.0}
    return Run("impaired", content, 0, decision_t, decided, 1.5, 10, gap, 5.0, sender)


def test_clips_are_the_fu_ones_then_the_look_alikes_each_of_its_own_seed():
    args = argparse.Namespace(clips=2, negatives=1, seed=10)
    assert list(clips(args)) == [("fu", 10), ("fu", 11), ("negative", 12)]


@pytest.mark.parametrize(("times", "gap"), [([], 0.0), ([0.5], 0.0), ([0.0, 0.1, 0.9, 1.0], 0.8)])
def test_the_longest_gap_between_frame_results(times, gap):
    assert longest_gap(times) == pytest.approx(gap)


def test_a_summary_counts_recall_false_recognitions_and_what_the_video_cost():
    runs = [
        run("fu", 0.3, nacks=2),
        run("fu", 0.5),
        run("fu", None, gap=2.5),
        run("negative", None),
        run("negative", 1.0, nacks=4),
    ]
    summary = summarize(runs)
    assert (summary["recognized"], summary["fu_clips"]) == (2, 3)
    assert summary["median_decision_t"] == pytest.approx(0.4)
    assert summary["median_decision_wall_s"] == pytest.approx(2.4)
    assert summary["median_connected_s"] == 1.5
    assert summary["median_after_connected_s"] == pytest.approx(0.9)
    assert (summary["false"], summary["negative_clips"]) == (1, 2)
    assert summary["nackCount"] == 6 and summary["watched_s"] == 25.0
    assert summary["longest_gap_s"] == 2.5
    row = report_table({"impaired": summary}).splitlines()[2]
    assert "| 2/3 " in row and "| 1/2 " in row and "| 2.4 " in row  # NACKs per 10 s
