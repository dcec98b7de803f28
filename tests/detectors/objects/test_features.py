import cv2
import numpy as np
import pytest
from object_scenes import PERSPECTIVE, frame_with

from detectors.objects.features import (
    FAST_THRESHOLD,
    FRAME_FEATURES,
    FRAME_LEVELS,
    MIN_KEYPOINTS,
    OVERSAMPLE,
    REF_LEVELS,
    REF_SIDE,
    SCALE_STEP,
    SCORE_TYPE,
    TargetError,
    describe,
    frame_features,
    reference_features,
    spread,
    to_gray,
)
from detectors.objects.synth import cover_product

COVER = cover_product(1).image


def _uniform():
    return np.full((300, 400, 3), 128, np.uint8)


def _one_rectangle():
    image = np.full((300, 400, 3), 255, np.uint8)
    cv2.rectangle(image, (100, 80), (300, 220), (0, 0, 0), -1)
    return image


def _texture_in_a_corner():
    image = np.full((480, 480, 3), 60, np.uint8)
    image[:, :240] = 200
    image[20:160, 320:460] = np.random.default_rng(1).integers(0, 256, (140, 140, 3), np.uint8)
    return image


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: COVER[:80, :200], "image_too_small"),
        (_uniform, "no_texture"),
        (lambda: cv2.GaussianBlur(COVER, (0, 0), 5), "too_blurry"),
        (_one_rectangle, "too_few_features"),
        (_texture_in_a_corner, "features_clustered"),
    ],
)
def test_unusable_references_are_refused_with_a_stable_code(make, code):
    with pytest.raises(TargetError) as refused:
        reference_features(make())
    assert refused.value.code == code
    assert str(refused.value)  # an explanation for the user


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.5])
def test_a_printed_cover_is_accepted_at_any_size_and_normalised(scale):
    image = cv2.resize(COVER, None, fx=scale, fy=scale)
    features = reference_features(image)
    assert max(features.width, features.height) == REF_SIDE
    assert len(features) >= MIN_KEYPOINTS
    assert features.descriptors.shape == (len(features), 32)
    assert features.points.min() >= 0
    assert features.points[:, 0].max() <= features.width
    assert features.points[:, 1].max() <= features.height


def test_frame_features_are_in_pixels_of_the_frame_as_received():
    large = cv2.resize(COVER, (1280, 1600))
    features = frame_features(large)
    assert (features.width, features.height) == (1280, 1600)
    assert features.points[:, 0].max() > 700  # mapped back from the downscaled copy


@pytest.mark.parametrize(("levels", "count"), [(FRAME_LEVELS, FRAME_FEATURES), (REF_LEVELS, 500)])
def test_describe_keeps_what_one_orb_over_the_pyramid_and_the_spread_would(levels, count):
    gray = to_gray(frame_with(COVER, PERSPECTIVE))
    orb = cv2.ORB.create(
        OVERSAMPLE * count, SCALE_STEP, levels, fastThreshold=FAST_THRESHOLD, scoreType=SCORE_TYPE
    )
    keypoints, descriptors = orb.detectAndCompute(gray, None)
    points = np.asarray(cv2.KeyPoint.convert(keypoints), np.float32)
    response = np.array([kp.response for kp in keypoints], np.float32)
    chosen = spread(points, response, gray.shape[1], gray.shape[0], count)
    expected = {bytes(d) for d in descriptors[chosen]}
    got_points, got = describe(gray, count, levels)
    assert len(got) == len(chosen)
    assert {bytes(d) for d in got} == expected
    np.testing.assert_allclose(  # sorted per column: the same positions, in any order
        np.sort(got_points, axis=0), np.sort(points[chosen], axis=0), atol=0.5
    )
