"""The shipped detector: an anchor-free heat-map + box-regression network run by ONNX Runtime.

The network sees a letterboxed RGB image; it returns a per-class heat map (after
sigmoid) and, at every heat-map cell, the distances from the cell centre to the
box's left, top, right and bottom edges, in input pixels. Peaks of the heat map
are the detections.

A card with a ``zoom`` spec makes it a two-pass detector: the first look at the
whole frame proposes candidates, and each is scored again on a close-up crop in
which it spans ``fill`` of the side (:func:`zoom_region`). Look-alikes that the
whole-frame view scores high for seconds mostly fall apart at that scale.
With ``extra_fills`` a candidate is also scored at other shares of the crop and
keeps its best close-up: the network's verdict moves with the scale it sees a
glyph at. With ``out_fill`` a candidate too large for any close-up (a 福 filling
the screen, larger than any the network learned) is seen zoomed out instead.

A card with a ``glyph`` field adds the glyph check (:mod:`detectors.glyph_check`)
to what a voter may ask before it recognizes a track (:meth:`OnnxDetector.confirmer`).
With the field's ``rescue_from`` the check also reads the candidates whose close-ups
score under the threshold, and keeps those it is sure of (:meth:`OnnxDetector.rescued`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from detectors.card import InputSpec, ModelCard, ModelCardError, ZoomSpec, find_card
from detectors.core import (
    Box,
    Confirmer,
    Detection,
    Detections,
    ImageBGR,
    Region,
    iou,
    require_bgr_image,
)
from detectors.glyph_check import GlyphCheck
from detectors.shared_weights import check_donors
from detectors.views import view, within

MAX_PEAKS = 20
NMS_IOU = 0.5
ZOOM_MATCH_IOU = 0.3
"""A close-up detection confirms a candidate if their boxes overlap at least this much."""
MIN_CROP_SIDE = 8
TURNED_FLOOR = 0.1
"""The turned check reports scores down to this (lower: 0), below any card's ``turned_min``,
so that a cache of its scores can be read at other minimums."""
GLYPH_REFUSED = -1.0
"""What the check reports for a detection the glyph check refuses: below any minimum, and
below 0, so its :class:`Confirmer` charges the glyph views alone (``refused_work``)."""


@dataclass(frozen=True, slots=True)
class Letterbox:
    """How a frame was scaled and padded into the network input, so boxes can be mapped back."""

    scale: float
    pad_x: int
    pad_y: int

    def to_frame(self, box: Box, width: int, height: int) -> Box:
        x0, x1 = ((v - self.pad_x) / self.scale for v in (box[0], box[2]))
        y0, y1 = ((v - self.pad_y) / self.scale for v in (box[1], box[3]))
        return _inside((x0, y0, x1, y1), width, height)


class InputBuffers:
    """A letterbox canvas and input tensor to reuse frame after frame (by one thread at a time).

    Fresh arrays of these sizes (230 KB and 920 KB at 320x240) cost page faults on every
    frame: allocating the tensor made the conversion to float 2-3x slower.
    """

    def __init__(self, spec: InputSpec) -> None:
        self.canvas = np.empty((spec.height, spec.width, 3), np.uint8)
        self.tensor = np.empty((1, 3, spec.height, spec.width), np.float32)


def fit_into(image: ImageBGR, canvas: ImageBGR, pad_value: int) -> Letterbox:
    """Resize ``image`` into ``canvas`` keeping its aspect, centred; the rest is ``pad_value``."""
    height, width = canvas.shape[:2]
    h, w = image.shape[:2]
    scale = min(width / w, height / h)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    pad_x, pad_y = (width - nw) // 2, (height - nh) // 2
    canvas.fill(pad_value)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    while w >= 4 * nw and h >= 4 * nh and w % 2 == 0 and h % 2 == 0:
        # INTER_AREA is several times slower past 2x; an exact 2x box filter first gives the
        # same averages to within one grey level (1280x720 -> 320x180: 1.3 -> 0.4 ms).
        image = np.asarray(cv2.resize(image, (w // 2, h // 2), interpolation=cv2.INTER_AREA))
        h, w = image.shape[:2]
    canvas[pad_y : pad_y + nh, pad_x : pad_x + nw] = cv2.resize(
        image, (nw, nh), interpolation=interpolation
    )
    return Letterbox(scale, pad_x, pad_y)


def letterbox(
    image: ImageBGR, spec: InputSpec, buffers: InputBuffers | None = None
) -> tuple[npt.NDArray[np.float32], Letterbox]:
    """Resize ``image`` into the input size of ``spec`` keeping its aspect, as an NCHW float tensor.

    With ``buffers`` the tensor returned is ``buffers.tensor``, overwritten by the next call.
    """
    buffers = buffers or InputBuffers(spec)
    box_map = fit_into(image, buffers.canvas, spec.pad_value)
    # Channel swap, HWC -> NCHW and scale to float, one plane at a time into the reused
    # tensor: the same values as cv2.dnn.blobFromImage, which allocates a new one (1.6x slower).
    planes = cv2.split(buffers.canvas)
    ordered = planes[::-1] if spec.color == "RGB" else planes
    for plane, out in zip(ordered, buffers.tensor[0], strict=True):
        np.multiply(plane, np.float32(spec.scale), out=out, dtype=np.float32)
    return buffers.tensor, box_map


def decode(
    heatmap: npt.NDArray[np.float32],
    boxes: npt.NDArray[np.float32],
    stride: int,
    threshold: float,
) -> list[tuple[int, float, Box]]:
    """Peaks of ``heatmap`` (C x h x w) above ``threshold`` as (class, score, box in input px).

    A peak is a cell that is the maximum of its 3x3 neighbourhood; overlapping
    peaks of one class are then thinned by non-maximum suppression.
    """
    found: list[tuple[int, float, Box]] = []
    for cls, plane in enumerate(heatmap):
        peaks = (plane >= threshold) & (plane == cv2.dilate(plane, np.ones((3, 3), np.uint8)))
        ys, xs = np.nonzero(peaks)
        order = np.argsort(-plane[ys, xs])[:MAX_PEAKS]
        kept: list[Box] = []
        for y, x in zip(ys[order], xs[order], strict=True):
            cx, cy = (x + 0.5) * stride, (y + 0.5) * stride
            left, top, right, bottom = boxes[:, y, x].tolist()
            box = (cx - left, cy - top, cx + right, cy + bottom)
            if _distinct(box, kept):
                kept.append(box)
                found.append((cls, float(plane[y, x]), box))
    return found


def _distinct(box: Box, kept: Iterable[Box]) -> bool:
    """Non-maximum suppression's test: ``box`` overlaps none of the boxes already kept."""
    return all(iou(box, k) < NMS_IOU for k in kept)


