"""Ground truth for recorded clips, and scoring replay results against it.

Label file format (JSON), keyed by the video's file name::

    {
      "fu.mp4": {
        "label": "fu",
        "visible": [[0.8, 4.2]],
        "boxes": {"12": [[210, 96, 388, 270]], "13": [[212, 97, 389, 271]]}
      }
    }

``visible`` lists the time ranges (seconds of media time) in which the object
is clearly in view; ``boxes`` (optional) gives per-frame boxes by frame index
for frame-level precision and recall.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from detectors.core import Box, iou

MIN_VISIBLE_S = 1.0
"""A range shorter than this is not required to be recognized (but may be)."""
LATE_GRACE_S = 0.5
"""A recognition this long after a range ends still belongs to it (the decision lags the view)."""
BOX_IOU = 0.5
EXPECTED = (
    'expected {"VIDEO_NAME": {"label": "fu", "visible": [[START_S, END_S], ...], '
    '"boxes": {"FRAME": [[X0, Y0, X1, Y1], ...]}}} ("label" and "boxes" optional)'
)


class LabelError(ValueError):
    """The label file is unreadable or malformed."""


@dataclass(frozen=True, slots=True)
class ClipLabels:
    label: str
    visible: tuple[tuple[float, float], ...]
    boxes: dict[int, tuple[Box, ...]] | None = None


def read_labels(path: Path) -> dict[str, ClipLabels]:
    """Parse a label file (format in this module's docstring).

    Raises:
        LabelError: with the offending entry.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelError(f"bad label file {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise LabelError(f"bad label file {path}: not a JSON object; {EXPECTED}")
    clips = {}
    for name, entry in raw.items():
        try:
            clips[name] = _clip_labels(entry)
        except (ValueError, TypeError) as exc:
            raise LabelError(f"bad label file {path}: {name!r}: {exc}; {EXPECTED}") from exc
    return clips


def _clip_labels(entry: Any) -> ClipLabels:
    if not isinstance(entry, dict) or not isinstance(entry.get("visible"), list):
        raise ValueError("not an object with a 'visible' list")
    boxes = entry.get("boxes")
    if boxes is not None and not isinstance(boxes, dict):
        raise ValueError("'boxes' is not an object keyed by frame index")
    visible = tuple((float(a), float(b)) for a, b in entry["visible"])
    if any(b < a for a, b in visible):
        raise ValueError(f"range end before start in {visible}")
    return ClipLabels(
        str(entry.get("label", "fu")),
        visible,
        None
        if boxes is None
        else {
            int(k): tuple((float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in v)
            for k, v in boxes.items()
        },
    )


@dataclass(slots=True)
class ReplayScore:
    """Event- and frame-level agreement of one or more replays with their labels."""

    true_events: int = 0
    false_events: int = 0
    missed_ranges: int = 0
    delays: list[float] = field(default_factory=list)
    frame_tp: int = 0
    frame_fp: int = 0
    frame_fn: int = 0

    @property
    def event_precision(self) -> float:
        total = self.true_events + self.false_events
        return self.true_events / total if total else 1.0

    @property
    def event_recall(self) -> float:
        total = self.true_events + self.missed_ranges
        return self.true_events / total if total else 1.0

    def add(self, other: ReplayScore) -> None:
        self.true_events += other.true_events
        self.false_events += other.false_events
        self.missed_ranges += other.missed_ranges
        self.delays += other.delays
        self.frame_tp += other.frame_tp
        self.frame_fp += other.frame_fp
        self.frame_fn += other.frame_fn


def score_replay(messages: Sequence[dict[str, Any]], labels: ClipLabels) -> ReplayScore:
    """Match ``recognized`` events to visible ranges and frame detections to boxes."""
    score = ReplayScore()
    matched: set[int] = set()
    for message in messages:
        if message.get("event") != "recognized" or message.get("label") != labels.label:
            continue
        t = float(message["t"])
        hit = next(
            (i for i, (a, b) in enumerate(labels.visible) if a <= t <= b + LATE_GRACE_S), None
        )
        if hit is None:
            score.false_events += 1
        elif hit not in matched:  # a second track on the same range is neither right nor wrong
            matched.add(hit)
            score.true_events += 1
            score.delays.append(t - labels.visible[hit][0])
    score.missed_ranges = sum(
        1 for i, (a, b) in enumerate(labels.visible) if i not in matched and b - a >= MIN_VISIBLE_S
    )
    if labels.boxes is not None:
        for message in messages:
            if message.get("type") == "frame":
                _score_frame(message, labels, score)
    return score


def _score_frame(message: dict[str, Any], labels: ClipLabels, score: ReplayScore) -> None:
    assert labels.boxes is not None
    truth = list(labels.boxes.get(int(message["frame"]), ()))
    for det in message["detections"]:
        if det["label"] != labels.label:
            continue
        box = tuple(det["box"])
        best = max(truth, key=lambda gt: iou(box, gt), default=None)
        if best is not None and iou(box, best) >= BOX_IOU:
            truth.remove(best)
            score.frame_tp += 1
        else:
            score.frame_fp += 1
    score.frame_fn += len(truth)
