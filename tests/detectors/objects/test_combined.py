"""The 福 model and the target matcher on one frame: merged, with the model's tier and runs."""

import numpy as np

from detectors.core import Detection, Detections, ModelInfo
from detectors.objects.combined import CombinedDetector


class Fixed:
    def __init__(self, found: Detections, tier: str = "l", model: ModelInfo | None = None) -> None:
        self.found = found
        self.tier = tier
        self.model = model

    def detect(self, image):  # type: ignore[no-untyped-def]
        return self.found


def test_detections_are_merged_best_first_under_the_models_tier_and_runs() -> None:
    fu = Detections((Detection("fu", 0.7, (0, 0, 10, 10)),), runs=3, frame=(64, 48))
    target = Detections((Detection("poster", 0.9, (20, 20, 40, 40)),))
    model = ModelInfo(0.7, ("fu",), 320)
    combined = CombinedDetector(Fixed(fu, model=model), Fixed(target, "objects"))
    found = combined.detect(np.zeros((48, 64, 3), np.uint8))
    assert [d.label for d in found] == ["poster", "fu"]
    assert found.runs == 3  # the matcher is not emulated: only the network's runs count
    assert found.frame == (64, 48)
    assert combined.tier == "l" and combined.model is model
