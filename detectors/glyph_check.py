"""The glyph check: a small recognizer that reads the character inside a detection's box.

The detector finds 福 in a whole frame at 320x240; it also scores some
look-alikes (a 祸 in a brush font, a 逼 cut by the frame) like 福 on every
frame, and the vote cannot tell a steady look-alike from a steady 福. The
glyph check is the recognition half of detection + recognition: a network
that sees only the box (with a margin of ``context``), at ``side x side``
pixels, and was trained on 福 against its look-alikes in every training font
(``detectors.train.glyph``). A recognizer sees grey crops or colour crops, as
its file's input says (1 or 3 channels): in grey, ink that differs from the
ground only in hue (red on an orange dahlia) vanishes. Its input is
standardized inside the graph, so the level of ink and paper matters little
(their contrast only in faint crops). A card asks for several views of each
detection (:class:`detectors.card.GlyphSpec`).

One view costs about a seventh of one ``l`` detector run, and a voter asks
for the check only when a track is about to be recognized
(:class:`detectors.core.Confirmer`). A card may also have it rescue the
candidates the detector scores under its threshold (``GlyphSpec.rescue_from``):
there is one in every ten to twenty frames of held-out scenes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from detectors.card import CONTEXT, GLYPH_SIDE, GlyphSpec, ModelCard, ModelCardError
from detectors.core import Box, Detection, ImageBGR, Region
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
    image: ImageBGR,
    box: Box,
    side: int = GLYPH_SIDE,
    context: float = CONTEXT,
    channels: int = 1,
) -> npt.NDArray[np.uint8]:
    """The recognizer's view of ``box`` in ``image``: its :func:`glyph_region`, ``side x
    side`` uint8 in grey (``channels`` 1) or ``side x side x 3`` BGR (``channels`` 3),
    :data:`GLYPH_PAD` past the frame's edges.

    Training crops come from here too, so the network learns exactly what it is shown.
    """
    if channels not in (1, 3):
        raise ValueError(f"a glyph crop has 1 or 3 channels, not {channels}")
    crop = view(image, glyph_region(box, context), GLYPH_PAD)
    if channels == 1:
        crop = np.asarray(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY), np.uint8)
    shrink = crop.shape[0] > side
    resized = cv2.resize(
        crop, (side, side), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    )
    return np.asarray(resized, np.uint8)


def crop_tensor(crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """``N x side x side`` grey or ``N x side x side x 3`` colour crops as the recognizer's
    input: ``N x channels x side x side`` float in [0, 1]."""
    scaled = crops.astype(np.float32) / 255.0
    if crops.ndim == 3:
        return scaled[:, None]
    return np.ascontiguousarray(scaled.transpose(0, 3, 1, 2))


class GlyphCheck:
    """One ONNX Runtime session of the recognizer; thread-safe like the detector's.

    ``work`` is what one check (every view of one detection) costs in runs of the detector
    of ``detector_macs`` (0: unknown, nothing charged).
    """

    def __init__(
        self, model_path: Path, spec: GlyphSpec, threads: int = 1, detector_macs: int = 0
    ) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.spec = spec
        self.work = spec.macs * len(spec.contexts) / detector_macs if detector_macs else 0.0
        self._session = ort.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        (crops,) = self._session.get_inputs()
        self._input = crops.name
        self.channels = crops.shape[1]
        """1: the recognizer reads grey crops; 3: colour crops (BGR)."""
        if self.channels not in (1, 3):
            raise ValueError(
                f"{model_path.name}: a glyph check reads 1 or 3 channels, its input has "
                f"shape {crops.shape}"
            )

    @classmethod
    def of_card(cls, card: ModelCard, threads: int = 1) -> GlyphCheck | None:
        """The glyph check ``card`` names, beside it; ``None`` if it names none.

        Raises:
            ModelCardError: the card names a file that is not there.
        """
        if card.glyph is None or card.glyph_path is None:
            return None
        if not card.glyph_path.is_file():
            raise ModelCardError(
                f"{card.path.name} names the glyph check {card.glyph.model}, "
                f"which is not beside it in {card.path.parent}"
            )
        return cls(card.glyph_path, card.glyph, threads, card.macs)

    def scores(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """The probability that each crop (:func:`glyph_crop`, as many channels as the
        recognizer reads) holds 福."""
        (out,) = self._session.run(None, {self._input: crop_tensor(crops)})
        return np.asarray(out, np.float32).reshape(-1)

    def score(self, image: ImageBGR, box: Box) -> float:
        """The probability that ``box`` in ``image`` holds 福: the least over the spec's views."""
        side, channels = self.spec.side, self.channels
        crops = [glyph_crop(image, box, side, c, channels) for c in self.spec.contexts]
        return float(self.scores(np.stack(crops)).min())

    def _rescued(self, read: float, threshold: float) -> float:
        """The score a rescue the check read at ``read`` is reported at: ``threshold``, or the
        card's sure score where it has one and ``read`` reaches ``rescue_sure_min``."""
        sure_min, sure_score = self.spec.rescue_sure_min, self.spec.rescue_sure_score
        if sure_min is None or sure_score is None or read < sure_min:
            return threshold
        return max(sure_score, threshold)

    def rescued(
        self, image: ImageBGR, seen: list[Detection], threshold: float, keep_from: float
    ) -> tuple[list[Detection], int]:
        """``seen`` (second looks down to the rescue's floor) as reported, and how many
        checks that took.

        A detection under ``threshold`` (the card's) from ``spec.rescue_from`` up is raised to
        ``threshold`` if the check reads it as 福 at ``rescue_min`` in every view: the weakest
        evidence the vote takes as "福"; to ``spec.rescue_sure_score`` if every view reads it
        at ``rescue_sure_min``. Those it refuses stay as they scored if that is ``keep_from``
        (the detector's threshold, lower in ``eval-model``'s curve) or more. Without
        ``rescue_from``, ``seen`` as it is.
        """
        spec = self.spec
        if spec.rescue_from is None:
            return seen, 0
        kept, checks = [], 0
        for d in seen:
            if spec.rescue_from <= d.score < threshold:
                checks += 1
                read = self.score(image, d.box)
                if read >= spec.rescue_min:
                    kept.append(dataclasses.replace(d, score=self._rescued(read, threshold)))
                    continue
            if d.score >= keep_from:
                kept.append(d)
        return kept, checks
