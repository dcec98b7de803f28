"""The first look: the detector network run by ONNX Runtime on one letterboxed image.

The network sees a letterboxed RGB image; it returns a per-class heat map (after
sigmoid) and, at every heat-map cell, the distances from the cell centre to the
box's left, top, right and bottom edges, in input pixels. Peaks of the heat map
are the detections.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from detectors.card import InputSpec, ModelCard
from detectors.core import Box, Detection, ImageBGR, iou
from detectors.shared_weights import check_donors

MAX_PEAKS = 20
NMS_IOU = 0.5


@dataclass(frozen=True, slots=True)
class Letterbox:
    """How a frame was scaled and padded into the network input, so boxes can be mapped back."""

    scale: float
    pad_x: int
    pad_y: int

    def to_frame(self, box: Box, width: int, height: int) -> Box:
        x0, x1 = ((v - self.pad_x) / self.scale for v in (box[0], box[2]))
        y0, y1 = ((v - self.pad_y) / self.scale for v in (box[1], box[3]))
        return inside((x0, y0, x1, y1), width, height)


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


def inside(box: Box, width: int, height: int) -> Box:
    """``box`` cut to a ``width x height`` frame."""
    return (
        min(max(box[0], 0.0), width),
        min(max(box[1], 0.0), height),
        min(max(box[2], 0.0), width),
        min(max(box[3], 0.0), height),
    )


class Network:
    """One ONNX Runtime session of a card's model: letterbox an image, run, read the peaks.

    Thread-safe: ONNX Runtime sessions allow concurrent ``run``, and each thread
    letterboxes into its own buffers.
    """

    def __init__(self, card: ModelCard, threads: int = 1) -> None:
        check_donors(card.model_path)  # borrowed bytes from a changed file would run silently
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.spec = card.input
        self.classes = card.classes
        self.stride = card.stride
        self._outputs = [card.heatmap_output, card.boxes_output]
        self._session = ort.InferenceSession(
            str(card.model_path), options, providers=["CPUExecutionProvider"]
        )
        self._local = threading.local()

    def run(
        self, tensor: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """The network alone: heat map and box outputs for a :func:`letterbox` tensor."""
        heatmap, boxes = self._session.run(self._outputs, {self.spec.name: tensor})
        return heatmap, boxes

    def prepare(self, image: ImageBGR) -> tuple[npt.NDArray[np.float32], Letterbox]:
        """``image`` letterboxed into this thread's reused input tensor."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = InputBuffers(self.spec)
        return letterbox(image, self.spec, buffers)

    def detections(
        self,
        heatmap: npt.NDArray[np.float32],
        boxes: npt.NDArray[np.float32],
        box_map: Letterbox,
        width: int,
        height: int,
        threshold: float,
    ) -> list[Detection]:
        """The network's outputs in pixels of a ``width x height`` frame, best first: the peaks
        scoring ``threshold`` or more."""
        found = [
            Detection(self.classes[cls], score, box_map.to_frame(box, width, height))
            for cls, score, box in decode(heatmap[0], boxes[0], self.stride, threshold)
        ]
        found.sort(key=lambda d: -d.score)
        return found

    def look(self, image: ImageBGR, threshold: float) -> list[Detection]:
        """One pass over ``image``: its detections scoring ``threshold`` or more, best first."""
        tensor, box_map = self.prepare(image)
        heatmap, boxes = self.run(tensor)
        h, w = image.shape[:2]
        return self.detections(heatmap, boxes, box_map, w, h, threshold)
