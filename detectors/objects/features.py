"""Local features of reference photos and camera frames (ORB), and the checks a reference must pass.

ORB (FAST corners + rotated BRIEF, 256-bit binary descriptors) is the feature of
choice: on one core it describes a 640x480 frame in about 6 ms where SIFT needs
about 130 ms (``python run.py eval-targets`` prints the comparison), and its
binary descriptors index with LSH. OpenCV 5 no longer ships AKAZE in the main
modules.

A reference photo is resized to :data:`REF_SIDE` pixels on its longer side and
described at two scales (full and half), so that a target seen larger or
smaller than in its photo still finds its matches; keypoint coordinates are
always in pixels of the normalised reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import ImageBGR

REF_SIDE = 480
"""Longer side, in pixels, of a normalised reference image."""
REF_FEATURES = (500, 250)
"""Keypoints kept at each of :data:`REF_SCALES`."""
REF_SCALES = (1.0, 0.5)
"""Scales of the normalised reference that are described (see module docstring)."""
FRAME_SIDE = 640
"""Frames larger than this on their longer side are downscaled before description."""
FRAME_FEATURES = 1400
"""Keypoints kept per camera frame. In ``eval-targets`` 1400 instead of 1200 found the target
in 91.1 % of target frames instead of 89.3 % (recall 89 instead of 87 of 93 clips, no wrong
frame) for about 8 % more time a frame at 100 targets; 1600 took 17 % more."""
REF_LEVELS = 8
FRAME_LEVELS = 3
"""ORB pyramid levels (scale step 1.2) of references and of frames. The reference's two
scales x 8 levels already cover a target from about 70 to 480 px in the frame, so frames
need fewer levels; with fewer, ORB gives the finer ones more of the frame's keypoints
(where a target's detail is) and builds less pyramid. In ``eval-targets`` 3 levels found
the most targets (8: 79.6 %, 4: 83.9 %, 3: 88.2 %, 2: 86.0 %, 1: 66.7 %) and describe a
frame in about 25 % less time than 8 (docs/object_scan.md)."""
SCALE_STEP = 1.2
"""Scale between ORB pyramid levels."""
FAST_THRESHOLD = 12
"""ORB's FAST corner threshold (grey levels)."""
SCORE_TYPE = cv2.ORB_FAST_SCORE
"""How ORB ranks its corners (and :func:`spread` within a cell): by FAST's own score, not
Harris's. In ``eval-targets`` it found the target in 89.3 % of target frames instead of
84.4 % (recall 87 instead of 80 of 93 clips, no wrong frame) and skips the Harris pass."""
OVERSAMPLE = 2
"""ORB detects this many times the keypoints wanted, then :func:`spread` picks among them."""
GRID = (8, 6)
"""Columns and rows of the grid over which keypoints are spread."""

MIN_SIDE = 96
"""A reference whose shorter side is below this many pixels is refused (``image_too_small``)."""
MIN_CONTRAST = 12.0
"""Grey-level standard deviation below which a reference has no texture (``no_texture``)."""
MIN_SHARPNESS = 20.0
"""Variance of the Laplacian of the normalised reference below which it is ``too_blurry``."""
MIN_KEYPOINTS = 150
"""Fewest keypoints a reference must have over all scales (``too_few_features``)."""
MIN_SPREAD = 0.15
"""Keypoints must cover this fraction of the reference's bounding box (``features_clustered``)."""

Points = npt.NDArray[np.float32]
"""``N x 2`` float32 ``(x, y)`` pixel coordinates."""
Descriptors = npt.NDArray[np.uint8]
"""``N x 32`` uint8 ORB descriptors (256 bits each)."""
Gray = npt.NDArray[np.uint8]


class TargetError(ValueError):
    """A target or reference image that cannot be registered; ``code`` is stable (docs/api.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Features:
    """Keypoint positions and their descriptors, row for row, in one image's pixels."""

    points: Points
    descriptors: Descriptors
    width: int
    height: int

    def __len__(self) -> int:
        return len(self.points)

    @classmethod
    def empty(cls, width: int, height: int) -> Features:
        return cls(np.zeros((0, 2), np.float32), np.zeros((0, 32), np.uint8), width, height)


def to_gray(image: ImageBGR | Gray) -> Gray:
    if image.ndim == 2:
        return image
    return np.asarray(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), np.uint8)


