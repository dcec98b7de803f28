import numpy as np
import pytest
from object_scenes import PERSPECTIVE, covers, frame_with

from detectors.core import iou
from detectors.objects.features import frame_features, reference_features
from detectors.objects.index import MatchConfig, Target, TargetIndex, inlier_score
from detectors.objects.synth import cover_product


def _index(products):
    return TargetIndex([Target(p.name, (reference_features(p.image),)) for p in products])


def _box(corners):
    xs, ys = zip(*corners, strict=True)
    return (min(xs), min(ys), max(xs), max(ys))


@pytest.mark.parametrize(
    "corners",
    [
        PERSPECTIVE,
        [(150.0, 60.0), (470.0, 40.0), (450.0, 300.0), (170.0, 330.0)],  # rotated, turned away
        [(260.0, 180.0), (380.0, 180.0), (380.0, 360.0), (260.0, 360.0)],  # small, frontal
    ],
)
def test_a_registered_target_is_found_in_perspective_with_its_outline_as_box(corners):
    index = _index(covers())
    target = covers()[2]
    frame = frame_with(target.image, corners)
    found = index.detect(frame)
    assert [d.label for d in found] == [target.name]
    assert found.frame == (frame.shape[1], frame.shape[0])
    assert iou(found.items[0].box, _box(corners)) > 0.85
    assert 0.5 < found.items[0].score <= 1.0


@pytest.mark.parametrize("which", ["look_alike", "background"])
def test_unregistered_look_alikes_and_backgrounds_are_not_recognised(which):
    index = _index(covers())
    image = covers()[2].look_alike if which == "look_alike" else None
    assert len(index.detect(frame_with(image, PERSPECTIVE))) == 0


def test_an_empty_index_finds_nothing():
    index = TargetIndex([])
    assert index.descriptor_count == 0
    assert len(index.detect(frame_with(cover_product(1).image, PERSPECTIVE))) == 0


def test_the_index_grows_and_still_finds_the_first_target():
    products = [cover_product(seed) for seed in range(1, 31)]
    small, large = _index(products[:3]), _index(products)
    assert large.names[:3] == small.names
    assert large.descriptor_count > 9 * small.descriptor_count
    frame = frame_with(products[0].image, PERSPECTIVE)
    assert len(large.shortlist(frame_features(frame))) <= large.config.shortlist
    assert [d.label for d in large.detect(frame)] == [products[0].name]


@pytest.mark.parametrize(
    ("inliers", "low", "high"), [(4, 0.0, 0.25), (12, 0.75, 0.85), (30, 0.99, 1.0)]
)
def test_scores_rise_with_inliers_and_stay_in_unit_range(inliers, low, high):
    assert low <= inlier_score(inliers, MatchConfig()) <= high
    scores = [inlier_score(n, MatchConfig()) for n in range(0, 200, 5)]
    assert scores == sorted(scores) and all(0 <= s <= 1 for s in scores)
    assert np.isfinite(scores).all()
