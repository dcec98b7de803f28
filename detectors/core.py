"""The one result type every detector returns, and the interface a detector implements."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Box = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)`` in pixels of the frame as received."""

ImageBGR = npt.NDArray[np.uint8]
"""An ``H x W x 3`` uint8 image in OpenCV's BGR order."""

MAX_IMAGE_PIXELS = 4096 * 4096
"""Largest image a detector takes (a 4K frame is 8.3 M pixels)."""

EDGE_MARGIN = 0.01
"""A box closer than this share of the frame's short side to an edge touches that edge."""

FrameSize = tuple[int, int]
"""``(width, height)`` in pixels."""
Region = tuple[int, int, int, int]
"""A crop of the frame, ``(x0, y0, x1, y1)`` pixels; it may reach past the frame."""


class BadImageError(ValueError):
    """An image a detector cannot take: not ``H x W x 3`` uint8, empty, or too large."""


def require_bgr_image(image: object) -> None:
    """Raise :class:`BadImageError` with what is wrong unless ``image`` is a usable BGR frame."""
    if not isinstance(image, np.ndarray):
        raise BadImageError(f"expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise BadImageError(f"expected uint8 pixels, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise BadImageError(f"expected an H x W x 3 BGR image, got shape {image.shape}")
    height, width = image.shape[:2]
    if height == 0 or width == 0:
        raise BadImageError(f"empty image ({width}x{height})")
    if height * width > MAX_IMAGE_PIXELS:
        raise BadImageError(f"image is {width}x{height}; the limit is {MAX_IMAGE_PIXELS} pixels")


@dataclass(frozen=True, slots=True)
class Detection:
    label: str
    score: float
    box: Box

    def to_json(self) -> dict[str, object]:
        return {"label": self.label, "score": round(self.score, 4), "box": rounded_box(self.box)}


@dataclass(frozen=True, slots=True)
class Clutter:
    """A first-look candidate none of whose close-ups saw anything like its label, not even
    at the first look's candidate cut: later frames of the stream skip it for a moment."""

    label: str
    box: Box
    """The candidate's box on the first look, in the frame's pixels."""
    score: float
    """The first look's score of it."""
    t: float
    """Media time of the frame the close-ups were taken on."""

    def scaled(self, factor: float) -> Clutter:
        """The same clutter in a frame ``factor`` times the size."""
        return dataclasses.replace(self, box=scaled_box(self.box, factor))


@dataclass(frozen=True, slots=True)
class FrameContext:
    """What a session knows before a frame is detected, as plain data (boxes in the frame's
    pixels): the frame's media time, the tracks its vote has recognized, and the clutter
    that earlier frames' close-ups found (:attr:`Detections.clutter`)."""

    t: float = 0.0
    recognized: tuple[tuple[str, Box], ...] = ()
    clutter: tuple[Clutter, ...] = ()


@dataclass(frozen=True, slots=True)
class Detections:
    """What one detector saw in one frame, best score first."""

    items: tuple[Detection, ...] = ()
    runs: float = 1.0
    """Network work they took, in runs at the model's input size: a two-pass detector adds
    one per close-up (less for close-ups at a smaller input). An emulated phone (``hw_sim``)
    is charged for it."""
    frame: FrameSize | None = None
    """Size of the frame the boxes are in (``None``: unknown), so that a voter can tell a
    box cut by the frame's edge (:func:`touches_edge`)."""
    clutter: tuple[Clutter, ...] = ()
    """The clutter this frame's close-ups found, still skipped, or did not meet (no candidate
    stood on it), for the next frame's :class:`FrameContext` (a detector told no context:
    none)."""

    def __iter__(self) -> Iterator[Detection]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def above(self, min_score: float) -> Detections:
        return dataclasses.replace(self, items=tuple(d for d in self.items if d.score >= min_score))


def touches_edge(box: Box, frame: FrameSize) -> bool:
    """Whether ``box`` reaches within ``EDGE_MARGIN`` of the short side of an edge of ``frame``:
    the frame may cut what it holds."""
    width, height = frame
    margin = EDGE_MARGIN * min(width, height)
    x0, y0, x1, y1 = box
    return x0 < margin or y0 < margin or x1 > width - margin or y1 > height - margin


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What a session needs to know about a detector's model to read it and feed it."""

    threshold: float
    """The model's threshold: a voter weighs its labels' scores relative to it."""
    classes: tuple[str, ...]
    input_side: int
    """The network input's longer side: frames much larger are decoded smaller."""
    vote: Mapping[str, bool | int | float] = field(default_factory=dict)
    """Fields of the vote that this model's streams start from (``ModelCard.vote``)."""


class Detector(Protocol):
    """Anything that turns a BGR frame into :class:`Detections`.

    ``detect`` must be safe to call from a worker thread; it may be slow (it is
    never called on the event loop). ``model`` is ``None`` for a detector of no
    model of its own: its scores are read on the default curve, its frames decoded
    at full size.
    """

    @property
    def tier(self) -> str: ...

    @property
    def model(self) -> ModelInfo | None: ...

    def detect(self, image: ImageBGR) -> Detections:
        """Raises :class:`BadImageError` for an image it cannot take."""
        ...


@dataclass(slots=True)
class Confirmer:
    """A costlier second opinion on the detections of one frame, asked one detection at a time.

    A voter asks it only about a track about to be recognized, so its cost is
    paid about once per object, not on every frame. ``check`` gives the
    detection's score under the costlier look (0: nothing there); it confirms
    at ``min_score`` or more. ``work`` is what one check costs in network runs
    at the model's input size (see :attr:`Detections.runs`); ``runs`` sums it
    over the checks made. A check in stages scores below 0 when its first,
    cheaper stage refused the detection and the rest did not run; such a check
    costs ``refused_work`` (``None``: ``work``). Detections of labels not in
    ``labels`` (``None``: every label is judged) are confirmed as they are, at
    no cost.
    """

    check: Callable[[Detection], float]
    min_score: float
    work: float
    labels: frozenset[str] | None = None
    runs: float = 0.0
    refused_work: float | None = None

    def __call__(self, detection: Detection) -> bool:
        if self.labels is not None and detection.label not in self.labels:
            return True
        score = self.check(detection)
        early = self.refused_work  # what a check refused by its first stage costs
        self.runs += early if score < 0 and early is not None else self.work
        return score >= self.min_score


@runtime_checkable
class ConfirmingDetector(Detector, Protocol):
    """A detector that can also look twice at a detection it made, when asked."""

    def confirmer(self, image: ImageBGR) -> Confirmer | None:
        """A :class:`Confirmer` of detections made on ``image`` (``None``: no check to offer),
        judging the detector's own labels."""
        ...


@runtime_checkable
class FocusingDetector(Detector, Protocol):
    """A detector that spends less on a frame when told what earlier frames settled."""

    def detect_in(self, image: ImageBGR, context: FrameContext) -> Detections:
        """:meth:`Detector.detect`, skipping the work ``context`` makes needless."""
        ...


def rounded_box(box: Box) -> list[float]:
    return [round(v, 1) for v in box]


def scaled_box(box: Box, factor: float) -> Box:
    """``box`` in a frame ``factor`` times the size."""
    return (box[0] * factor, box[1] * factor, box[2] * factor, box[3] * factor)


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two ``(x0, y0, x1, y1)`` boxes; 0 for empty ones."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0