def _resize(gray: Gray, scale: float) -> Gray:
    if scale == 1.0:
        return gray
    h, w = gray.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(gray, size, interpolation=interpolation), np.uint8)


def describe(gray: Gray, n_features: int, levels: int = REF_LEVELS) -> tuple[Points, Descriptors]:
    """ORB keypoints spread over ``gray`` (see :func:`spread`), and their descriptors.

    The keypoints and descriptors are those of one ORB over ``levels`` pyramid
    levels, but ORB runs on each level image by itself, so that only the
    keypoints :func:`spread` keeps are described: ORB's ``detectAndCompute``
    would describe all :data:`OVERSAMPLE` x ``n_features`` candidates, and a
    separate ``compute`` would build the pyramid again. Fresh ORBs per call
    keep it thread-safe.
    """
    pyramid = [gray]
    for level in range(1, levels):  # as ORB builds it: each level from the one above
        size = (round(gray.shape[1] / SCALE_STEP**level), round(gray.shape[0] / SCALE_STEP**level))
        resized = cv2.resize(pyramid[-1], size, interpolation=cv2.INTER_LINEAR_EXACT)
        pyramid.append(np.asarray(resized, np.uint8))
    found = [
        _orb(count).detect(image)
        for image, count in zip(pyramid, _level_quota(OVERSAMPLE * n_features, levels), strict=True)
    ]
    points = np.vstack([_points(keypoints, level) for level, keypoints in enumerate(found)])
    response = np.array([kp.response for keypoints in found for kp in keypoints], np.float32)
    chosen = spread(points, response, gray.shape[1], gray.shape[0], n_features)
    first = np.cumsum([0, *(len(keypoints) for keypoints in found)])
    all_points, all_descriptors = [np.zeros((0, 2), np.float32)], [np.zeros((0, 32), np.uint8)]
    for level, (image, keypoints) in enumerate(zip(pyramid, found, strict=True)):
        mine = chosen[(chosen >= first[level]) & (chosen < first[level + 1])] - first[level]
        if not mine.size:
            continue
        kept, descriptors = _orb(len(mine)).compute(image, [keypoints[i] for i in mine])
        if descriptors is not None:
            all_points.append(_points(kept, level))
            all_descriptors.append(np.asarray(descriptors, np.uint8))
    return np.vstack(all_points), np.vstack(all_descriptors)


def _orb(n_features: int) -> cv2.ORB:
    return cv2.ORB.create(
        nfeatures=n_features,
        scaleFactor=SCALE_STEP,
        nlevels=1,
        fastThreshold=FAST_THRESHOLD,
        scoreType=SCORE_TYPE,
    )


def _points(keypoints: Sequence[cv2.KeyPoint], level: int) -> Points:
    """Keypoint positions on pyramid ``level``, in pixels of the level-0 image."""
    points = np.asarray(cv2.KeyPoint.convert(keypoints), np.float32).reshape(-1, 2)
    return points * np.float32(SCALE_STEP**level)


def _level_quota(n_features: int, levels: int) -> list[int]:
    """Keypoints per pyramid level, shared as ORB shares them: each level 1 / SCALE_STEP
    as many as the one above, the rest to the last."""
    factor = 1 / SCALE_STEP
    per_level = n_features * (1 - factor) / (1 - factor**levels)
    quota = []
    for _ in range(levels - 1):
        quota.append(round(per_level))
        per_level *= factor
    return [*quota, max(0, n_features - sum(quota))]


