"""The emulated phone's per-frame latency: profile speed x model MACs, seeded jitter, heat.

Everything is a function of the profile, the model, the seed and media time,
so the same stream gives the same latencies on any host, at any host speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hw_sim.models import ModelSpec
from hw_sim.profiles import DeviceProfile

JITTER_CLIP = 3.0
"""Jitter draws are clipped to this many sigmas, so one frame is never absurdly slow."""


def jitter_factor(seed: int, index: int, sigma: float) -> float:
    """Log-normal latency multiplier of frame ``index``; its median is 1.

    A pure function of ``(seed, index)``: frame 17 gets the same draw whatever
    frames before it were dropped.
    """
    if sigma <= 0:
        return 1.0
    z = float(np.random.default_rng([seed & 0xFFFFFFFF, index]).standard_normal())
    return math.exp(sigma * max(-JITTER_CLIP, min(JITTER_CLIP, z)))


@dataclass(slots=True)
class HeatState:
    """First-order heat: approaches 1 while busy (``heat_tau_s``), 0 while idle (``cool_tau_s``).

    Time is media time; calls must come in non-decreasing time order.
    """

    heat: float = 0.0
    t: float = 0.0

    def cool_until(self, t: float, cool_tau_s: float) -> None:
        if t > self.t:
            self.heat *= math.exp(-(t - self.t) / cool_tau_s)
            self.t = t

    def heat_until(self, t: float, heat_tau_s: float) -> None:
        if t > self.t:
            self.heat = 1.0 - (1.0 - self.heat) * math.exp(-(t - self.t) / heat_tau_s)
            self.t = t


@dataclass(slots=True)
class EmulatedDevice:
    """The phone: call :meth:`run` for each frame it starts, in start order.

    Args:
        profile: an emulated (not pass-through) profile.
        model: the model it runs (MACs and precision set the speed).
        seed: jitter seed.
    """

    profile: DeviceProfile
    model: ModelSpec
    seed: int = 0
    state: HeatState = field(default_factory=HeatState)

    def __post_init__(self) -> None:
        if not self.profile.emulated:
            raise ValueError(f"profile {self.profile.name!r} is pass-through, not emulated")

    @property
    def nominal_latency(self) -> float:
        """Seconds per frame when cool and without jitter."""
        return self.model.nominal_latency(self.profile)

    @property
    def heat(self) -> float:
        return self.state.heat

    def speed_at(self, t: float) -> float:
        """Throttle factor a frame started at ``t`` would get (does not change the state)."""
        probe = HeatState(self.state.heat, self.state.t)
        probe.cool_until(t, self.profile.thermal.cool_tau_s)
        return self.profile.thermal.speed(probe.heat)

    def run(self, index: int, start: float, runs: float = 1.0) -> float:
        """Seconds the device takes for frame ``index`` started at media time ``start``.

        ``runs`` network runs (a two-pass detector's close-ups add one each). The
        device cools from its last frame to ``start`` and heats while busy.
        """
        thermal = self.profile.thermal
        self.state.cool_until(start, thermal.cool_tau_s)
        speed = thermal.speed(self.state.heat)
        nominal = self.model.nominal_latency(self.profile, runs)
        latency = nominal / speed * jitter_factor(self.seed, index, self.profile.jitter)
        self.state.heat_until(start + latency, thermal.heat_tau_s)
        return latency
