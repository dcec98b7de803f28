"""One detector out of two: the built-in 福 model and the registered-target matcher, same frame."""

from __future__ import annotations

import dataclasses

from detectors.core import (
    Confirmer,
    ConfirmingDetector,
    Detections,
    Detector,
    FocusingDetector,
    FrameContext,
    ImageBGR,
    ModelInfo,
)


class CombinedDetector:
    """Runs ``primary`` then ``extra`` on each frame and merges their detections, best first.

    It reports ``primary``'s tier, so device emulation and model choice are
    unchanged; both parts must be thread-safe (they are called from the executor).
    """

    def __init__(self, primary: Detector, extra: Detector) -> None:
        self.primary = primary
        self.extra = extra
        self._checker = primary if isinstance(primary, ConfirmingDetector) else None
        self._focusing = primary if isinstance(primary, FocusingDetector) else None

    @property
    def tier(self) -> str:
        return self.primary.tier

    @property
    def model(self) -> ModelInfo | None:
        return self.primary.model

    def detect(self, image: ImageBGR) -> Detections:
        return self._merged(self.primary.detect(image), image)

    def detect_in(self, image: ImageBGR, context: FrameContext) -> Detections:
        """``primary``'s detections told ``context``, if it can use it, and ``extra``'s."""
        focusing = self._focusing
        primary = (
            self.primary.detect(image) if focusing is None else focusing.detect_in(image, context)
        )
        return self._merged(primary, image)

    def _merged(self, primary: Detections, image: ImageBGR) -> Detections:
        found = sorted((*primary, *self.extra.detect(image)), key=lambda d: -d.score)
        # Emulated phones are charged for the network's runs; the target matcher is not
        # emulated (docs/hw_sim.md, "Not modelled").
        return dataclasses.replace(primary, items=tuple(found))

    def confirmer(self, image: ImageBGR) -> Confirmer | None:
        """``primary``'s check, if it has one (it judges ``primary``'s labels only)."""
        return None if self._checker is None else self._checker.confirmer(image)
