"""One session's emulated phone: its profile, the model it runs, and the schedule of its frames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from hw_sim.device import EmulatedDevice
from hw_sim.models import ModelSpec
from hw_sim.profiles import AUTO_TIER, DeviceProfile
from hw_sim.timeline import DeviceTimeline

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DeviceSimulator:
    """What a session needs from hw_sim.

    For an emulated profile, call :meth:`timeline` once per stream and let it
    decide which frames start when; each start's latency is the emulated one.
    A pass-through profile has no timeline: frames take what they take here.

    Args:
        profile: the device.
        model: the model the session runs (needed by emulated profiles: its
            MACs and precision set the speed).
        seed: seed of the latency jitter.
    """

    profile: DeviceProfile
    model: ModelSpec | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.profile.emulated and self.model is None:
            raise ValueError(f"profile {self.profile.name!r} is emulated: it needs a model spec")

    @property
    def emulated(self) -> bool:
        return self.profile.emulated

    @property
    def tier(self) -> str:
        """The tier this device runs: the model's, else the profile's fixed one, else ``"l"``."""
        if self.model is not None:
            return self.model.tier
        return self.profile.tier if self.profile.tier != AUTO_TIER else "l"

    def device(self) -> EmulatedDevice:
        """A fresh (cool) emulated device.

        Raises:
            ValueError: the profile is pass-through.
        """
        if self.model is None:
            raise ValueError(f"profile {self.profile.name!r} is pass-through, not emulated")
        return EmulatedDevice(self.profile, self.model, self.seed)

    def timeline(self) -> DeviceTimeline[T]:
        """A fresh schedule for one stream, with a cool device.

        Raises:
            ValueError: the profile is pass-through.
        """
        return DeviceTimeline(self.device().run, self.profile.camera_fps)
