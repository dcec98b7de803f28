"""Scripted detector output for voting tests: objects with a box and a score over media time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from detectors.core import Box, Confirmer, Detection, Detections, FrameSize
from voting.core import VoteEvent, Voter

Score = Callable[[float], float | None]
"""Score of an object at media time t; ``None``: not detected in that frame."""


@dataclass(frozen=True)
class Thing:
    box: Box
    score: Score
    label: str = "fu"


def steady(score: float, start: float = 0.0, end: float = float("inf")) -> Score:
    return lambda t: score if start <= t < end else None


def frames(fps: float, duration: float) -> Iterator[float]:
    n = round(duration * fps)
    return (k / fps for k in range(n))


def detections_at(things: Sequence[Thing], t: float, frame: FrameSize | None = None) -> Detections:
    found = []
    for thing in things:
        score = thing.score(t)
        if score is not None:
            found.append(Detection(thing.label, score, thing.box))
    return Detections(tuple(sorted(found, key=lambda d: -d.score)), frame=frame)


@dataclass
class ScriptedCheck:
    """A detector's check that answers ``answers`` in turn (then the last one again forever),
    and remembers the detections it was asked about."""

    answers: Sequence[bool]
    asked: list[Detection] = field(default_factory=list)

    def __call__(self, detection: Detection) -> float:
        self.asked.append(detection)
        return float(self.answers[min(len(self.asked), len(self.answers)) - 1])


def run(
    voter: Voter,
    things: Sequence[Thing],
    fps: float,
    duration: float,
    frame: FrameSize | None = None,
    check: Callable[[Detection], float] | None = None,
) -> list[VoteEvent]:
    """``voter``'s events on ``things`` seen at ``fps``; each frame offers ``check``, if any."""
    events: list[VoteEvent] = []
    for t in frames(fps, duration):
        confirm = None if check is None else Confirmer(check, 0.5, 1.0)
        events.extend(voter.update(detections_at(things, t, frame), t, confirm).events)
    return events


def kinds(events: Sequence[VoteEvent]) -> list[tuple[str, int]]:
    return [(e.event, e.track) for e in events if e.event != "updated"]


A: Box = (100.0, 100.0, 200.0, 200.0)
B: Box = (400.0, 100.0, 500.0, 200.0)
