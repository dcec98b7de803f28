"""Types every voter produces: detections with track ids, and the events of a decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from detectors.core import Box, Confirmer, Detections, rounded_box

EventKind = Literal["recognized", "lost", "updated"]


@dataclass(frozen=True, slots=True)
class TrackedDetection:
    label: str
    score: float
    box: Box
    track: int

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "score": round(self.score, 4),
            "box": rounded_box(self.box),
            "track": self.track,
        }


@dataclass(frozen=True, slots=True)
class VoteEvent:
    event: EventKind
    label: str
    track: int
    t: float
    score: float | None = None
    box: Box | None = None

    def to_json(self) -> dict[str, object]:
        message: dict[str, object] = {
            "type": "event",
            "event": self.event,
            "label": self.label,
            "track": self.track,
            "t": round(self.t, 3),
        }
        if self.score is not None:
            message["score"] = round(self.score, 4)
        if self.box is not None:
            message["box"] = rounded_box(self.box)
        return message


@dataclass(frozen=True, slots=True)
class VoteUpdate:
    """What one ``update`` call returns: this frame's tracked detections and any new events."""

    detections: tuple[TrackedDetection, ...] = ()
    events: tuple[VoteEvent, ...] = ()


class Voter(Protocol):
    def update(
        self, detections: Detections, t: float, confirm: Confirmer | None = None
    ) -> VoteUpdate:
        """Feed the detections of the frame at media time ``t`` (seconds, non-decreasing).

        ``confirm``, the detector's costlier second opinion on this frame
        (:meth:`detectors.core.ConfirmingDetector.confirmer`), is asked about a
        track's detection only as the track is about to be recognized.
        """
        ...