def suppress(found: Iterable[Detection]) -> list[Detection]:
    """Best first, without the detections that overlap a better one of their label."""
    kept: list[Detection] = []
    for det in sorted(found, key=lambda d: -d.score):
        if _distinct(det.box, (k.box for k in kept if k.label == det.label)):
            kept.append(det)
    return kept


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


def _scaled(box: Box, scale: float) -> Box:
    return (box[0] * scale, box[1] * scale, box[2] * scale, box[3] * scale)


def _turned(box: Box, width: int, height: int) -> Box:
    """``box`` in a ``width x height`` image turned upside down (its own inverse)."""
    return (width - box[2], height - box[3], width - box[0], height - box[1])


def _inside(box: Box, width: int, height: int) -> Box:
    """``box`` cut to a ``width x height`` frame."""
    return (
        min(max(box[0], 0.0), width),
        min(max(box[1], 0.0), height),
        min(max(box[2], 0.0), width),
        min(max(box[3], 0.0), height),
    )


class Network:
    """One ONNX Runtime session of the model at one input size, and that input's spec."""

    def __init__(
        self, model: str | bytes, spec: InputSpec, outputs: list[str], threads: int
    ) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.spec = spec
        self._outputs = outputs
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._local = threading.local()  # each executor thread letterboxes into its own buffers

    def run(
        self, tensor: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        heatmap, boxes = self._session.run(self._outputs, {self.spec.name: tensor})
        return heatmap, boxes

    def prepare(self, image: ImageBGR) -> tuple[npt.NDArray[np.float32], Letterbox]:
        """``image`` letterboxed into this thread's reused input tensor."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = InputBuffers(self.spec)
        return letterbox(image, self.spec, buffers)


class OnnxDetector:
    """Runs one shipped model. Thread-safe: ONNX Runtime sessions allow concurrent ``run``."""

    def __init__(self, card: ModelCard, threads: int = 1, threshold: float | None = None) -> None:
        self.card = card
        self.threshold = card.threshold if threshold is None else threshold
        outputs = [card.heatmap_output, card.boxes_output]
        check_donors(card.model_path)  # borrowed bytes from a changed file would run silently
        self.network = Network(str(card.model_path), card.input, outputs, threads)
        self.close_up = self.network
        first, close = self.network.spec, self.close_up.spec
        self.close_up_work = (close.width * close.height) / (first.width * first.height)
        """A close-up's network work in first-look runs: the ratio of their input pixels."""
        self._labels = frozenset(card.classes)
        self.glyph = None
        self.glyph_work = 0.0
        """A glyph check's work in first-look runs: the ratio of their multiply-adds."""
        if card.glyph is not None and card.glyph_path is not None:
            if not card.glyph_path.is_file():
                raise ModelCardError(
                    f"{card.path.name} names the glyph check {card.glyph.model}, "
                    f"which is not beside it in {card.path.parent}"
                )
            self.glyph = GlyphCheck(card.glyph_path, card.glyph, threads)
            glyph_macs = card.glyph.macs * card.glyph.views
            self.glyph_work = glyph_macs / card.macs if card.macs else 0.0
        self.rescue_from = None if card.glyph is None else card.glyph.rescue_from
        """The close-up score from which the glyph check may rescue a candidate; ``None``:
        no rescue (:attr:`detectors.card.GlyphSpec.rescue_from`)."""
        self.close_up_floor = (
            self.threshold if self.rescue_from is None else min(self.rescue_from, self.threshold)
        )
        """The lowest close-up score a second look keeps: the threshold, or the rescue's."""

    @property
    def tier(self) -> str:
        return self.card.tier

    def infer(
        self, tensor: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """The network alone: heat map and box outputs for a :func:`letterbox` tensor."""
        return self.network.run(tensor)

    def detections(
        self,
        heatmap: npt.NDArray[np.float32],
        boxes: npt.NDArray[np.float32],
        box_map: Letterbox,
        width: int,
        height: int,
        threshold: float | None = None,
    ) -> list[Detection]:
        """The network's outputs in pixels of a ``width x height`` frame, best first.

        Peaks scoring at least ``threshold`` (default: the detector's) are kept.
        """
        cut = self.threshold if threshold is None else threshold
        found = [
            Detection(self.card.classes[cls], score, box_map.to_frame(box, width, height))
            for cls, score, box in decode(heatmap[0], boxes[0], self.card.stride, cut)
        ]
        found.sort(key=lambda d: -d.score)
        return found

    def look(
        self, image: ImageBGR, threshold: float, network: Network | None = None
    ) -> list[Detection]:
        """One pass of ``network`` (default: the first look's) over ``image``.

        Its detections scoring ``threshold`` or more, best first.
        """
        net = network or self.network
        tensor, box_map = net.prepare(image)
        heatmap, boxes = net.run(tensor)
        h, w = image.shape[:2]
        return self.detections(heatmap, boxes, box_map, w, h, threshold)

    @property
    def candidate_threshold(self) -> float:
        """The first look's cut: with a second look, the card's own.

        So the candidates, and what they cost, do not depend on the threshold asked for.
        """
        zoom = self.card.zoom
        return self.threshold if zoom is None else zoom.candidates

    def detect(self, image: ImageBGR) -> Detections:
        require_bgr_image(image)
        return self.second_looks(image, self.look(image, self.candidate_threshold))

    def second_looks(self, image: ImageBGR, candidates: list[Detection]) -> Detections:
        """The first look's ``candidates`` that a second look confirms (all, without zoom)."""
        zoom = self.card.zoom
        frame = (image.shape[1], image.shape[0])
        if zoom is None:
            return Detections(tuple(candidates), frame=frame)
        looked = candidates[: zoom.max_candidates]
        regions = [self.close_up_regions(image, c, zoom) for c in looked]
        seen = [self.second_look(image, c, own) for c, own in zip(looked, regions, strict=True)]
        kept, checks = self.rescued(image, [d for d in seen if d is not None])
        looks = sum(len(own) for own in regions)
        return Detections(
            tuple(suppress(kept)),
            1.0 + looks * self.close_up_work + checks * self.glyph_work,
            frame,
        )

    def rescued(self, image: ImageBGR, seen: list[Detection]) -> tuple[list[Detection], int]:
        """``seen`` (second looks down to the rescue's floor) as reported, and how many glyph
        checks that took.

        A detection under the card's threshold from :attr:`rescue_from` up is raised to the
        threshold if the glyph check reads it as 福 at ``rescue_min`` in every view: the
        weakest evidence the vote takes as "福", never more. The threshold is the card's,
        not the one this detector was made with, so that an evaluation keeping lower scores
        (``eval-model``'s curve) sees the card's rescue. Those it refuses stay as they
        scored, if this detector keeps that score at all.
        """
        glyph, rescue_from, threshold = self.glyph, self.rescue_from, self.card.threshold
        if glyph is None or rescue_from is None:
            return seen, 0
        kept, checks = [], 0
        for d in seen:
            if rescue_from <= d.score < threshold:
                checks += 1
                if glyph.score(image, d.box) >= glyph.spec.rescue_min:
                    kept.append(dataclasses.replace(d, score=threshold))
                    continue
            if d.score >= self.threshold:
                kept.append(d)
        return kept, checks

    def confirmer(self, image: ImageBGR) -> Confirmer | None:
        """The card's checks of ``image``'s detections; ``None`` when it has none.

        The glyph check (cheap) first, if the card has one: a detection it refuses
        scores :data:`GLYPH_REFUSED`. Then the turned check of ``zoom.turned_min``
        (:meth:`turned_score`), whose score is the check's; without one, a detection
        the glyph check passes scores 1.
        """
        zoom = self.card.zoom
        turned_min = None if zoom is None else zoom.turned_min
        glyph = self.glyph
        if turned_min is None and glyph is None:
            return None
        floor = TURNED_FLOOR if turned_min is None else min(TURNED_FLOOR, turned_min)

        def check(detection: Detection) -> float:
            if glyph is not None and glyph.score(image, detection.box) < glyph.spec.min_score:
                return GLYPH_REFUSED
            return 1.0 if turned_min is None else self.turned_score(image, detection, floor)

        work = self.glyph_work + (0.0 if turned_min is None else self.close_up_work)
        refused_work = None if glyph is None else self.glyph_work  # the close-up never ran
        return Confirmer(check, turned_min or 0.0, work, self._labels, refused_work=refused_work)

    def turned_score(self, image: ImageBGR, detection: Detection, floor: float) -> float:
        """The score of ``detection`` on its close-up turned upside down; 0 below ``floor``.

        The model is taught 福 both ways up (倒福), so a real one reads as 福
        turned too, while a look-alike it mistakes for 福 one way up seldom does
        the other way. The close-up is the second look's crop whatever
        ``zoom.min_zoom`` (when that crop would hold the whole frame: the zoomed-out view
        if the card has one for the detection, else the whole frame).
        """
        zoom = self.card.zoom or ZoomSpec()
        height, width = image.shape[:2]
        region = (
            self.close_up_region(image, detection, dataclasses.replace(zoom, min_zoom=None))
            or self.zoomed_out_region(image, detection, zoom)
            or (0, 0, width, height)
        )
        matches = self._close_up_matches(image, region, detection, floor, turned=True)
        return matches[0].score if matches else 0.0

    def _close_up_matches(
        self,
        image: ImageBGR,
        region: Region,
        candidate: Detection,
        min_score: float,
        turned: bool = False,
    ) -> list[Detection]:
        """The close-up network's detections of ``candidate``'s label on ``region`` of
        ``image`` (turned upside down if asked) that overlap the candidate, best first, with
        their boxes in frame pixels."""
        height, width = image.shape[:2]
        x0, y0, _, y1 = region
        # A zoomed-out view is larger than the frame: shrunk to the input before it is padded.
        outside = not within(region, width, height)
        scale = min(1.0, self.close_up.spec.height / (y1 - y0)) if outside else 1.0
        crop = view(image, region, self.card.input.pad_value, scale)
        crop_h, crop_w = crop.shape[:2]
        near = _scaled(_shifted(candidate.box, -x0, -y0), scale)
        if turned:
            crop = np.ascontiguousarray(crop[::-1, ::-1])
            near = _turned(near, crop_w, crop_h)
        matches = []
        for d in self.look(crop, min_score, self.close_up):
            if d.label == candidate.label and iou(d.box, near) >= ZOOM_MATCH_IOU:
                box = _turned(d.box, crop_w, crop_h) if turned else d.box
                box = _inside(_shifted(_scaled(box, 1 / scale), x0, y0), width, height)
                matches.append(Detection(d.label, d.score, box))
        return matches

    def close_up_region(
        self, image: ImageBGR, candidate: Detection, zoom: ZoomSpec, fill: float | None = None
    ) -> Region | None:
        """:func:`zoom_region` of ``candidate`` in ``image``, in the close-up input's aspect,
        the box spanning ``fill`` of it (default: ``zoom.fill``)."""
        height, width = image.shape[:2]
        spec = self.close_up.spec
        aspect = spec.width / spec.height
        min_zoom = 1.0 if zoom.min_zoom is None else zoom.min_zoom
        share = zoom.fill if fill is None else fill
        return zoom_region(candidate.box, width, height, share, aspect, min_zoom)

    def zoomed_out_region(
        self, image: ImageBGR, candidate: Detection, zoom: ZoomSpec
    ) -> Region | None:
        """:func:`zoom_out_region` of ``candidate`` at ``zoom.out_fill``; ``None`` without one."""
        if zoom.out_fill is None:
            return None
        height, width = image.shape[:2]
        spec = self.close_up.spec
        min_zoom = 1.0 if zoom.min_zoom is None else zoom.min_zoom
        return zoom_out_region(
            candidate.box, width, height, zoom.out_fill, spec.width / spec.height, min_zoom
        )

    def close_up_regions(
        self, image: ImageBGR, candidate: Detection, zoom: ZoomSpec
    ) -> list[Region]:
        """The close-ups of ``candidate``, one per share in ``zoom.fills`` that magnifies
        the frame enough (:meth:`close_up_region`); if none does, its zoomed-out view
        where the card has one (:meth:`zoomed_out_region`)."""
        regions = (self.close_up_region(image, candidate, zoom, fill) for fill in zoom.fills)
        close_ups = [region for region in regions if region is not None]
        zoomed_out = None if close_ups else self.zoomed_out_region(image, candidate, zoom)
        return close_ups if zoomed_out is None else [zoomed_out]

    def second_look(
        self, image: ImageBGR, candidate: Detection, regions: Sequence[Region]
    ) -> Detection | None:
        """``candidate`` scored again on its close-up ``regions`` (:meth:`close_up_regions`);
        the best close-up's detection scoring :attr:`close_up_floor` or more.

        ``None`` if no close-up confirms it. The close-up's box replaces the
        first one: it was seen with more pixels (or, zoomed out, at a scale the
        network knows). Without a region (every close-up would magnify the
        frame less than the card's ``min_zoom``, and no zoomed-out view applies)
        the first look stands.
        """
        if not regions:
            return candidate if candidate.score >= self.close_up_floor else None
        confirmed = []
        for region in regions:
            matches = self._close_up_matches(image, region, candidate, self.close_up_floor)
            if matches:  # best first
                confirmed.append(matches[0])
        return max(confirmed, key=lambda d: d.score, default=None)


def load_detector(tier: str = "l", precision: str = "int8", threads: int = 1) -> OnnxDetector:
    """The shipped model of ``tier``; see ``detectors/models/*.json`` for what exists."""
    return OnnxDetector(find_card(tier, precision), threads=threads)
