"""Reference images and frames shared by the object-scan tests (cheap: rendered covers)."""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np

from detectors.core import ImageBGR
from detectors.objects.synth import Product, cover_product

FRAME = (640, 480)


def frame_with(image: ImageBGR | None, corners: list[tuple[float, float]]) -> ImageBGR:
    """``image`` warped onto a textured 640x480 background so its corners land on ``corners``."""
    rng = np.random.default_rng(5)
    background = cv2.GaussianBlur(
        rng.integers(0, 256, (FRAME[1], FRAME[0], 3), np.uint8), (0, 0), 3
    )
    if image is None:
        return np.asarray(background, np.uint8)
    h, w = image.shape[:2]
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    warp = cv2.getPerspectiveTransform(src, np.array(corners, np.float32))
    flat = cv2.warpPerspective(image, warp, FRAME)
    mask = cv2.warpPerspective(np.full((h, w), 255, np.uint8), warp, FRAME)
    background[mask > 0] = flat[mask > 0]
    return np.asarray(background, np.uint8)


PERSPECTIVE = [(200.0, 90.0), (420.0, 120.0), (400.0, 400.0), (190.0, 430.0)]
"""A cover seen from the side, about 220 x 330 px in the frame."""


@cache
def covers(count: int = 6) -> list[Product]:
    """``count`` rendered covers (seeds 1, 2, ...), each with its look-alike."""
    return [cover_product(seed) for seed in range(1, count + 1)]
