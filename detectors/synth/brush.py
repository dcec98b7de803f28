"""A glyph mask written by a hand instead of typeset: brush, cursive, marker and ball-pen.

Pure numpy + OpenCV and deterministic by the generator passed in. Each function
takes a square uint8 ink mask of the bank (255 = ink, cropped to its ink) and
returns one of the same shape, its ink still touching the square's sides on
the longer axis (:func:`refit`), so that a scene's label stays the ink's box.

- :func:`brush`: stroke width that follows the pressure of the brush along the
  strokes, ink that bleeds into the paper, dry-brush gaps where the brush ran
  out, and an elastic and thin-plate deformation of the whole character (no two
  hands write it alike).
- :func:`cursive`: :func:`brush` with strokes run together, as in running and
  cursive script: nearby strokes joined along the direction of writing, small
  counters filled in.
- :func:`pen`: an ordinary person's marker or ball-pen: the strokes' centre
  lines, thin and of even width, wobbly.

:func:`handwritten` picks one of them.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

Mask = npt.NDArray[np.uint8]
Rng = np.random.Generator

STYLES = ("brush", "cursive", "pen")
STYLE_P = (0.45, 0.35, 0.2)
_INK = 128
"""Where a mask counts as ink."""
_TPS_GRID = 16


def _field(rng: Rng, side: int, cells: int, low: float, high: float) -> npt.NDArray[np.float32]:
    """A smooth random field over a ``side`` square, ``cells`` blobs across, within low..high."""
    coarse = rng.uniform(low, high, (cells + 1, cells + 1)).astype(np.float32)
    return np.asarray(cv2.resize(coarse, (side, side), interpolation=cv2.INTER_CUBIC), np.float32)


def _remap(mask: Mask, dx: npt.NDArray[np.float32], dy: npt.NDArray[np.float32]) -> Mask:
    side = mask.shape[0]
    grid = np.arange(side, dtype=np.float32)
    map_x = grid[None, :] + dx
    map_y = grid[:, None] + dy
    out = cv2.remap(mask, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    return np.asarray(out, np.uint8)


def elastic(rng: Rng, mask: Mask, amount: float) -> Mask:
    """Strokes pushed about by a smooth displacement of up to ``amount`` of the side."""
    side = mask.shape[0]
    reach = amount * side
    dx = _field(rng, side, int(rng.integers(3, 7)), -reach, reach)
    dy = _field(rng, side, int(rng.integers(3, 7)), -reach, reach)
    return _remap(mask, dx, dy)


def thin_plate(rng: Rng, mask: Mask, amount: float) -> Mask:
    """A thin-plate spline through a 4 x 4 grid of control points each moved by up to
    ``amount`` of the side: whole parts of the character lean, swell and shift."""
    side = mask.shape[0]
    axis = np.linspace(0, side - 1, 4, dtype=np.float64)
    ctrl = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    moved = ctrl + rng.uniform(-amount, amount, ctrl.shape) * side
    n = len(ctrl)

    def kernel(d2: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.where(d2 > 0, d2 * np.log(np.maximum(d2, 1e-12)), 0.0)

    # Solve for the map from output points (moved) back to source points (ctrl).
    system = np.zeros((n + 3, n + 3))
    system[:n, :n] = kernel(((moved[:, None] - moved[None]) ** 2).sum(-1))
    system[:n, n] = 1
    system[:n, n + 1 :] = moved
    system[n, :n] = 1
    system[n + 1 :, :n] = moved.T
    rhs = np.zeros((n + 3, 2))
    rhs[:n] = ctrl
    coef = np.linalg.solve(system + np.eye(n + 3) * 1e-6, rhs)
    # The spline is smooth: solved on a coarse grid, the displacement is resized to the mask.
    coarse = np.linspace(0, side - 1, _TPS_GRID)
    ys, xs = np.meshgrid(coarse, coarse, indexing="ij")
    points = np.stack([xs.ravel(), ys.ravel()], 1)
    basis = kernel(((points[:, None] - moved[None]) ** 2).sum(-1))
    shift = (basis @ coef[:n] + coef[n] + points @ coef[n + 1 :] - points).astype(np.float32)
    dx, dy = (
        np.asarray(cv2.resize(shift[:, i].reshape(_TPS_GRID, _TPS_GRID), (side, side)), np.float32)
        for i in (0, 1)
    )
    return _remap(mask, dx, dy)


def pressure(rng: Rng, mask: Mask) -> Mask:
    """Stroke width that swells and thins along the strokes, as a brush pressed and lifted:
    the blurred mask cut at a level that varies smoothly over the character."""
    side = mask.shape[0]
    soft = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), side * rng.uniform(0.01, 0.025))
    level = _field(rng, side, int(rng.integers(3, 6)), 255 * 0.15, 255 * 0.6)
    # A lifted brush still draws a hairline: no stroke vanishes (a 福 without its radical
    # would be 畐, the half that 幅 副 逼 蝠 辐 share).
    return np.maximum(np.where(soft > level, 255, 0).astype(np.uint8), centre_lines(mask))


def bleed(rng: Rng, mask: Mask) -> Mask:
    """Ink soaked into the paper: a ragged edge, and a faint halo around the strokes."""
    side = mask.shape[0]
    grain = rng.uniform(0, 1, (side, side)).astype(np.float32)
    grain = np.asarray(cv2.GaussianBlur(grain, (0, 0), 0.8), np.float32)
    soft = cv2.GaussianBlur(mask.astype(np.float32) / 255, (0, 0), side * rng.uniform(0.008, 0.02))
    ragged = soft + (grain - 0.5) * rng.uniform(0.3, 0.8)
    core = np.where(ragged > 0.5, 255.0, 0.0)
    halo = np.clip(soft * 2, 0, 1) * 255 * rng.uniform(0.0, 0.3)
    return np.asarray(np.clip(np.maximum(core, halo), 0, 255), np.uint8)


def dry(rng: Rng, mask: Mask) -> Mask:
    """Dry-brush gaps: thin streaks along the direction the brush moved where no ink came off,
    more of them toward the ends of the strokes."""
    side = mask.shape[0]
    streaks = rng.uniform(0, 1, (side, side)).astype(np.float32)
    length = max(3, int(side * rng.uniform(0.1, 0.3)))
    line = np.zeros((length, length), np.float32)
    line[length // 2] = 1.0 / length
    turn = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), rng.uniform(0, 180), 1)
    line = np.asarray(cv2.warpAffine(line, turn, (length, length)), np.float32)
    line /= max(float(line.sum()), 1e-6)
    streaks = np.asarray(cv2.filter2D(streaks, -1, line), np.float32)
    streaks = (streaks - streaks.mean()) / max(float(streaks.std()), 1e-6)
    # Thin ink (near a stroke's edge or end) breaks first.
    depth = np.asarray(
        cv2.distanceTransform((mask >= _INK).astype(np.uint8), cv2.DIST_L2, 3), np.float32
    )
    depth /= max(float(depth.max()), 1e-6)
    gaps = streaks > rng.uniform(0.6, 1.6) + depth * rng.uniform(0.5, 2.0)
    out = mask.copy()
    out[gaps] = (out[gaps] * rng.uniform(0.0, 0.4)).astype(np.uint8)
    return out


def run_together(rng: Rng, mask: Mask) -> Mask:
    """Strokes joined as in running and cursive script: a closing along the direction of
    writing (mostly left to right, down), and the smallest counters filled."""
    side = mask.shape[0]
    length = max(3, int(side * rng.uniform(0.05, 0.14)))
    line = np.zeros((length, length), np.uint8)
    line[length // 2] = 1
    angle = rng.normal(-35, 25)
    turn = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), angle, 1)
    line = (cv2.warpAffine(line.astype(np.float32), turn, (length, length)) > 0.3).astype(np.uint8)
    joined = np.maximum(mask, cv2.morphologyEx(mask, cv2.MORPH_CLOSE, line))
    filled = joined.copy()
    holes = (joined < _INK).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(holes, connectivity=4)
    small = (side * side) * rng.uniform(0.002, 0.012)
    for i in range(1, count):
        x, y, w, h, area = stats[i]
        touches_edge = x == 0 or y == 0 or x + w == side or y + h == side
        if area < small and not touches_edge:
            filled[labels == i] = 255
    return np.asarray(filled, np.uint8)


def centre_lines(mask: Mask) -> Mask:
    """The strokes' centre lines, about a pixel wide (a morphological skeleton)."""
    ink = (mask >= _INK).astype(np.uint8)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    skeleton = np.zeros_like(ink)
    while ink.any():
        eroded = np.asarray(cv2.erode(ink, cross), np.uint8)
        skeleton |= ink - np.asarray(cv2.dilate(eroded, cross), np.uint8)
        ink = eroded
    return skeleton * np.uint8(255)


