"""The glyph check: a small recognizer that reads the character inside a detection's box.

The detector finds 福 in a whole frame at 320x240; it also scores some
look-alikes (a 祸 in a brush font, a 逼 cut by the frame) like 福 on every
frame, and the vote cannot tell a steady look-alike from a steady 福. The
glyph check is the recognition half of detection + recognition: a network
that sees only the box (with a margin of ``context``), in grey, at
``side x side`` pixels, and was trained on 福 against its look-alikes in
every training font (``detectors.train.glyph``). Its input is standardized
inside the graph, so the grey level of ink and paper matters little (their
contrast only in faint crops). A card asks for several views of each
detection (:class:`detectors.card.GlyphSpec`).

One view costs about a seventh of one ``l`` detector run, and a voter asks
for the check only when a track is about to be recognized
(:class:`detectors.core.Confirmer`).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from detectors.card import CONTEXT, GLYPH_SIDE, GlyphSpec
from detectors.core import Box, ImageBGR, Region
from detectors.views import view

GLYPH_PAD = 114
"""Grey where a crop reaches past the frame, the detector's letterbox grey."""


def glyph_region(box: Box, context: float = CONTEXT) -> Region:
    """The square around ``box``'s centre whose side is ``context`` times the box's longer
    side (at least one pixel); it may reach past the frame."""
    side = max(box[2] - box[0], box[3] - box[1], 1.0) * context
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    x0, y0 = round(cx - side / 2), round(cy - side / 2)
    whole = max(1, round(side))
    return x0, y0, x0 + whole, y0 + whole


def glyph_crop(
    image: ImageBGR, box: Box, side: int = GLYPH_SIDE, context: float = CONTEXT
) -> npt.NDArray[np.uint8]:
    """The recognizer's view of ``box`` in ``image``: its :func:`glyph_region` in grey,
    ``side x side`` uint8, :data:`GLYPH_PAD` past the frame's edges.

    Training crops come from here too, so the network learns exactly what it is shown.
    """
    grey = cv2.cvtColor(view(image, glyph_region(box, context), GLYPH_PAD), cv2.COLOR_BGR2GRAY)
    shrink = grey.shape[0] > side
    resized = cv2.resize(
        grey, (side, side), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    )
    return np.asarray(resized, np.uint8)


class GlyphCheck:
    """One ONNX Runtime session of the recognizer; thread-safe like the detector's."""

    def __init__(self, model_path: Path, spec: GlyphSpec, threads: int = 1) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.spec = spec
        self._session = ort.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name

    def scores(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """The probability that each ``N x side x side`` grey crop holds 福."""
        tensor = crops[:, None].astype(np.float32) / 255.0
        (out,) = self._session.run(None, {self._input: tensor})
        return np.asarray(out, np.float32).reshape(-1)

    def score(self, image: ImageBGR, box: Box) -> float:
        """The probability that ``box`` in ``image`` holds 福: the least over the spec's views."""
        crops = [glyph_crop(image, box, self.spec.side, c) for c in self.spec.contexts]
        if self.spec.turned:
            crops += [crop[::-1, ::-1] for crop in crops]
        return float(self.scores(np.stack(crops)).min())
