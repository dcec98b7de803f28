"""Crops of a frame that may reach past its edges: the close-ups' and the glyph check's."""

from __future__ import annotations

import cv2
import numpy as np

from detectors.core import ImageBGR, Region


def within(region: Region, width: int, height: int) -> bool:
    """Whether ``region`` lies inside a ``width x height`` frame."""
    x0, y0, x1, y1 = region
    return x0 >= 0 and y0 >= 0 and x1 <= width and y1 <= height


def view(image: ImageBGR, region: Region, pad_value: int, scale: float = 1.0) -> ImageBGR:
    """``image``'s pixels in ``region``, resized by ``scale``; where the region reaches past
    the frame, ``pad_value`` grey (all of it, for a region wholly outside)."""
    height, width = image.shape[:2]
    x0, y0, x1, y1 = region
    # Clipped to the frame at both ends: a negative stop would count from the far edge.
    inside = image[max(y0, 0) : max(min(y1, height), 0), max(x0, 0) : max(min(x1, width), 0)]
    if inside.size == 0:
        shape = (round((y1 - y0) * scale), round((x1 - x0) * scale), 3)
        return np.full(shape, pad_value, np.uint8)
    if scale != 1.0:
        resized = cv2.resize(inside, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        inside = np.asarray(resized, np.uint8)
    if within(region, width, height):
        return inside
    top, bottom, left, right = (round(b * scale) for b in (-y0, y1 - height, -x0, x1 - width))
    padded = cv2.copyMakeBorder(
        inside,
        max(top, 0),
        max(bottom, 0),
        max(left, 0),
        max(right, 0),
        cv2.BORDER_CONSTANT,
        value=(pad_value,) * 3,
    )
    return np.asarray(padded, np.uint8)
