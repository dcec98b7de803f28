import numpy as np
import pytest

from detectors.core import Confirmer, Detection, Detections
from hw_sim import DeviceProfile, camera_scale, camera_view, confirm_received, to_received

VGA = DeviceProfile("p", camera_width=640, camera_height=480)


@pytest.mark.parametrize(
    ("profile", "size", "scale"),
    [
        (VGA, (640, 480), 1.0),
        (VGA, (320, 240), 1.0),  # never upscaled
        (VGA, (1280, 960), 0.5),
        (VGA, (960, 1280), 0.5),  # portrait fits a landscape camera turned
        (VGA, (1920, 1080), 1 / 3),  # the long side limits
        (VGA, (1000, 1000), 0.48),  # the short side limits
        (DeviceProfile("host"), (4000, 3000), 1.0),  # no camera: as received
    ],
)
def test_frames_larger_than_the_camera_are_scaled_down(profile, size, scale):
    assert camera_scale(profile, *size) == pytest.approx(scale)


def test_camera_view_and_boxes_back_in_received_pixels():
    image = np.zeros((960, 1280, 3), np.uint8)
    view, scale = camera_view(VGA, image)
    assert view.shape == (480, 640, 3) and view.dtype == np.uint8 and scale == 0.5
    found = Detections((Detection("fu", 0.9, (10.0, 20.0, 30.0, 40.0)),), runs=2)
    received = to_received(found, scale, (1280, 960))
    assert received.items[0].box == (20.0, 40.0, 60.0, 80.0)
    assert received.runs == 2  # the phone still pays for every run
    assert received.frame == (1280, 960)  # a voter tells boxes cut by the edge from it
    seen_whole = Detections(found.items, 2, (640, 480))
    assert to_received(seen_whole, 1.0, (640, 480)) is seen_whole
    assert camera_view(VGA, view)[0] is view


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_a_check_made_on_the_camera_view_is_asked_in_received_pixels(scale):
    asked = []
    in_view = Confirmer(lambda d: asked.append(d.box) or 0.9, 0.5, 2.0)
    received = confirm_received(in_view, scale)
    assert received(Detection("fu", 0.8, (20.0, 40.0, 60.0, 80.0)))
    assert asked == [(20.0 * scale, 40.0 * scale, 60.0 * scale, 80.0 * scale)]
    assert (received.min_score, received.work, received.runs) == (0.5, 2.0, 2.0)
