"""Training targets: a peak of 1 per 福, and ignored regions the focal loss does not punish."""

import numpy as np
import pytest

pytest.importorskip("torch")  # detectors.train needs the [train] extra

from detectors.train.targets import IGNORE_HEAT, make_targets
from detectors.train.train import focal_loss


def test_an_ignored_box_is_neither_peak_nor_punished() -> None:
    import torch

    boxes = np.array([[16, 16, 48, 48]], np.float32)
    ignore = np.array([[0, 64, 40, 120]], np.float32)
    heat, _, weight = make_targets(boxes, 120, 160, ignore)
    cells = heat[8:15, 0:5]
    assert (cells == IGNORE_HEAT).all() and heat.max() == 1.0 and heat[8:15].max() < 0.999
    assert weight[8:15].sum() == 0  # no box regression there either
    plain, _, _ = make_targets(boxes, 120, 160)
    firing = torch.full((1, *heat.shape), -9.0)
    firing[0, 4, 4] = 9.0  # the labelled 福's peak, found...
    firing[0, 8:15, 0:5] = 9.0  # ...and confident detections in the ignored box
    with_ignore = focal_loss(firing, torch.from_numpy(heat)[None])
    without = focal_loss(firing, torch.from_numpy(plain)[None])
    assert with_ignore < 1e-3 * without
