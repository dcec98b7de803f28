"""Close-ups that follow what a stream's detector found lately (a card's ``zoom.follow``).

The first look at the whole frame proposes a 福 on some frames and not on
others: as the camera shakes by a pixel its score jumps between 0.1 and 0.9,
and its box is often poor where the score is low. The close-up, framed on a
good box, reads the same 福 steadily. So a stream remembers where its
detector confirmed something in the last ``follow`` seconds, and the next
frame gives each of those boxes a close-up of its own where no candidate
already confirmed it (:meth:`OnnxDetector.detect`'s ``hints``). The close-up
is the same judge as for any candidate, at the card's threshold: a remembered
box is followed only for as long as the close-ups keep finding something there.

Pure: time is the frame's (media seconds), passed in; one :class:`Follower` per stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from detectors.core import Detection, Detections, Detector, ImageBGR, iou

SAME_OBJECT_IOU = 0.3
"""A new detection of a label replaces a remembered one it overlaps at least this much."""


class Recent:
    """The detections a stream's detector confirmed in the last ``seconds``, one per object.

    At most ``limit`` are kept, the newest first: each becomes a close-up on
    the next frame, so this bounds what following costs.
    """

    def __init__(self, seconds: float, limit: int) -> None:
        if seconds <= 0 or limit < 1:
            raise ValueError(f"want seconds > 0 and limit >= 1, got {seconds}, {limit}")
        self.seconds = seconds
        self.limit = limit
        self._kept: list[tuple[float, Detection]] = []

    def hints(self, t: float) -> tuple[Detection, ...]:
        """What was confirmed within ``seconds`` before ``t``, newest first."""
        self._forget(t)
        return tuple(det for _, det in self._kept)

    def remember(self, t: float, found: Detections) -> None:
        """Keep ``found`` (the detections of the frame at ``t``), each in place of what it
        overlaps of its label."""
        self._forget(t)
        older = [
            (seen, old)
            for seen, old in self._kept
            if not any(
                d.label == old.label and iou(d.box, old.box) >= SAME_OBJECT_IOU for d in found
            )
        ]
        self._kept = [(t, det) for det in found][: self.limit]
        self._kept += older[: self.limit - len(self._kept)]

    def _forget(self, t: float) -> None:
        if self._kept and t < self._kept[0][0]:  # time went back: another stream's clock
            self._kept = []
        self._kept = [(seen, det) for seen, det in self._kept if t - seen <= self.seconds]


@runtime_checkable
class FollowingDetector(Detector, Protocol):
    """A detector that can give remembered boxes (``hints``) close-ups of their own."""

    @property
    def follow(self) -> tuple[float, int] | None:
        """How long a detection is followed (seconds) and at most how many at once;
        ``None``: it follows nothing."""
        ...

    def detect(self, image: ImageBGR, hints: Sequence[Detection] = ()) -> Detections: ...


class Follower:
    """One stream's use of a shared detector: if its card follows detections
    (:class:`FollowingDetector`), each frame also looks again at what the stream's
    earlier frames found; otherwise each frame is judged alone."""

    def __init__(self, detector: Detector) -> None:
        self.detector = detector
        spec = detector.follow if isinstance(detector, FollowingDetector) else None
        self._memory = None
        if isinstance(detector, FollowingDetector) and spec is not None:
            self._memory = (detector, Recent(*spec))

    @property
    def recent(self) -> Recent | None:
        """What this stream remembers; ``None`` when its detector follows nothing."""
        return None if self._memory is None else self._memory[1]

    def detect(self, image: ImageBGR, t: float) -> Detections:
        """The detections of the frame at media time ``t``, its remembered boxes looked at too."""
        if self._memory is None:
            return self.detector.detect(image)
        following, recent = self._memory
        found = following.detect(image, recent.hints(t))
        recent.remember(t, found)
        return found