def refit(mask: Mask) -> Mask:
    """The ink cropped and scaled back to touch the square on its longer side, centred (the
    bank's convention); an empty mask as it is."""
    side = mask.shape[0]
    ys, xs = np.nonzero(mask >= _INK)
    if len(xs) == 0:
        return mask
    crop = mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    scale = side / max(crop.shape)
    w = min(side, max(1, round(crop.shape[1] * scale)))
    h = min(side, max(1, round(crop.shape[0] * scale)))
    resized = cv2.resize(crop, (w, h), interpolation=cv2.INTER_LINEAR)
    out = np.zeros_like(mask)
    x0, y0 = (side - w) // 2, (side - h) // 2
    out[y0 : y0 + h, x0 : x0 + w] = resized
    return out


def brush(rng: Rng, mask: Mask) -> Mask:
    """A brush's hand: deformed, pressure-width strokes, ink bleed, maybe dry-brush gaps."""
    out = thin_plate(rng, mask, rng.uniform(0.02, 0.07))
    out = elastic(rng, out, rng.uniform(0.005, 0.02))
    out = pressure(rng, out)
    out = bleed(rng, out)
    if rng.random() < 0.5:
        out = dry(rng, out)
    return refit(out)


def cursive(rng: Rng, mask: Mask) -> Mask:
    """Running or cursive script: strokes joined and counters filled, then a brush's hand."""
    return brush(rng, run_together(rng, mask))


def pen(rng: Rng, mask: Mask) -> Mask:
    """A marker or ball-pen: even, thin centre lines, wobbly and deformed."""
    side = mask.shape[0]
    lines = centre_lines(thin_plate(rng, mask, rng.uniform(0.02, 0.06)))
    width = max(1, round(side * rng.uniform(0.015, 0.06)))
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width, width))
    out = cv2.dilate(lines, disc)
    out = elastic(rng, np.asarray(out, np.uint8), rng.uniform(0.005, 0.015))
    out = cv2.GaussianBlur(out, (0, 0), 0.6)
    return refit(np.asarray(out, np.uint8))


def handwritten(rng: Rng, mask: Mask) -> Mask:
    """``mask`` as one of ``STYLES`` (drawn with ``STYLE_P``) would write it."""
    style = STYLES[int(rng.choice(len(STYLES), p=STYLE_P))]
    if style == "brush":
        return brush(rng, mask)
    if style == "cursive":
        return cursive(rng, mask)
    return pen(rng, mask)
