"""How detections are scored against labelled boxes, and how inference is timed.

Shared by ``run.py quantize`` (what INT8 keeps of FP32) and the evaluations in
:mod:`evals` (AP50, recall on coded video).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from detectors.core import Detections, iou
from detectors.synth.scenes import Boxes

AP_IOU = 0.5
"""A detection matches a labelled box from this intersection over union on."""


def match(found: Detections, truth: Boxes, ignore: Boxes | None = None) -> list[tuple[float, bool]]:
    """(score, is true positive) per detection, best first, each truth box matched at most once.

    A detection that matches no truth box but an ``ignore`` box (a 福 cut too
    far to label) is left out: it is neither right nor wrong.
    """
    used = [False] * len(truth)
    scored = []
    for det in found:
        best, best_iou = -1, AP_IOU
        for i, box in enumerate(truth):
            overlap = iou(det.box, (box[0], box[1], box[2], box[3]))
            if not used[i] and overlap >= best_iou:
                best, best_iou = i, overlap
        if best >= 0:
            used[best] = True
        elif ignore is not None and any(
            iou(det.box, (b[0], b[1], b[2], b[3])) >= AP_IOU for b in ignore
        ):
            continue
        scored.append((det.score, best >= 0))
    return scored


def median_ms(calls: Sequence[Callable[[], object]], rounds: int) -> list[float]:
    """Median time of each call in milliseconds.

    The calls take turns, one run each per round, so that load from other
    processes on a shared machine falls on all of them alike.
    """
    times: list[list[float]] = [[] for _ in calls]
    for round_ in range(rounds + 5):
        for call, spent in zip(calls, times, strict=True):
            start = time.perf_counter()
            call()
            if round_ >= 5:  # the first runs warm caches and allocators up
                spent.append(time.perf_counter() - start)
    return [1000 * float(np.median(t)) for t in times]
