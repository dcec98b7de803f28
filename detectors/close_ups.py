"""The second look: each candidate of the first look scored again on close-ups of it.

A candidate is cropped out of the frame so that its box spans ``fill`` of the
crop (:func:`zoom_region`), and the network's score on that crop replaces the
first one. Look-alikes that the whole-frame view scores high for seconds mostly
fall apart at that scale. With ``extra_fills`` a candidate is also scored at
other shares of the crop and keeps its best close-up: the network's verdict
moves with the scale it sees a glyph at. With ``out_fill`` a candidate too large
for any close-up (a 福 filling the screen, larger than any the network learned)
is seen zoomed out instead. The same close-up turned upside down is the turned
check (:meth:`CloseUps.turned_score`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detectors.card import ZoomSpec
from detectors.core import (
    Box,
    Clutter,
    Detection,
    FrameContext,
    ImageBGR,
    Region,
    iou,
    scaled_box,
)
from detectors.network import Network, inside
from detectors.views import view, within

ZOOM_MATCH_IOU = 0.3
"""A close-up detection confirms a candidate if their boxes overlap at least this much."""
MIN_CROP_SIDE = 8
KEPT_TRACK_MARGIN = 0.3
"""A candidate on a track the vote has recognized that the first look scores at most this
much under the threshold is kept, at the threshold, without close-ups: the vote needs only its
weakest "福" to keep a track, and nothing the first look still sees where a recognized 福 is
can make it recognize anything again."""
CLUTTER_KEPT_S = 1.0
"""Media seconds for which a candidate found to be clutter (:func:`known_clutter`) gets no
close-ups: clutter the camera holds in view is looked at once a second, not every frame."""
SAME_CANDIDATE_IOU = 0.5
"""A candidate is the one found to be clutter if their boxes overlap this much..."""
CLUTTER_RISE = 0.1
"""...and the first look scores it less than this above what it scored it then."""


def zoom_region(
    box: Box, width: int, height: int, fill: float, aspect: float, min_zoom: float = 1.0
) -> Region | None:
    """The close-up crop ``(x0, y0, x1, y1)`` for a candidate ``box`` in a ``width x height`` frame.

    The crop has the network input's ``aspect`` (width / height) and is sized
    so that the box spans ``fill`` of it, centred on the box and moved inside
    the frame. ``None`` when that crop would magnify the frame by less than
    ``min_zoom`` (1: when it would hold the whole frame): the first look
    already saw the box at about that scale.
    """
    crop_w, crop_h = _view_size(box, fill, aspect, fill * MIN_CROP_SIDE)
    if crop_w * min_zoom >= width and crop_h * min_zoom >= height:
        return None
    crop_w, crop_h = min(crop_w, width), min(crop_h, height)
    x0 = min(max((box[0] + box[2] - crop_w) / 2, 0.0), width - crop_w)
    y0 = min(max((box[1] + box[3] - crop_h) / 2, 0.0), height - crop_h)
    return round(x0), round(y0), round(x0 + crop_w), round(y0 + crop_h)


def zoom_out_region(
    box: Box, width: int, height: int, fill: float, aspect: float, min_zoom: float = 1.0
) -> Region | None:
    """The zoomed-out view ``(x0, y0, x1, y1)`` of a candidate ``box`` too large for a close-up.

    Like :func:`zoom_region`'s crop it has the network input's ``aspect`` and
    the box spans ``fill`` of it, but it is centred on the box and larger than
    the frame, reaching past its edges (:func:`view` pads there). ``None``
    unless it shrinks the frame at least ``min_zoom`` times.
    """
    crop_w, crop_h = _view_size(box, fill, aspect)
    if crop_w < min_zoom * width or crop_h < min_zoom * height:
        return None
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return (
        round(cx - crop_w / 2),
        round(cy - crop_h / 2),
        round(cx + crop_w / 2),
        round(cy + crop_h / 2),
    )


def _view_size(box: Box, fill: float, aspect: float, least: float = 0.0) -> tuple[float, float]:
    """Width and height of a view of ``aspect`` in which ``box`` spans ``fill`` of the side
    (the box counted at least ``least`` high)."""
    crop_h = max(box[3] - box[1], (box[2] - box[0]) / aspect, least) / fill
    return crop_h * aspect, crop_h


def _shifted(box: Box, dx: float, dy: float) -> Box:
    return (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)


def _turned(box: Box, width: int, height: int) -> Box:
    """``box`` in a ``width x height`` image turned upside down (its own inverse)."""
    return (width - box[2], height - box[3], width - box[0], height - box[1])


def on_recognized_track(candidate: Detection, context: FrameContext) -> bool:
    """Whether ``candidate`` lies on a track the vote has already recognized: the same label,
    boxes overlapping at least :data:`ZOOM_MATCH_IOU`."""
    return any(
        label == candidate.label and iou(box, candidate.box) >= ZOOM_MATCH_IOU
        for label, box in context.recognized
    )


def _kept(clutter: Clutter, t: float) -> bool:
    """Whether ``clutter`` was found less than :data:`CLUTTER_KEPT_S` before ``t``."""
    return 0 <= t - clutter.t < CLUTTER_KEPT_S


def _stands_on(candidate: Detection, clutter: Clutter) -> bool:
    """Whether ``candidate`` is where ``clutter`` was found (:data:`SAME_CANDIDATE_IOU`)."""
    same_place = iou(clutter.box, candidate.box) >= SAME_CANDIDATE_IOU
    return candidate.label == clutter.label and same_place


def known_clutter(candidate: Detection, context: FrameContext) -> Clutter | None:
    """The clutter of ``context`` that ``candidate`` still is (:data:`CLUTTER_KEPT_S`,
    :data:`SAME_CANDIDATE_IOU`, :data:`CLUTTER_RISE`); ``None``: it gets its close-ups."""
    for clutter in context.clutter:
        if (
            _kept(clutter, context.t)
            and _stands_on(candidate, clutter)
            and candidate.score < clutter.score + CLUTTER_RISE
        ):
            return clutter
    return None


def unexamined_clutter(context: FrameContext, examined: Sequence[Detection]) -> list[Clutter]:
    """The clutter of ``context`` still within :data:`CLUTTER_KEPT_S` that no candidate of
    ``examined`` stands on: kept for the next frame, so that clutter the first look ranks below
    ``zoom.max_candidates`` for a frame is not looked at again as soon as it is back among
    them."""
    return [
        clutter
        for clutter in context.clutter
        if _kept(clutter, context.t) and not any(_stands_on(d, clutter) for d in examined)
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class CloseUps:
    """Close-ups of candidates, run through ``network`` as ``zoom`` says; each costs one run.

    ``floor`` is the lowest close-up score a second look keeps.
    """

    network: Network
    zoom: ZoomSpec
    floor: float

    @property
    def aspect(self) -> float:
        return self.network.spec.width / self.network.spec.height

    def region(
        self,
        image: ImageBGR,
        candidate: Detection,
        fill: float | None = None,
        min_zoom: float | None = None,
    ) -> Region | None:
        """:func:`zoom_region` of ``candidate`` in ``image``, the box spanning ``fill`` of it
        (default: ``zoom.fill``), magnifying at least ``min_zoom`` (default: ``zoom.min_zoom``,
        or 1 without one)."""
        height, width = image.shape[:2]
        least = min_zoom or self.zoom.min_zoom or 1.0
        share = self.zoom.fill if fill is None else fill
        return zoom_region(candidate.box, width, height, share, self.aspect, least)

    def zoomed_out_region(self, image: ImageBGR, candidate: Detection) -> Region | None:
        """:func:`zoom_out_region` of ``candidate`` at ``zoom.out_fill``; ``None`` without one."""
        if self.zoom.out_fill is None:
            return None
        height, width = image.shape[:2]
        min_zoom = self.zoom.min_zoom or 1.0
        return zoom_out_region(
            candidate.box, width, height, self.zoom.out_fill, self.aspect, min_zoom
        )

    def regions(self, image: ImageBGR, candidate: Detection) -> list[Region]:
        """The close-ups of ``candidate``, one per share in ``zoom.fills`` that magnifies the
        frame enough (:meth:`region`); if none does, its zoomed-out view where the card has
        one (:meth:`zoomed_out_region`)."""
        regions = (self.region(image, candidate, fill) for fill in self.zoom.fills)
        close_ups = [region for region in regions if region is not None]
        zoomed_out = None if close_ups else self.zoomed_out_region(image, candidate)
        return close_ups if zoomed_out is None else [zoomed_out]

    def best(
        self,
        image: ImageBGR,
        candidate: Detection,
        regions: Sequence[Region],
        enough: float | None = None,
    ) -> tuple[Detection | None, int, bool]:
        """``candidate`` scored again on its close-up ``regions`` (:meth:`regions`): the best
        close-up's detection scoring :attr:`floor` or more, how many close-ups that took,
        and whether they saw anything like it at all (at the card's candidate cut).

        The detection is ``None`` if no close-up confirms it. The close-up's box
        replaces the first one: it was seen with more pixels (or, zoomed out, at a
        scale the network knows). Without a region (every close-up would magnify
        the frame less than the card's ``min_zoom``, and no zoomed-out view applies)
        the first look stands. With ``enough``, the close-ups stop at the first
        that scores that much.
        """
        if not regions:
            return (candidate if candidate.score >= self.floor else None), 0, True
        cut = self.zoom.candidates
        seen: list[Detection] = []
        for looked, region in enumerate(regions, 1):
            matches = self.matches(image, region, candidate, min(cut, self.floor))
            if matches:  # best first
                seen.append(matches[0])
                if enough is not None and matches[0].score >= enough:
                    return matches[0], looked, True
        best = max(seen, key=lambda d: d.score, default=None)
        confirmed = best if best is not None and best.score >= self.floor else None
        return confirmed, len(regions), best is not None and best.score >= cut

    def turned_score(self, image: ImageBGR, detection: Detection, floor: float) -> float:
        """The score of ``detection`` on its close-up turned upside down; 0 below ``floor``.

        The model is taught 福 both ways up (倒福), so a real one reads as 福
        turned too, while a look-alike it mistakes for 福 one way up seldom does
        the other way. The close-up is the second look's crop whatever
        ``zoom.min_zoom`` (when that crop would hold the whole frame: the zoomed-out view
        if the card has one for the detection, else the whole frame).
        """
        height, width = image.shape[:2]
        region = (
            self.region(image, detection, min_zoom=1.0)
            or self.zoomed_out_region(image, detection)
            or (0, 0, width, height)
        )
        matches = self.matches(image, region, detection, floor, turned=True)
        return matches[0].score if matches else 0.0

    def matches(
        self,
        image: ImageBGR,
        region: Region,
        candidate: Detection,
        min_score: float,
        turned: bool = False,
    ) -> list[Detection]:
        """The network's detections of ``candidate``'s label on ``region`` of ``image``
        (turned upside down if asked) that overlap the candidate, best first, with their
        boxes in frame pixels."""
        height, width = image.shape[:2]
        x0, y0, _, y1 = region
        # A zoomed-out view is larger than the frame: shrunk to the input before it is padded.
        outside = not within(region, width, height)
        scale = min(1.0, self.network.spec.height / (y1 - y0)) if outside else 1.0
        crop = view(image, region, self.network.spec.pad_value, scale)
        crop_h, crop_w = crop.shape[:2]
        near = scaled_box(_shifted(candidate.box, -x0, -y0), scale)
        if turned:
            crop = np.ascontiguousarray(crop[::-1, ::-1])
            near = _turned(near, crop_w, crop_h)
        found = []
        for d in self.network.look(crop, min_score):
            if d.label == candidate.label and iou(d.box, near) >= ZOOM_MATCH_IOU:
                box = _turned(d.box, crop_w, crop_h) if turned else d.box
                box = inside(_shifted(scaled_box(box, 1 / scale), x0, y0), width, height)
                found.append(Detection(d.label, d.score, box))
        return found
