"""Device profiles: what an emulated phone can do, as data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """One device class.

    Attributes:
        name: profile id used on the command line and in result messages.
        speed: compute speed relative to this host; the emulated device takes
            ``host_time / speed`` per frame (1.0 = as fast as the host).
        tier: model tier this device runs.
    """

    name: str
    speed: float = 1.0
    tier: str = "l"

    def __post_init__(self) -> None:
        if self.speed <= 0:
            raise ValueError(f"profile {self.name!r}: speed must be > 0, got {self.speed}")


PROFILES: dict[str, DeviceProfile] = {
    "host": DeviceProfile("host"),
}


def get_profile(name: str) -> DeviceProfile:
    """The bundled profile called ``name``.

    Raises:
        KeyError: with the list of known profiles.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown device profile {name!r}; known: {sorted(PROFILES)}") from None
