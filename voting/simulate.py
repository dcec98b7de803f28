"""A noise model of the detector's per-frame output, for evaluating voting over many seeds.

Running the real detector on hours of video is slow on a small machine; the
statistics of voting (false recognitions per hour, time to decision) need many
hours. This module draws, frame by frame, what a detector would report about
a scene whose ground truth is known: real 福 (with an entry ramp, per-view
difficulty, blur dropouts and box noise), look-alike characters that the
detector sometimes scores high, and one-frame clutter false positives.

Scores come from a latent logit per object: a slowly varying part (pose,
light, focus: an Ornstein-Uhlenbeck process with ``correlation_time``) plus
independent per-frame noise. That correlation is what makes consecutive
frames of a 30 fps stream far from independent samples.

Clips are drawn at ``BASE_FPS``; slower devices are simulated by
:meth:`Clip.subsample`, so every device profile sees the same timeline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from detectors.core import Box, Confirmer, Detection, Detections

BASE_FPS = 30.0
FRAME_W, FRAME_H = 640, 480
FU, NEGATIVE = "fu", "negative"
KINDS = ("fu", "negative", "empty", "mixed")

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class NoiseModel:
    """How the simulated detector behaves (logits are of the score, ``score = sigmoid``)."""

    threshold: float = 0.3
    """The detector reports nothing below this score."""
    positive_logit: float = 2.0
    """Mean logit of a clearly visible 福."""
    positive_spread: float = 0.6
    """Spread of that mean between views (small, tilted, badly lit 福 are harder)."""
    negative_logit: float = -1.2
    """Mean logit of a look-alike character (富, 幅, ...)."""
    negative_spread: float = 0.5
    slow_sigma: float = 0.9
    correlation_time: float = 0.3
    """Seconds over which the slow part of the score stays correlated."""
    fast_sigma: float = 0.5
    dropout: float = 0.04
    """Chance that a frame of a visible 福 is lost outright (motion blur)."""
    entry_time: float = 0.3
    """Seconds an object takes to come fully into view (its score ramps up meanwhile)."""
    clutter_per_frame: float = 0.03
    """Mean number of one-frame false positives on random background per frame."""
    clutter_logit: float = -1.5
    box_noise: float = 0.03
    """Per-frame jitter of a detected box's sides, as a fraction of its size."""


@dataclass(frozen=True, slots=True)
class GroundTruthObject:
    """One object of a clip: its label, per-frame box (NaN when absent) and in-view spans.

    ``visits`` are the spans during which the object is fully in view;
    ``clarity`` is, per visit, the detector's median score on it then (how
    clearly the detector sees it, from the noise model's per-view difficulty).
    """

    id: int
    label: str
    boxes: FloatArray
    visits: tuple[tuple[float, float], ...]
    clarity: tuple[float, ...]
    contrast: float = math.nan
    """How plainly a person would see a rendered 福, whatever the detector makes of it
    (:func:`detectors.synth.scenes.ink_contrast`); NaN here, where no pixel is drawn."""


@dataclass(frozen=True, slots=True)
class ClipCheck:
    """The detector's check (:class:`detectors.core.Confirmer`) of a clip's detections,
    made on every detection when the clip was detected, so that a voter can ask it later."""

    scores: tuple[Mapping[Detection, float], ...]
    """Per frame of the base-rate timeline, each detection's score under the check."""
    min_score: float

    def confirmer(self, frame: int) -> Confirmer:
        """The check of the detections of base-rate frame ``frame``; one check, one run."""
        return Confirmer(self.scores[frame].__getitem__, self.min_score, 1.0)


