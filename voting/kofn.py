"""Baseline rule: a track is recognized when it was detected in k of its last n frames."""

from __future__ import annotations

from dataclasses import dataclass, field

from detectors.core import Confirmer, Detections
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

    def update(
        self, detections: Detections, t: float, confirm: Confirmer | None = None
    ) -> VoteUpdate:
        pairs = self.tracker.associate(list(detections.above(self.min_score)), t)
        matched = {id(track): det for track, det in pairs}
        events: list[VoteEvent] = []
        for track in self.tracker.tracks:
            det = matched.get(id(track))
            track.hits = [*track.hits, det is not None][-self.n :]
            deciding = not track.recognized and sum(track.hits) >= self.k
            if deciding and det is not None and confirm is not None and not confirm(det):
                track.hits[-1] = False  # an unconfirmed hit counts as a miss
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
