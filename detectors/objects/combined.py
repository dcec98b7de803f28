"""One detector out of two: the built-in 福 model and the registered-target matcher, same frame."""

from __future__ import annotations

from detectors.core import (
    Confirmer,
    ConfirmingDetector,
    Detections,
    Detector,
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

    @property
    def tier(self) -> str:
        return self.primary.tier

    @property
    def model(self) -> ModelInfo | None:
        return self.primary.model

    def detect(self, image: ImageBGR) -> Detections:
        primary = self.primary.detect(image)
        found = (*primary, *self.extra.detect(image))
        # Emulated phones are charged for the network's runs; the target matcher is not
        # emulated (docs/hw_sim.md, "Not modelled").
        return Detections(tuple(sorted(found, key=lambda d: -d.score)), primary.runs, primary.frame)

    def confirmer(self, image: ImageBGR) -> Confirmer | None:
        """``primary``'s check, if it has one (it judges ``primary``'s labels only)."""
        return None if self._checker is None else self._checker.confirmer(image)
