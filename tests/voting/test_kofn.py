import pytest
from voting_scenes import A, ScriptedCheck, Thing, kinds, run, steady

from voting.kofn import KOfNVoter


@pytest.mark.parametrize(
    ("k", "n", "fps", "at"), [(3, 5, 10, 0.2), (1, 1, 10, 0.0), (3, 5, 5, 0.4)]
)
def test_recognized_at_the_kth_hit_and_lost_after_the_gap(k, n, fps, at):
    events = run(KOfNVoter(k=k, n=n), [Thing(A, steady(0.9, 0.0, 2.0))], fps, 4.0)
    assert kinds(events) == [("recognized", 1), ("lost", 1)]
    assert events[0].t == pytest.approx(at)
    assert events[1].t > 2.9  # more than max_gap after the last hit


def test_scores_below_min_score_do_not_count():
    assert run(KOfNVoter(min_score=0.5), [Thing(A, steady(0.45))], 10, 3.0) == []


def test_frame_rate_changes_its_timing():
    # The baseline counts frames, not time: the motivation for the sequential voter.
    slow = run(KOfNVoter(), [Thing(A, steady(0.9))], 5, 2.0)
    fast = run(KOfNVoter(), [Thing(A, steady(0.9))], 30, 2.0)
    assert slow[0].t > 4 * fast[0].t


def test_k_must_fit_n():
    with pytest.raises(ValueError, match="k <= n"):
        KOfNVoter(k=4, n=3)


@pytest.mark.parametrize(
    ("answers", "asked", "at"),
    [
        ([True], 1, 0.2),  # asked on the k-th hit only
        ([False, True], 2, 0.3),  # the refused hit counts as a miss: one frame later
        ([False], 24, None),  # never recognized: asked on the 24 of 40 hits that would decide
    ],
)
def test_the_check_is_asked_on_the_hit_that_would_recognize(answers, asked, at):
    check = ScriptedCheck(answers)
    events = run(KOfNVoter(k=3, n=5), [Thing(A, steady(0.9, 0.0, 4.0))], 10, 4.0, check=check)
    assert len(check.asked) == asked
    assert [e.t for e in events if e.event == "recognized"] == ([] if at is None else [at])


def test_a_track_gone_before_its_kth_hit_expires_without_an_event():
    # two hits of the three needed, then nothing: the track expires unannounced
    assert run(KOfNVoter(k=3, n=5), [Thing(A, steady(0.9, 0.0, 0.2))], 10, 4.0) == []