def spread(
    points: Points, response: npt.NDArray[np.float32], width: int, height: int, count: int
) -> npt.NDArray[np.int64]:
    """Indices of at most ``count`` keypoints, strongest first within each cell of a grid.

    ORB keeps the strongest corners of the whole image, so a busy background
    starves a softer poster of keypoints; a quota per cell of a
    :data:`GRID` grid keeps some everywhere (unused quota goes to the strongest rest).
    """
    columns, rows = GRID
    cell = np.minimum((points[:, 0] * columns / width).astype(np.int64), columns - 1)
    cell += columns * np.minimum((points[:, 1] * rows / height).astype(np.int64), rows - 1)
    order = np.lexsort((-response, cell))  # by cell, strongest first
    sorted_cells = cell[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_cells, sorted_cells, "left")
    quota = max(1, count // (columns * rows))
    first = order[rank < quota]
    rest = order[rank >= quota]
    rest = rest[np.argsort(-response[rest], kind="stable")][: max(0, count - len(first))]
    return np.concatenate([first, rest])[:count]


def frame_features(image: ImageBGR) -> Features:
    """Features of a camera frame, in pixels of ``image`` as received."""
    gray = to_gray(image)
    h, w = gray.shape[:2]
    scale = min(1.0, FRAME_SIDE / max(h, w))
    points, descriptors = describe(_resize(gray, scale), FRAME_FEATURES, FRAME_LEVELS)
    return Features(points / np.float32(scale), descriptors, w, h)


def normalise_reference(image: ImageBGR | Gray) -> Gray:
    """The reference as grey, resized to :data:`REF_SIDE` pixels on its longer side.

    Raises:
        TargetError: ``image_too_small`` when its shorter side is below :data:`MIN_SIDE`.
    """
    gray = to_gray(image)
    h, w = gray.shape[:2]
    if min(h, w) < MIN_SIDE:
        raise TargetError(
            "image_too_small",
            f"reference is {w}x{h} pixels; its shorter side must be at least {MIN_SIDE}",
        )
    return _resize(gray, REF_SIDE / max(h, w))


def sharpness(gray: Gray) -> float:
    """Variance of the Laplacian: low for blurred (or flat) images."""
    return float(cv2.Laplacian(gray, cv2.CV_64F).var())


def reference_features(image: ImageBGR | Gray) -> Features:
    """Features of a reference photo, in pixels of :func:`normalise_reference`'s image.

    Contrast and sharpness are judged at the photo's own resolution (or at
    :data:`REF_SIDE` if larger), before any enlarging blurs it.

    Raises:
        TargetError: the image is too small, flat, blurred, or has too few
            or too clustered keypoints.
    """
    gray = normalise_reference(image)
    native = to_gray(image)
    native = _resize(native, min(1.0, REF_SIDE / max(native.shape[:2])))
    contrast = float(native.std())
    if contrast < MIN_CONTRAST:
        raise TargetError(
            "no_texture",
            f"reference is almost uniform (grey-level spread {contrast:.1f} < {MIN_CONTRAST:g})",
        )
    sharp = sharpness(native)
    if sharp < MIN_SHARPNESS:
        raise TargetError(
            "too_blurry",
            f"reference is blurred (variance of Laplacian {sharp:.0f} < {MIN_SHARPNESS:g}); "
            "hold the camera still and focus",
        )
    h, w = gray.shape[:2]
    all_points: list[Points] = []
    all_descriptors: list[Descriptors] = []
    for scale, count in zip(REF_SCALES, REF_FEATURES, strict=True):
        points, descriptors = describe(_resize(gray, scale), count)
        all_points.append(points / np.float32(scale))
        all_descriptors.append(descriptors)
    found = Features(np.vstack(all_points), np.vstack(all_descriptors), w, h)
    _check_keypoints(found.points, w, h)
    return found


def _check_keypoints(points: Points, width: float, height: float) -> None:
    if len(points) < MIN_KEYPOINTS:
        raise TargetError(
            "too_few_features",
            f"reference has {len(points)} keypoints; at least {MIN_KEYPOINTS} are needed "
            "(choose a textured, printed surface: a cover, a label, a poster)",
        )
    lo, hi = np.percentile(points, 5, axis=0), np.percentile(points, 95, axis=0)
    spread = float((hi[0] - lo[0]) * (hi[1] - lo[1]) / (width * height))
    if spread < MIN_SPREAD:
        raise TargetError(
            "features_clustered",
            f"keypoints cover {spread:.0%} of the reference; at least {MIN_SPREAD:.0%} "
            "is needed (crop the photo to the object)",
        )
