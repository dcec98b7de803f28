"""Recognition of registered targets in a frame: shortlist by LSH votes, then verify geometrically.

1. Every frame descriptor looks up its nearest neighbour among the descriptors
   of all registered views at once, in one FLANN LSH index; each close
   neighbour is a vote for the view it belongs to. The cost of this step grows
   slowly with the number of targets.
2. The :data:`MatchConfig.shortlist` views with most votes are matched against
   the frame exhaustively (Hamming brute force, Lowe's ratio test).
3. A homography is fitted to those matches (USAC MAGSAC++); it must have enough
   inliers, a high enough inlier ratio, inliers spread over the target, and a
   projected outline that a flat object can have (convex, not tiny, moderate
   perspective). The outline's bounding box is the detection's box.

The index is immutable: registering a target builds a new one (see
:class:`detectors.objects.registry.TargetRegistry`), so ``detect`` needs no lock
except around the FLANN query.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import Detection, Detections, ImageBGR
from detectors.objects.features import Features, Points, frame_features

TIER = "objects"


@dataclass(frozen=True, slots=True)
class Target:
    """A registered scan target: its name (the detection label) and one view per reference."""

    name: str
    views: tuple[Features, ...]


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """Thresholds of recognition; the defaults are the ones ``eval-targets`` measured."""

    vote_distance: int = 64
    """Hamming distance (of 256 bits) under which an LSH neighbour votes for its view."""
    min_votes: int = 6
    """Views with fewer votes are not verified."""
    shortlist: int = 3
    """At most this many views are verified per frame."""
    ratio: float = 0.8
    """Lowe's ratio test: best match distance below ``ratio`` x the second best."""
    reprojection_px: float = 6.0
    """RANSAC inlier threshold, in frame pixels."""
    min_inliers: int = 12
    min_inlier_ratio: float = 0.3
    min_coverage: float = 0.03
    """Inliers' convex hull, as a fraction of the reference's area."""
    min_side_px: float = 24.0
    """Shortest side of the projected outline, frame pixels."""
    max_side_ratio: float = 4.0
    """Longest side of the projected outline over its shortest (perspective limit)."""
    score_mid: float = 8.0
    score_scale: float = 3.0
    """``score = 1 / (1 + exp(-(inliers - score_mid) / score_scale))``, see :func:`inlier_score`."""


def inlier_score(inliers: int, config: MatchConfig) -> float:
    """A detection score in [0, 1] from the homography's inlier count (logistic)."""
    return 1.0 / (1.0 + math.exp(-(inliers - config.score_mid) / config.score_scale))


@dataclass(frozen=True, slots=True)
class Verified:
    """One target found in a frame, with what verification measured."""

    name: str
    view: int
    inliers: int
    matches: int
    outline: Points  # 4 x 2: the reference's corners in the frame
    score: float

    def detection(self) -> Detection:
        x0, y0 = self.outline.min(axis=0)
        x1, y1 = self.outline.max(axis=0)
        return Detection(self.name, self.score, (float(x0), float(y0), float(x1), float(y1)))


@dataclass(slots=True)
class _Lsh:
    """The FLANN LSH index over all views' descriptors, with the lock that guards queries."""

    matcher: cv2.FlannBasedMatcher
    lock: threading.Lock = field(default_factory=threading.Lock)


