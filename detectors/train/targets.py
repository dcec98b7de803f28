"""Training targets for the dense head, and datasets of generated scenes with their targets.

For every 福 box: a Gaussian bump on the stride-8 heat map, exactly 1 at the
cell nearest the box centre; box-regression targets (ltrb distances from the
cell centre, input pixels) with a weight equal to the bump's value, on cells
where the bump is above ``BOX_CELL_MIN`` and the cell centre is inside the box.
An ignored box (a 福 cut too far to label) fills its cells with ``IGNORE_HEAT``:
not a peak, and a negative weight ``(1 - heat) ** 4`` of 1e-8 in the focal loss.
"""

from __future__ import annotations

from collections.abc import Iterator
from multiprocessing import Pool

import cv2
import numpy as np
import numpy.typing as npt

from detectors.synth.scenes import GENERATOR_MIX, Boxes, SceneOptions, Split, render_scene
from detectors.train.model import STRIDE, output_size, scaled_size

BOX_CELL_MIN = 0.3
SIGMA_FRACTION = 0.12
"""Gaussian sigma as a fraction of the box side (in cells), at least half a cell."""
PEAK_HEAT = 0.999
"""Target heat from which a cell is a labelled 福's centre (its bump is exactly 1 there)."""
IGNORE_HEAT = 0.99
"""Heat of an ignored box's cells: below ``PEAK_HEAT``, so that the focal loss
neither rewards nor (to within 1e-8) punishes a detection there."""

Array = npt.NDArray[np.float32]


def make_targets(
    boxes: Boxes, height: int, width: int, ignore: Boxes | None = None
) -> tuple[Array, Array, Array]:
    """Heat map ``(h, w)``, box targets ``(4, h, w)`` and box weights ``(h, w)`` for ``boxes``;
    cells whose centre is in an ``ignore`` box are ignored, unless a box of ``boxes`` peaks
    there."""
    w, h = output_size(width, height)
    heat = np.zeros((h, w), np.float32)
    ltrb = np.zeros((4, h, w), np.float32)
    weight = np.zeros((h, w), np.float32)
    cx = (np.arange(w, dtype=np.float32) + 0.5) * STRIDE
    cy = (np.arange(h, dtype=np.float32) + 0.5) * STRIDE
    for x0, y0, x1, y1 in () if ignore is None else ignore:
        cells = (cx[None] > x0) & (cx[None] < x1) & (cy[:, None] > y0) & (cy[:, None] < y1)
        heat[cells] = IGNORE_HEAT
    for x0, y0, x1, y1 in boxes:
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        sx = max(0.5, SIGMA_FRACTION * (x1 - x0) / STRIDE) * STRIDE
        sy = max(0.5, SIGMA_FRACTION * (y1 - y0) / STRIDE) * STRIDE
        bump = np.exp(
            -((cx[None] - mx) ** 2) / (2 * sx**2) - ((cy[:, None] - my) ** 2) / (2 * sy**2)
        )
        peak_y = min(h - 1, int(my // STRIDE))
        peak_x = min(w - 1, int(mx // STRIDE))
        bump[peak_y, peak_x] = 1.0
        heat = np.maximum(heat, bump)
        inside = (cx[None] > x0) & (cx[None] < x1) & (cy[:, None] > y0) & (cy[:, None] < y1)
        inside[peak_y, peak_x] = True
        take = inside & (bump >= BOX_CELL_MIN) & (bump > weight)
        weight[take] = bump[take]
        gx, gy = np.broadcast_to(cx[None], (h, w)), np.broadcast_to(cy[:, None], (h, w))
        for plane, value in zip(ltrb, (gx - x0, gy - y0, x1 - gx, y1 - gy), strict=True):
            plane[take] = value[take]
    return heat, ltrb, weight


def target_channels(boxes: Boxes, height: int, width: int, ignore: Boxes | None = None) -> Array:
    """:func:`make_targets` as one ``(6, h, w)`` array, channels heat, l, t, r, b, weight: the
    layout the training losses read."""
    heat, ltrb, weight = make_targets(boxes, height, width, ignore)
    return np.concatenate([heat[None], ltrb, weight[None]])


def _scene(
    seed: int,
    width: int,
    height: int,
    split: Split,
    scales: tuple[float, ...],
    options: SceneOptions,
) -> tuple[npt.NDArray[np.uint8], list[Array]]:
    scene = render_scene(seed, width, height, split, "mixed", options)
    rgb = np.ascontiguousarray(scene.image[:, :, ::-1].transpose(2, 0, 1))
    targets = []
    for scale in scales:
        w, h = scaled_size(width, height, scale)
        targets.append(target_channels(scene.boxes * scale, h, w, scene.ignore * scale))
    return rgb, targets


def generate(
    seeds: range,
    width: int,
    height: int,
    split: Split = "train",
    scales: tuple[float, ...] = (1.0,),
    options: SceneOptions = GENERATOR_MIX,
) -> tuple[npt.NDArray[np.uint8], list[Array]]:
    """Scenes for ``seeds`` as ``(N, 3, H, W)`` RGB uint8, and targets for each of ``scales``.

    The targets at scale ``k`` are ``(N, 6, kH/8, kW/8)`` and describe the scene
    shrunk by ``k`` (a tier that runs at a lower input resolution). Target
    channels: heat, l, t, r, b, box weight. ``options``: the training mix
    (:class:`detectors.synth.scenes.SceneOptions`).
    """
    results = [_scene(s, width, height, split, scales, options) for s in seeds]
    images = np.stack([r[0] for r in results])
    return images, [np.stack([r[1][i] for r in results]) for i in range(len(scales))]


def _generate_chunk(
    job: tuple[range, int, int, Split, tuple[float, ...], SceneOptions],
) -> tuple[npt.NDArray[np.uint8], list[Array]]:
    return generate(*job)


def _single_threaded() -> None:
    cv2.setNumThreads(1)  # one process per core already; OpenCV's own threads only contend


def generate_parallel(
    seeds: range,
    width: int,
    height: int,
    split: Split,
    workers: int,
    scales: tuple[float, ...] = (1.0,),
    chunk: int = 256,
    options: SceneOptions = GENERATOR_MIX,
) -> Iterator[tuple[npt.NDArray[np.uint8], list[Array]]]:
    """:func:`generate` in ``workers`` processes, yielding chunks in seed order as they are done."""
    jobs = [
        (seeds[i : i + chunk], width, height, split, scales, options)
        for i in range(0, len(seeds), chunk)
    ]
    with Pool(workers, initializer=_single_threaded) as pool:
        yield from pool.imap(_generate_chunk, jobs)
