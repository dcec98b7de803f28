"""Test doubles shared by several test packages."""

from __future__ import annotations

import struct

import cv2
import numpy as np

from detectors.core import Detection, Detections, ImageBGR
from hw_sim import ModelSpec

RED = (0, 0, 255)

SPECS = [
    ModelSpec(tier, precision, macs)
    # l is too slow for the cheap phone even at its ten frames a second: low runs s
    for tier, macs in (("s", 80_000_000), ("l", 700_000_000))
    for precision in ("int8", "fp32")
]
"""Two tiers in both precisions, as the stand-in detectors of the hw_sim evaluations play them."""


class RedSquareDetector:
    """Finds the bounding box of pure-red pixels: a stand-in for the model in transport tests."""

    def __init__(self, tier: str = "l") -> None:
        self.tier = tier

    def detect(self, image: ImageBGR) -> Detections:
        mask = cv2.inRange(image, (0, 0, 200), (60, 60, 255))
        points = cv2.findNonZero(mask)
        if points is None or len(points) < 50:
            return Detections()
        x, y, w, h = cv2.boundingRect(points)
        return Detections((Detection("fu", 0.9, (float(x), float(y), float(x + w), float(y + h))),))


def red_square_frame(width: int = 320, height: int = 240, square: bool = True) -> ImageBGR:
    image = np.full((height, width, 3), 90, np.uint8)
    if square:
        cv2.rectangle(image, (width // 3, height // 3), (width // 2, height // 2), RED, -1)
    return image


def jpeg(image: ImageBGR) -> bytes:
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return bytes(data)


def png_header(width: int, height: int) -> bytes:
    """The first bytes of a PNG of that size: enough for a header check, no pixels at all."""
    return (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    )
