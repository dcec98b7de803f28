"""Box smoothing so that overlays do not jitter: a One Euro filter in media time.

The One Euro filter (Casiez, Roussel and Vogel, CHI 2012) is a low-pass filter
whose cut-off rises with speed: a still box is smoothed hard (no jitter), a
moving one lightly (little lag). It works on timestamps, not frame counts, so
a 5 fps and a 30 fps device get the same smoothing in time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from detectors.core import Box


def _alpha(cutoff_hz: float, dt: float) -> float:
    """Weight of the new sample of an exponential smoother with this cut-off, ``dt`` later."""
    tau = 1.0 / (2 * math.pi * cutoff_hz)
    return 1.0 / (1.0 + tau / dt)


@dataclass(frozen=True, slots=True)
class OneEuroConfig:
    """``min_cutoff`` (Hz) sets smoothing at rest; ``beta`` (Hz per box-size/s) cuts lag in motion.

    Speed is measured in box sizes per second (the box's mean side), so the
    same settings fit a small far 福 and a large near one.
    """

    min_cutoff: float = 1.0
    beta: float = 0.5
    d_cutoff: float = 1.0

    def __post_init__(self) -> None:
        if not (self.min_cutoff > 0 and self.d_cutoff > 0 and self.beta >= 0):
            raise ValueError("One Euro cut-offs must be > 0 and beta >= 0")


@dataclass(slots=True)
class OneEuroBox:
    """Smooths the four coordinates of one track's box; feed it with :meth:`update`."""

    config: OneEuroConfig
    box: Box | None = None
    speed: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    t: float = 0.0

    def update(self, box: Box, t: float) -> Box:
        """Take the raw ``box`` seen at media time ``t`` and return the smoothed box."""
        if self.box is None or t <= self.t:
            # First sample, or a repeated timestamp: nothing to filter against.
            if self.box is None:
                self.box, self.t = box, t
            return self.box
        dt = t - self.t
        size = max(1.0, (box[2] - box[0] + box[3] - box[1]) / 2)
        a_d = _alpha(self.config.d_cutoff, dt)
        speeds = tuple(
            a_d * (new - old) / dt + (1 - a_d) * prev
            for new, old, prev in zip(box, self.box, self.speed, strict=True)
        )
        cutoffs = (self.config.min_cutoff + self.config.beta * abs(v) / size for v in speeds)
        smoothed = tuple(
            old + _alpha(cutoff, dt) * (new - old)
            for new, old, cutoff in zip(box, self.box, cutoffs, strict=True)
        )
        self.speed = (speeds[0], speeds[1], speeds[2], speeds[3])
        self.box = (smoothed[0], smoothed[1], smoothed[2], smoothed[3])
        self.t = t
        return self.box