@dataclass(frozen=True, slots=True)
class Clip:
    """Per-frame detections of a simulated (or detected, then cached) clip, with its truth."""

    kind: str
    seed: int
    times: FloatArray
    detections: tuple[Detections, ...]
    objects: tuple[GroundTruthObject, ...]
    frame_index: npt.NDArray[np.int64]
    """Index of each frame in the base-rate timeline (the objects' ``boxes`` rows)."""
    check: ClipCheck | None = None
    """The detector's check, for a detector that offers one."""

    def confirmer(self, i: int) -> Confirmer | None:
        """The check of the detections of this clip's ``i``-th frame (``None``: none)."""
        return None if self.check is None else self.check.confirmer(int(self.frame_index[i]))

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) + 1.0 / BASE_FPS

    def subsample(self, fps: float) -> Clip:
        """The frames a device processing ``fps`` frames per second would take."""
        base = float(1.0 / np.median(np.diff(self.times))) if len(self.times) > 1 else BASE_FPS
        wanted = np.arange(0.0, self.times[-1] - self.times[0] + 1e-9, 1.0 / fps)
        keep = np.unique(np.minimum(np.round(wanted * base).astype(np.int64), len(self.times) - 1))
        return replace(
            self,
            times=self.times[keep],
            detections=tuple(self.detections[i] for i in keep),
            frame_index=self.frame_index[keep],
        )


def make_sim_clip(seed: int, kind: str, noise: NoiseModel | None = None) -> Clip:
    """Draw one clip of ``kind`` ("fu", "negative", "empty" or "mixed") from ``seed``.

    - ``fu``: one 福 comes into view and stays 1 to 4 s, then leaves.
    - ``negative``: 20 s with one or two look-alike characters in view throughout.
    - ``empty``: 20 s of background (clutter false positives only).
    - ``mixed``: 12 s with two 福 at once, one of which leaves and comes back
      2.5 s later, plus a look-alike.

    Raises:
        ValueError: unknown ``kind``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown clip kind {kind!r}; have {list(KINDS)}")
    noise = noise or NoiseModel()
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    spans: list[tuple[str, list[tuple[float, float]]]] = []
    if kind == "fu":
        start = rng.uniform(0.3, 1.5)
        stay = rng.uniform(1.0, 4.0)
        duration = start + stay + 1.5
        spans.append((FU, [(start, start + stay)]))
    elif kind == "mixed":
        duration = 12.0
        spans.append((FU, [(rng.uniform(0.3, 1.0), 11.5)]))
        first = rng.uniform(1.0, 2.0)
        spans.append((FU, [(first, first + 3.0), (first + 5.5, first + 8.5)]))
        spans.append((NEGATIVE, [(0.0, duration)]))
    else:
        duration = 20.0
        if kind == "negative":
            spans.extend((NEGATIVE, [(0.0, duration)]) for _ in range(rng.integers(1, 3)))
    n = round(duration * BASE_FPS)
    times = np.arange(n) / BASE_FPS
    per_frame: list[list[Detection]] = [[] for _ in range(n)]
    objects: list[GroundTruthObject] = []
    for oid, (label, visits) in enumerate(spans, start=1):
        boxes, clarity = _draw_object(rng, noise, label, visits, times, per_frame, objects)
        objects.append(GroundTruthObject(oid, label, boxes, tuple(visits), clarity))
    _draw_clutter(rng, noise, per_frame)
    detections = tuple(
        Detections(tuple(sorted(found, key=lambda d: -d.score)), frame=(FRAME_W, FRAME_H))
        for found in per_frame
    )
    return Clip(kind, seed, times, detections, tuple(objects), np.arange(n))


def _draw_object(
    rng: np.random.Generator,
    noise: NoiseModel,
    label: str,
    visits: list[tuple[float, float]],
    times: FloatArray,
    per_frame: list[list[Detection]],
    placed: list[GroundTruthObject],
) -> tuple[FloatArray, tuple[float, ...]]:
    """Add one object's detections to ``per_frame``; return its true boxes and visit clarity."""
    n = len(times)
    size = rng.uniform(70, 180)
    cx, cy = _free_spot(rng, size, placed)
    # Hand shake: a slow random walk plus a tremor, a few percent of the size.
    walk = np.cumsum(rng.normal(0, 0.004 * size, (n, 2)), axis=0)
    tremor = 0.02 * size * np.sin(2 * np.pi * rng.uniform(0.5, 2) * times)[:, None]
    centres = np.array([cx, cy]) + walk + tremor
    half = size / 2
    true = np.column_stack([centres - half, centres + half])
    boxes = np.full((n, 4), np.nan)
    mean = np.full(n, -np.inf)
    logit, spread = (
        (noise.positive_logit, noise.positive_spread)
        if label == FU
        else (noise.negative_logit, noise.negative_spread)
    )
    clarity = []
    for start, end in visits:
        level = logit + rng.normal(0, spread)
        clarity.append(float(1 / (1 + np.exp(-level))))
        ramp_from = max(0.0, start - noise.entry_time)
        present = (times >= ramp_from) & (times < end + noise.entry_time)
        boxes[present] = true[present]
        entering = np.clip((times - ramp_from) / max(noise.entry_time, 1e-9), 0, 1)
        leaving = np.clip((end + noise.entry_time - times) / max(noise.entry_time, 1e-9), 0, 1)
        ramp = np.minimum(entering, leaving)
        mean[present] = (level - 4.0 * (1 - ramp))[present]
    latent = mean + _ornstein_uhlenbeck(rng, n, noise) + rng.normal(0, noise.fast_sigma, n)
    scores = 1 / (1 + np.exp(-latent))
    dropped = rng.random(n) < (noise.dropout if label == FU else 0.0)
    jitter = rng.normal(0, noise.box_noise * size, (n, 4))
    for i in np.nonzero((scores >= noise.threshold) & ~dropped)[0]:
        box = true[i] + jitter[i]
        per_frame[i].append(Detection(FU, float(scores[i]), _box(box)))
    return boxes, tuple(clarity)


