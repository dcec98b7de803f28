"""The emulated camera's resolution: the phone never sees more pixels than its preview size.

A frame larger than the profile's camera (either orientation) is downscaled
before detection, and the boxes found are mapped back to the frame as received.
"""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np

from detectors.core import Confirmer, Detection, Detections, FrameSize, ImageBGR, scaled_box
from hw_sim.profiles import DeviceProfile


def camera_scale(profile: DeviceProfile, width: int, height: int) -> float:
    """Factor (<= 1) that fits a ``width x height`` frame into the camera, any orientation."""
    if profile.camera_width <= 0 or profile.camera_height <= 0 or width <= 0 or height <= 0:
        return 1.0
    cam_long = max(profile.camera_width, profile.camera_height)
    cam_short = min(profile.camera_width, profile.camera_height)
    return min(1.0, cam_long / max(width, height), cam_short / min(width, height))


def camera_view(profile: DeviceProfile, image: ImageBGR) -> tuple[ImageBGR, float]:
    """``image`` as the phone's camera delivers it, and the scale applied."""
    height, width = image.shape[:2]
    scale = camera_scale(profile, width, height)
    if scale >= 1.0:
        return image, 1.0
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    view = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return view.astype(np.uint8, copy=False), scale


def to_received(detections: Detections, scale: float, frame: FrameSize) -> Detections:
    """Boxes found in the camera view, in pixels of the ``frame`` (width, height) as received."""
    if scale == 1.0 and detections.frame == frame:
        return detections
    return Detections(
        tuple(Detection(d.label, d.score, scaled_box(d.box, 1 / scale)) for d in detections),
        detections.runs,
        frame,
        tuple(c.scaled(1 / scale) for c in detections.clutter),
    )


def confirm_received(confirmer: Confirmer, scale: float) -> Confirmer:
    """``confirmer``, made on the camera view, asked about detections in pixels as received
    (the inverse of :func:`to_received`)."""
    if scale == 1.0:
        return confirmer

    def check(d: Detection) -> float:
        return confirmer.check(Detection(d.label, d.score, scaled_box(d.box, scale)))

    return dataclasses.replace(confirmer, check=check)
