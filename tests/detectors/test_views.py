"""Crops that may reach past the frame: inside, padded, shrunk, wholly outside."""

import numpy as np
import pytest

from detectors.views import view, within


def test_a_view_past_the_frame_is_padded_and_one_inside_is_the_frame_itself() -> None:
    image = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    inside = view(image, (1, 1, 4, 3), 114)
    assert np.shares_memory(inside, image) and np.array_equal(inside, image[1:3, 1:4])
    padded = view(image, (-2, -1, 8, 5), 114)
    assert padded.shape == (6, 10, 3)
    assert np.array_equal(padded[1:5, 2:8], image)
    assert (padded[0] == 114).all() and (padded[:, :2] == 114).all() and (padded[5] == 114).all()
    frame = np.full((480, 640, 3), 7, np.uint8)
    shrunk = view(frame, (-320, -240, 960, 720), 114, 0.25)  # twice the frame, to a quarter
    assert shrunk.shape == (240, 320, 3)
    assert (shrunk[60:180, 80:240] == 7).all() and (shrunk[:60] == 114).all()


@pytest.mark.parametrize(
    ("region", "scale", "shape"),
    [
        ((10, 0, 14, 3), 1.0, (3, 4, 3)),  # right of a 6-wide frame
        ((-8, -6, -2, -1), 1.0, (5, 6, 3)),  # above and left
        ((0, 20, 8, 28), 0.5, (4, 4, 3)),  # below, shrunk
    ],
)
def test_a_view_wholly_outside_the_frame_is_all_grey_of_its_size(
    region: tuple[int, int, int, int], scale: float, shape: tuple[int, int, int]
) -> None:
    image = np.zeros((4, 6, 3), np.uint8)
    got = view(image, region, 114, scale)
    assert got.shape == shape and (got == 114).all()


@pytest.mark.parametrize(
    ("region", "inside"),
    [((0, 0, 6, 4), True), ((1, 1, 5, 3), True), ((-1, 0, 6, 4), False), ((0, 0, 6, 5), False)],
)
def test_within_says_whether_a_region_lies_in_the_frame(
    region: tuple[int, int, int, int], inside: bool
) -> None:
    assert within(region, 6, 4) is inside
