"""Frame-to-frame association: which detection of this frame continues which track.

Tracks survive missed frames for ``max_gap`` seconds of media time, so a device
that skips frames (or a detector that misses a few) does not break them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from detectors.core import Box, Detection, iou


@dataclass(slots=True)
class Track:
    id: int
    label: str
    box: Box
    score: float
    last_seen: float
    hits: list[bool] = field(default_factory=list)
    recognized: bool = False


def centre_distance(a: Box, b: Box) -> float:
    """Distance between the centres of ``a`` and ``b``, in units of their mean diagonal."""
    dx = (a[0] + a[2] - b[0] - b[2]) / 2
    dy = (a[1] + a[3] - b[1] - b[3]) / 2
    diagonal = (math.hypot(a[2] - a[0], a[3] - a[1]) + math.hypot(b[2] - b[0], b[3] - b[1])) / 2
    return math.hypot(dx, dy) / diagonal if diagonal > 0 else math.inf


@dataclass(slots=True)
class IouTracker:
    """Matches detections to live tracks of the same label, best pairs first.

    A pair qualifies when the boxes overlap by at least ``min_iou`` or, failing
    that (a small object moving fast, or a long gap), when their centres are
    at most ``max_centre_distance`` mean box diagonals apart. Pairs are taken
    greedily in order of IoU, then of closeness, each track and detection at
    most once; unmatched detections start new tracks.

    A track unseen for more than ``max_gap`` seconds of media time is retired
    by :meth:`expire`. At most ``max_tracks`` tracks live at once: a new track
    beyond that evicts the unmatched one unseen the longest (:meth:`expire`
    returns it too), and a detection with nothing left to evict is ignored.
    """

    min_iou: float = 0.3
    max_gap: float = 1.0
    max_centre_distance: float = 0.5
    max_tracks: int = 32
    tracks: list[Track] = field(default_factory=list)
    next_id: int = 1
    _evicted: list[Track] = field(default_factory=list)

    def associate(self, detections: list[Detection], t: float) -> list[tuple[Track, Detection]]:
        """Pair detections with tracks (creating tracks for the unmatched); returns the pairs.

        The pairs come in the order of ``detections``. Call :meth:`expire` after
        reading the tracks' state for this frame.
        """
        candidates: list[tuple[float, float, int, int]] = []
        for ti, track in enumerate(self.tracks):
            for di, det in enumerate(detections):
                if track.label != det.label:
                    continue
                overlap = iou(track.box, det.box)
                distance = centre_distance(track.box, det.box)
                if overlap >= self.min_iou or distance <= self.max_centre_distance:
                    candidates.append((-overlap, distance, ti, di))
        candidates.sort()
        taken_tracks: set[int] = set()
        assigned: dict[int, Track] = {}
        for _, _, ti, di in candidates:
            track = self.tracks[ti]
            if track.id not in taken_tracks and di not in assigned:
                taken_tracks.add(track.id)
                assigned[di] = track
        pairs: list[tuple[Track, Detection]] = []
        for di, det in enumerate(detections):
            matched = assigned.get(di) or self._start(det, t, taken_tracks)
            if matched is None:
                continue
            matched.box, matched.score, matched.last_seen = det.box, det.score, t
            pairs.append((matched, det))
        return pairs

    def _start(self, det: Detection, t: float, taken: set[int]) -> Track | None:
        if len(self.tracks) >= self.max_tracks:
            spare = [tr for tr in self.tracks if tr.id not in taken and tr.last_seen < t]
            if not spare:
                return None
            oldest = min(spare, key=lambda tr: tr.last_seen)
            self.tracks.remove(oldest)
            self._evicted.append(oldest)
        track = Track(self.next_id, det.label, det.box, det.score, t)
        self.next_id += 1
        self.tracks.append(track)
        return track

    def expire(self, t: float) -> list[Track]:
        """Remove and return the tracks unseen for more than ``max_gap`` seconds at time ``t``."""
        gone = [tr for tr in self.tracks if t - tr.last_seen > self.max_gap]
        self.tracks = [tr for tr in self.tracks if tr not in gone]
        gone, self._evicted = [*self._evicted, *gone], []
        return gone

    def drop(self, track: Track) -> None:
        """Retire ``track`` now; a later detection of its object starts a new track."""
        self.tracks.remove(track)