class TargetIndex:
    """An immutable set of registered targets that recognises them in frames.

    ``detect`` may be called from several threads at once.
    """

    def __init__(self, targets: Sequence[Target], config: MatchConfig | None = None) -> None:
        self.config = config or MatchConfig()
        self.targets = tuple(targets)
        self._views: list[tuple[str, int, Features]] = [
            (t.name, i, view) for t in self.targets for i, view in enumerate(t.views)
        ]
        counts = [len(view) for _, _, view in self._views]
        self._owner = np.repeat(np.arange(len(self._views)), counts).astype(np.int32)
        self._lsh: _Lsh | None = None
        if self._owner.size:
            matcher = cv2.FlannBasedMatcher(
                {"algorithm": 6, "table_number": 10, "key_size": 20, "multi_probe_level": 1},
                {"checks": 32},
            )
            matcher.add([np.vstack([view.descriptors for _, _, view in self._views])])
            matcher.train()
            self._lsh = _Lsh(matcher)

    @property
    def tier(self) -> str:
        return TIER

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    @property
    def descriptor_count(self) -> int:
        return int(self._owner.size)

    def detect(self, image: ImageBGR) -> Detections:
        return Detections(tuple(v.detection() for v in self.recognise(image)))

    def recognise(self, image: ImageBGR, features: Features | None = None) -> list[Verified]:
        """Every registered target verified in ``image``, best first, at most one per name."""
        if self._lsh is None:
            return []
        frame = features if features is not None else frame_features(image)
        if len(frame) < self.config.min_inliers:
            return []
        found: dict[str, Verified] = {}
        for view in self.shortlist(frame):
            name, index, reference = self._views[view]
            if name in found:
                continue
            verified = verify(frame, reference, self.config)
            if verified is not None:
                found[name] = Verified(name, index, *verified)
        return sorted(found.values(), key=lambda v: -v.score)

    def shortlist(self, frame: Features) -> list[int]:
        """Indices of the views with most LSH votes from ``frame``, most first."""
        assert self._lsh is not None
        with self._lsh.lock:
            neighbours = self._lsh.matcher.knnMatch(frame.descriptors, k=1)
        owners = [
            self._owner[m[0].trainIdx]
            for m in neighbours
            if m and m[0].distance < self.config.vote_distance
        ]
        if not owners:
            return []
        votes = np.bincount(np.asarray(owners), minlength=len(self._views))
        order = np.argsort(-votes, kind="stable")[: self.config.shortlist]
        return [int(v) for v in order if votes[v] >= self.config.min_votes]


def verify(
    frame: Features, reference: Features, config: MatchConfig
) -> tuple[int, int, Points, float] | None:
    """Match ``frame`` to one reference view and check the homography.

    Returns:
        ``(inliers, ratio-test matches, outline in the frame, score)``, or ``None``
        when the view is not in the frame.
    """
    if len(reference) < 2:
        return None
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(frame.descriptors, reference.descriptors, k=2)
    good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < config.ratio * p[1].distance]
    if len(good) < config.min_inliers:
        return None
    src = reference.points[[m.trainIdx for m in good]]
    dst = frame.points[[m.queryIdx for m in good]]
    homography, mask = cv2.findHomography(
        src, dst, cv2.USAC_MAGSAC, config.reprojection_px, maxIters=2000, confidence=0.999
    )
    if homography is None or mask is None:
        return None
    inlier = mask.ravel().astype(bool)
    inliers = int(inlier.sum())
    if inliers < config.min_inliers or inliers < config.min_inlier_ratio * len(good):
        return None
    if _coverage(src[inlier], reference) < config.min_coverage:
        return None
    outline = project_outline(np.asarray(homography, np.float64), reference.width, reference.height)
    if outline is None or not plausible_outline(
        outline, reference.width / reference.height, config
    ):
        return None
    return inliers, len(good), outline, inlier_score(inliers, config)


def _coverage(points: Points, reference: Features) -> float:
    if len(points) < 3:
        return 0.0
    hull = cv2.convexHull(points.reshape(-1, 1, 2))
    return float(cv2.contourArea(hull)) / float(reference.width * reference.height)


def project_outline(homography: npt.NDArray[np.float64], width: int, height: int) -> Points | None:
    """The reference's corners mapped into the frame, or ``None`` if one goes to infinity."""
    corners = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float64)
    mapped = np.hstack([corners, np.ones((4, 1))]) @ homography.T
    if np.any(mapped[:, 2] <= 1e-6):  # a corner behind the camera: not a view of a plane
        return None
    return (mapped[:, :2] / mapped[:, 2:]).astype(np.float32)


def plausible_outline(outline: Points, aspect: float, config: MatchConfig) -> bool:
    """Whether a flat ``aspect`` (width / height) rectangle seen by a camera could give ``outline``.

    The outline must be convex, no side shorter than ``min_side_px``, opposite
    sides within ``max_side_ratio`` of each other, and its width-to-height
    proportion within ``max_side_ratio`` of the reference's.
    """
    if not cv2.isContourConvex(outline.reshape(-1, 1, 2)):
        return False
    top, right, bottom, left = np.linalg.norm(outline - np.roll(outline, -1, axis=0), axis=1)
    if min(top, right, bottom, left) < config.min_side_px:
        return False
    limit = config.max_side_ratio
    stretch = (top + bottom) / (left + right) / aspect
    return all(1 / limit <= r <= limit for r in (top / bottom, left / right, stretch))
