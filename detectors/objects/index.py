"""Recognition of registered targets in a frame: LSH neighbours, vote, verify geometrically.

1. Every frame descriptor looks up its approximate nearest neighbour among the
   descriptors of all registered views at once (:class:`BinaryLsh`), and the
   nearest one of any *other* view. A neighbour closer than ``match_distance``
   that passes Lowe's ratio test against the other view's is a correspondence
   and a vote for its view. The cost grows slowly with the number of targets.
2. The ``shortlist`` views with most votes (at least ``min_votes``) are verified:
   a homography is fitted to their correspondences (USAC MAGSAC++); it must have
   enough inliers, a high enough inlier ratio, inliers spread over the target,
   and a projected outline that a flat object can have (convex, not tiny,
   moderate perspective). The outline's bounding box is the detection's box.

The index is immutable, so ``detect`` is safe from any number of threads;
registering a target builds a new one (:class:`detectors.objects.registry.TargetRegistry`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import Detection, Detections, ImageBGR, require_bgr_image
from detectors.objects.features import Features, Points, frame_features
from detectors.objects.lsh import BinaryLsh

TIER = "objects"


@dataclass(frozen=True, slots=True)
class Target:
    """A registered scan target: its name (the detection label) and one view per reference."""

    name: str
    views: tuple[Features, ...]


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """Thresholds of recognition; the defaults are the ones ``eval-targets`` measured."""

    match_distance: int = 64
    """Hamming distance (of 256 bits) under which an LSH neighbour is a correspondence."""
    min_votes: int = 6
    """Views with fewer votes are not verified."""
    shortlist: int = 3
    """At most this many views are verified per frame."""
    ratio: float = 0.8
    """Lowe's ratio test: nearest distance below ``ratio`` x the nearest of another view."""
    reprojection_px: float = 6.0
    """RANSAC inlier threshold, in frame pixels."""
    min_inliers: int = 14
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
        self._owner = np.repeat(np.arange(len(self._views)), counts).astype(np.int64)
        self._offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        descriptors = [view.descriptors for _, _, view in self._views]
        self._lsh = BinaryLsh(
            np.vstack(descriptors) if descriptors else np.zeros((0, 32), np.uint8), self._owner
        )

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
        require_bgr_image(image)
        return Detections(
            tuple(v.detection() for v in self.recognise(image)),
            frame=(image.shape[1], image.shape[0]),
        )

    def recognise(self, image: ImageBGR, features: Features | None = None) -> list[Verified]:
        """Every registered target verified in ``image``, best first, at most one per name."""
        if not self._owner.size:
            return []
        frame = features if features is not None else frame_features(image)
        if len(frame) < self.config.min_inliers:
            return []
        query, matched = self.correspondences(frame)
        found: dict[str, Verified] = {}
        for view in self.shortlist_of(matched):
            name, number, reference = self._views[view]
            if name in found:
                continue
            mine = self._owner[matched] == view
            src = reference.points[matched[mine] - self._offset[view]]
            verified = verify(src, frame.points[query[mine]], reference, self.config)
            if verified is not None:
                found[name] = Verified(name, number, *verified)
        return sorted(found.values(), key=lambda v: -v.score)

    def correspondences(
        self, frame: Features
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(frame rows, index rows)`` of the descriptor pairs that pass distance and ratio."""
        near = self._lsh.query(frame.descriptors)
        ok = (near.index >= 0) & (near.distance < self.config.match_distance)
        ok &= near.distance < self.config.ratio * near.other_distance
        query = np.flatnonzero(ok)
        return query, near.index[query]

    def shortlist(self, frame: Features) -> list[int]:
        """Indices of the views with most votes from ``frame``, most first."""
        return self.shortlist_of(self.correspondences(frame)[1])

    def shortlist_of(self, matched: npt.NDArray[np.int64]) -> list[int]:
        if not matched.size:
            return []
        votes = np.bincount(self._owner[matched], minlength=len(self._views))
        order = np.argsort(-votes, kind="stable")[: self.config.shortlist]
        return [int(v) for v in order if votes[v] >= self.config.min_votes]


def verify(
    src: Points, dst: Points, reference: Features, config: MatchConfig
) -> tuple[int, int, Points, float] | None:
    """Check the homography of correspondences ``src`` (reference px) -> ``dst`` (frame px).

    Returns:
        ``(inliers, correspondences, outline in the frame, score)``, or ``None``
        when they do not show the reference in the frame.
    """
    if len(src) < config.min_inliers:
        return None
    homography, mask = cv2.findHomography(
        src, dst, cv2.USAC_MAGSAC, config.reprojection_px, maxIters=2000, confidence=0.999
    )
    if homography is None or mask is None:
        return None
    inlier = mask.ravel().astype(bool)
    inliers = int(inlier.sum())
    if inliers < config.min_inliers or inliers < config.min_inlier_ratio * len(src):
        return None
    if _coverage(src[inlier], reference) < config.min_coverage:
        return None
    outline = project_outline(np.asarray(homography, np.float64), reference.width, reference.height)
    if outline is None or not plausible_outline(
        outline, reference.width / reference.height, config
    ):
        return None
    return inliers, len(src), outline, inlier_score(inliers, config)


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
