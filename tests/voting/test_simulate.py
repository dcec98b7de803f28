from dataclasses import replace

import numpy as np
import pytest

from voting.simulate import BASE_FPS, FU, KINDS, NEGATIVE, ClipCheck, NoiseModel, make_sim_clip


@pytest.mark.parametrize("kind", KINDS)
def test_clips_are_deterministic_by_seed(kind):
    a, b = make_sim_clip(3, kind), make_sim_clip(3, kind)
    assert a.detections == b.detections
    assert np.array_equal(a.times, b.times)
    assert make_sim_clip(4, kind).detections != a.detections


@pytest.mark.parametrize(
    ("kind", "labels", "visits"),
    [("fu", [FU], [1]), ("mixed", [FU, FU, NEGATIVE], [1, 2, 1]), ("empty", [], [])],
)
def test_clip_truth(kind, labels, visits):
    clip = make_sim_clip(0, kind)
    assert [o.label for o in clip.objects] == labels
    assert [len(o.visits) for o in clip.objects] == visits
    for obj in clip.objects:
        assert len(obj.clarity) == len(obj.visits)
        assert obj.boxes.shape == (len(clip.times), 4)


def test_negative_clips_hold_look_alikes():
    labels = {o.label for s in range(5) for o in make_sim_clip(s, "negative").objects}
    assert labels == {NEGATIVE}


def test_a_clear_fu_is_detected_with_high_scores():
    clip = make_sim_clip(1, "fu", NoiseModel(positive_spread=0.0, clutter_per_frame=0.0))
    ((start, end),) = clip.objects[0].visits
    inside = [d for d, t in zip(clip.detections, clip.times, strict=True) if start <= t < end]
    scores = [max(x.score for x in d) for d in inside if len(d)]
    assert len(scores) > 0.8 * len(inside)
    assert np.median(scores) > 0.8


@pytest.mark.parametrize(("fps", "step"), [(30, 1), (15, 2), (10, 3), (8, 3.75)])
def test_subsample_keeps_the_timeline(fps, step):
    clip = make_sim_clip(2, "fu")
    low = clip.subsample(fps)
    assert np.mean(np.diff(low.frame_index)) == pytest.approx(step, rel=0.05)
    assert np.allclose(low.times, low.frame_index / BASE_FPS)
    assert low.detections[1] == clip.detections[low.frame_index[1]]


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown clip kind"):
        make_sim_clip(0, "cats")


def test_a_clip_lasts_its_frames_at_the_base_rate():
    clip = make_sim_clip(2, "fu")
    assert clip.duration == pytest.approx(len(clip.times) / BASE_FPS)


def test_a_subsampled_clip_asks_the_check_of_its_base_rate_frame():
    clip = make_sim_clip(2, "fu")
    assert clip.confirmer(0) is None  # no check: the voter decides alone
    scores = tuple(
        {d: 0.9 if k % 4 == 0 else 0.2 for d in found} for k, found in enumerate(clip.detections)
    )
    low = replace(clip, check=ClipCheck(scores, min_score=0.5)).subsample(15)
    seen = [i for i, found in enumerate(low.detections) if len(found)]
    answers = [low.confirmer(i)(next(iter(low.detections[i]))) for i in seen]
    assert answers == [low.frame_index[i] % 4 == 0 for i in seen]
    assert True in answers and False in answers
