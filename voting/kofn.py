"""Baseline rule: a track is recognized when it was detected in k of its last n frames."""

from __future__ import annotations

from dataclasses import dataclass, field

from detectors.core import Detections
from voting.core import TrackedDetection, VoteEvent, VoteUpdate
from voting.tracker import IouTracker


@dataclass(slots=True)
class KOfNVoter:
    """Recognize a track after ``k`` hits among its last ``n`` frames; lose it after a gap.

    ``min_score`` filters per-frame detections before they count as a hit.
    """

    k: int = 3
    n: int = 5
    min_score: float = 0.5
    tracker: IouTracker = field(default_factory=IouTracker)

    def __post_init__(self) -> None:
        if not 1 <= self.k <= self.n:
            raise ValueError(f"need 1 <= k <= n, got k={self.k}, n={self.n}")

    def update(self, detections: Detections, t: float) -> VoteUpdate:
        pairs = self.tracker.associate(list(detections.above(self.min_score)), t)
        matched = {id(track) for track, _ in pairs}
        events: list[VoteEvent] = []
        for track in self.tracker.tracks:
            track.hits = [*track.hits, id(track) in matched][-self.n :]
            if not track.recognized and sum(track.hits) >= self.k:
                track.recognized = True
                events.append(
                    VoteEvent("recognized", track.label, track.id, t, track.score, track.box)
                )
        for track in self.tracker.expire(t):
            if track.recognized:
                events.append(VoteEvent("lost", track.label, track.id, t))
        tracked = tuple(
            TrackedDetection(det.label, det.score, det.box, track.id) for track, det in pairs
        )
        return VoteUpdate(tracked, tuple(events))
