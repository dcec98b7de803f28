"""Device profiles: what an emulated phone can do, as data.

The bundled catalogue is ``hw_sim/profiles.toml``; users add or replace
profiles with their own TOML or JSON file (:func:`load_profiles`). Every
number is an estimate; ``docs/hw_sim.md`` says where each one comes from.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

CATALOGUE = Path(__file__).resolve().parent / "profiles.toml"
AUTO_TIER = "auto"


class ProfileError(ValueError):
    """A profile file cannot be read, or a profile has a bad or unknown field."""


@dataclass(frozen=True, slots=True)
class Thermal:
    """First-order heat model in media time (see :mod:`hw_sim.device`).

    Attributes:
        heat_tau_s: time constant of heating while the device is busy; under
            constant load the heat approaches 1.
        cool_tau_s: time constant of cooling while idle; the heat approaches 0.
        onset: heat level at which the device starts to throttle.
        min_speed: speed factor at full heat (1.0: never throttles).
    """

    heat_tau_s: float = 120.0
    cool_tau_s: float = 180.0
    onset: float = 0.5
    min_speed: float = 1.0

    def __post_init__(self) -> None:
        if self.heat_tau_s <= 0 or self.cool_tau_s <= 0:
            raise ProfileError("thermal time constants must be > 0")
        if not 0 <= self.onset < 1:
            raise ProfileError(f"thermal onset must be in [0, 1), got {self.onset}")
        if not 0 < self.min_speed <= 1:
            raise ProfileError(f"thermal min_speed must be in (0, 1], got {self.min_speed}")

    def speed(self, heat: float) -> float:
        """Speed factor (1 = full speed) at ``heat`` in [0, 1]."""
        if heat <= self.onset:
            return 1.0
        over = min(1.0, (heat - self.onset) / (1.0 - self.onset))
        return 1.0 - (1.0 - self.min_speed) * over


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """One device class.

    A profile without compute figures (``int8_gop_s``/``fp32_gop_s`` both 0)
    is a pass-through: the host is the device, frames take as long as they
    really take. Any other profile is emulated: its per-frame latency is
    computed from these figures and the model's MACs, never measured.

    Attributes:
        name: profile id used on the command line and in result messages.
        description: one line for listings.
        camera_fps: frames per second the camera delivers; 0 = whatever arrives.
        camera_width, camera_height: preview size the app analyses; 0 = as received.
        int8: INT8 kernels are faster than FP32 ones here (selects the int8 build).
        int8_gop_s, fp32_gop_s: effective compute speed, 1 MAC = 2 ops.
        preprocess_ms: fixed per-frame cost besides the network.
        cores, threads: SoC cores, and the threads the speed figures were measured with.
        memory_mb: memory the scan may use; a model must fit in it.
        frame_budget_ms: slowest per-frame latency the product accepts (tier choice);
            0 = the camera's frame interval (keep up with the camera), see :attr:`budget_ms`.
        jitter: sigma of the log-normal per-frame latency noise.
        tier: ``"auto"`` or a fixed model tier.
        thermal: heat model; the default never throttles.
    """

    name: str
    description: str = ""
    camera_fps: float = 0.0
    camera_width: int = 0
    camera_height: int = 0
    int8: bool = True
    int8_gop_s: float = 0.0
    fp32_gop_s: float = 0.0
    preprocess_ms: float = 0.0
    cores: int = 0
    threads: int = 0
    memory_mb: float = 0.0
    frame_budget_ms: float = 0.0
    jitter: float = 0.0
    tier: str = AUTO_TIER
    thermal: Thermal = field(default_factory=Thermal)

    def __post_init__(self) -> None:
        numbers = {
            "camera_fps": self.camera_fps,
            "camera_width": self.camera_width,
            "camera_height": self.camera_height,
            "int8_gop_s": self.int8_gop_s,
            "fp32_gop_s": self.fp32_gop_s,
            "preprocess_ms": self.preprocess_ms,
            "memory_mb": self.memory_mb,
            "frame_budget_ms": self.frame_budget_ms,
            "jitter": self.jitter,
        }
        for key, value in numbers.items():
            if value < 0:
                raise ProfileError(f"profile {self.name!r}: {key} must be >= 0, got {value}")
        if (self.camera_width > 0) != (self.camera_height > 0):
            raise ProfileError(
                f"profile {self.name!r}: give both camera_width and camera_height, or neither"
            )
        if self.emulated and self.gop_s(self.int8) <= 0:
            precision = "int8" if self.int8 else "fp32"
            raise ProfileError(f"profile {self.name!r}: int8={self.int8} needs {precision}_gop_s")

    @property
    def emulated(self) -> bool:
        """False for a pass-through profile (the host is the device)."""
        return self.int8_gop_s > 0 or self.fp32_gop_s > 0

    @property
    def precision(self) -> str:
        """The model build this device runs: ``"int8"`` or ``"fp32"``."""
        return "int8" if self.int8 else "fp32"

    @property
    def budget_ms(self) -> float:
        """Per-frame latency budget: ``frame_budget_ms``, else one camera frame; 0 = none."""
        if self.frame_budget_ms > 0:
            return self.frame_budget_ms
        return 1000.0 / self.camera_fps if self.camera_fps > 0 else 0.0

    def gop_s(self, int8: bool) -> float:
        return self.int8_gop_s if int8 else self.fp32_gop_s


@dataclass(frozen=True, slots=True)
class Limit:
    """The values a numeric field may take in a profile file.

    Attributes:
        low, high: bounds, both included unless ``below_high``.
        whole: only whole numbers.
        unset: what leaving the field out means (the dataclass default), for the message.
    """

    low: float
    high: float
    whole: bool = False
    below_high: bool = False
    unset: str = ""

    def admits(self, value: float) -> bool:
        below = value < self.high if self.below_high else value <= self.high
        return self.low <= value and below and (not self.whole or float(value).is_integer())

    def __str__(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return f"{kind} in [{self.low:g}, {self.high:g}{')' if self.below_high else ']'}"


LIMITS: dict[str, Limit] = {
    "camera_fps": Limit(1, 240, unset="leave it out to keep every frame sent"),
    "camera_width": Limit(16, 8192, whole=True, unset="leave both sizes out: frames as sent"),
    "camera_height": Limit(16, 8192, whole=True, unset="leave both sizes out: frames as sent"),
    # The slowest catalogue phone does 4.6 (docs/hw_sim.md); far below that is likely a typo.
    "int8_gop_s": Limit(1, 100_000, unset="leave it out if unknown"),
    "fp32_gop_s": Limit(1, 100_000, unset="leave it out if unknown"),
    "preprocess_ms": Limit(0, 1000),
    "cores": Limit(1, 256, whole=True),
    "threads": Limit(1, 256, whole=True),
    "memory_mb": Limit(1, 65_536, unset="leave it out for no limit"),
    "frame_budget_ms": Limit(1, 10_000, unset="leave it out for one camera frame"),
    # A log-normal sigma, clipped at 3 sigma: 0.5 already allows a frame 4.5x its median.
    "jitter": Limit(0, 0.5),
    "thermal.heat_tau_s": Limit(1, 86_400),
    "thermal.cool_tau_s": Limit(1, 86_400),
    "thermal.onset": Limit(0, 1, below_high=True),
    "thermal.min_speed": Limit(0.1, 1),
}
"""Ranges of the numeric fields (``thermal.*``: the heat model's) that a profile file may set."""

_KINDS = {f.name: f.type for f in fields(DeviceProfile)}
KNOWN_FIELDS = frozenset(_KINDS.keys() - {"name", "thermal"}) | {
    f"thermal.{f.name}" for f in fields(Thermal)
}


def profile_from_dict(name: str, raw: dict[str, Any]) -> DeviceProfile:
    """Build one profile from its table in a TOML or JSON file.

    Raises:
        ProfileError: naming the profile and the field: an unknown field, or a
            value of the wrong type or out of its range (:data:`LIMITS`).
    """
    raw = dict(raw)
    thermal_raw = raw.pop("thermal", {})
    try:
        if not isinstance(thermal_raw, dict):
            raise ProfileError(f"thermal must be a table, got {thermal_raw!r}")
        given = raw | {f"thermal.{key}": value for key, value in thermal_raw.items()}
        unknown = sorted(given.keys() - KNOWN_FIELDS)
        if unknown:
            raise ProfileError(f"unknown field(s) {unknown}; known: {sorted(KNOWN_FIELDS)}")
        values = {key: _checked(key, value) for key, value in given.items()}
    except ProfileError as exc:
        raise ProfileError(f"profile {name!r}: {exc}") from None
    heat = {k.removeprefix("thermal."): v for k, v in values.items() if k.startswith("thermal.")}
    device = {k: v for k, v in values.items() if not k.startswith("thermal.")}
    return DeviceProfile(name=name, thermal=Thermal(**heat), **device)


def _checked(key: str, value: Any) -> Any:
    """``value`` as field ``key`` holds it (TOML and JSON give ints where floats are meant)."""
    if _KINDS.get(key) == "str":
        if not isinstance(value, str):
            raise ProfileError(f"{key} must be a string, got {value!r}")
        return value
    if _KINDS.get(key) == "bool":
        if not isinstance(value, bool):
            raise ProfileError(f"{key} must be true or false, got {value!r}")
        return value
    limit = LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not limit.admits(value):
        hint = f" ({limit.unset})" if limit.unset else ""
        raise ProfileError(f"{key} must be {limit}, got {value!r}{hint}")
    return int(value) if limit.whole else float(value)


def read_profiles(path: Path) -> dict[str, DeviceProfile]:
    """Every profile in the TOML or JSON file at ``path``: one table per profile name.

    Raises:
        ProfileError: the file is missing, unparsable, or holds a bad profile.
    """
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
        raise ProfileError(f"cannot read profiles from {path}: {exc}") from exc
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ProfileError(f"{path}: expected one table (object) per profile name")
    return {name: profile_from_dict(name, table) for name, table in raw.items()}


PROFILES: dict[str, DeviceProfile] = read_profiles(CATALOGUE)
"""The known profiles: the bundled catalogue plus any loaded with :func:`load_profiles`."""


def load_profiles(path: Path) -> list[str]:
    """Add (or replace) the profiles of a user file to :data:`PROFILES`; returns their names.

    Raises:
        ProfileError: as :func:`read_profiles`; nothing is added then.
    """
    found = read_profiles(path)
    PROFILES.update(found)
    return list(found)


def get_profile(name: str) -> DeviceProfile:
    """The known profile called ``name``.

    Raises:
        KeyError: with the list of known profiles.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown device profile {name!r}; known: {sorted(PROFILES)}") from None
