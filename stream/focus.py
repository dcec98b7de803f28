"""What a session tells its detector before each frame: what earlier frames settled.

A second look costs a network run per close-up. A track the vote has recognized
needs none while the first look alone scores it near the threshold, and a candidate
whose close-ups saw nothing like it a moment ago needs none again yet
(:meth:`detectors.onnx_detector.OnnxDetector.detect_in`). The session keeps that
knowledge here, as plain data, and hands it to the detector as a
:class:`~detectors.core.FrameContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from detectors.core import Box, Clutter, Detections, FrameContext, scaled_box
from voting.core import VoteUpdate


@dataclass(slots=True)
class Focus:
    """The recognized tracks of one stream, in pixels of frames as received."""

    recognized: dict[int, tuple[str, Box]] = field(default_factory=dict)
    """Track id -> label and latest box of each track recognized and not lost."""
    clutter: tuple[Clutter, ...] = ()
    """What the last frame's close-ups found to be clutter (:attr:`Detections.clutter`)."""

    def context(self, t: float, scale: float = 1.0) -> FrameContext:
        """The context of the next frame, at media time ``t``, whose detector sees it
        ``scale`` times the size received."""
        return FrameContext(
            t,
            tuple((label, scaled_box(box, scale)) for label, box in self.recognized.values()),
            tuple(c.scaled(scale) for c in self.clutter),
        )

    def update(self, update: VoteUpdate, found: Detections) -> None:
        """Take in what the detector found in a frame and what the vote made of it (boxes
        as received)."""
        self.clutter = found.clutter
        for event in update.events:
            if event.event == "lost":
                self.recognized.pop(event.track, None)
            elif event.box is not None:
                self.recognized[event.track] = (event.label, event.box)
        for tracked in update.detections:
            if tracked.track in self.recognized:
                self.recognized[tracked.track] = (tracked.label, tracked.box)