def _free_spot(
    rng: np.random.Generator, size: float, placed: list[GroundTruthObject]
) -> tuple[float, float]:
    """A centre at least one size away from the objects already placed (tried a few times)."""
    for _ in range(50):
        cx = rng.uniform(size, FRAME_W - size)
        cy = rng.uniform(size * 0.75, FRAME_H - size * 0.75)
        if all(_far(cx, cy, size, obj) for obj in placed):
            break
    return cx, cy


def _far(cx: float, cy: float, size: float, obj: GroundTruthObject) -> bool:
    first = obj.boxes[~np.isnan(obj.boxes[:, 0])][0]
    ox, oy = (first[0] + first[2]) / 2, (first[1] + first[3]) / 2
    return bool(np.hypot(cx - ox, cy - oy) > 0.75 * (size + first[2] - first[0]))


def _ornstein_uhlenbeck(rng: np.random.Generator, n: int, noise: NoiseModel) -> FloatArray:
    """A stationary AR(1) sequence with std ``slow_sigma`` and the given correlation time."""
    phi = float(np.exp(-1.0 / (BASE_FPS * noise.correlation_time)))
    steps = rng.normal(0, noise.slow_sigma * np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    level = rng.normal(0, noise.slow_sigma)
    for i in range(n):
        level = phi * level + steps[i]
        out[i] = level
    return out


def _draw_clutter(
    rng: np.random.Generator, noise: NoiseModel, per_frame: list[list[Detection]]
) -> None:
    for i, count in enumerate(rng.poisson(noise.clutter_per_frame, len(per_frame))):
        for _ in range(count):
            score = float(1 / (1 + np.exp(-rng.normal(noise.clutter_logit, 1.0))))
            if score < noise.threshold:
                continue
            size = rng.uniform(40, 160)
            x, y = rng.uniform(0, FRAME_W - size), rng.uniform(0, FRAME_H - size)
            per_frame[i].append(Detection(FU, score, (x, y, x + size, y + size)))


def _box(values: FloatArray) -> Box:
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))
