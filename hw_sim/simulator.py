"""The throttle: how long the emulated device takes for a frame the host just processed."""

from __future__ import annotations

from dataclasses import dataclass

from hw_sim.profiles import DeviceProfile


@dataclass(slots=True)
class DeviceSimulator:
    profile: DeviceProfile

    @property
    def tier(self) -> str:
        return self.profile.tier

    def latency(self, host_latency: float, t: float) -> float:
        """Seconds the emulated device needs for a frame started at media time ``t``.

        Args:
            host_latency: seconds the real inference took on this host.
            t: media time the frame was started at.
        """
        del t  # the pass-through profile has no thermal state yet
        return host_latency / self.profile.speed
