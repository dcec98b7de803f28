"""Greedy IoU association of detections to tracks that survive a few missed frames."""

from __future__ import annotations

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


@dataclass(slots=True)
class IouTracker:
    """Matches each detection to the live track of its label it overlaps most.

    A track with no match for longer than ``max_gap`` seconds of media time is
    retired, so a device that skips frames does not break tracks.
    """

    min_iou: float = 0.3
    max_gap: float = 1.0
    tracks: list[Track] = field(default_factory=list)
    next_id: int = 1

    def associate(self, detections: list[Detection], t: float) -> list[tuple[Track, Detection]]:
        """Pair detections with tracks (creating tracks for the unmatched); returns the pairs."""
        pairs: list[tuple[Track, Detection]] = []
        free = list(self.tracks)
        for det in sorted(detections, key=lambda d: -d.score):
            candidates = [(iou(tr.box, det.box), tr) for tr in free if tr.label == det.label]
            overlap, best = max(candidates, key=lambda c: c[0], default=(0.0, None))
            if best is None or overlap < self.min_iou:
                best = Track(self.next_id, det.label, det.box, det.score, t)
                self.next_id += 1
                self.tracks.append(best)
            else:
                free.remove(best)
            best.box, best.score, best.last_seen = det.box, det.score, t
            pairs.append((best, det))
        return pairs

    def expire(self, t: float) -> list[Track]:
        """Remove and return the tracks unseen for more than ``max_gap`` seconds at time ``t``."""
        gone = [tr for tr in self.tracks if t - tr.last_seen > self.max_gap]
        self.tracks = [tr for tr in self.tracks if tr not in gone]
        return gone
