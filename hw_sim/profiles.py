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


def profile_from_dict(name: str, raw: dict[str, Any]) -> DeviceProfile:
    """Build one profile from its table in a TOML or JSON file.

    Raises:
        ProfileError: an unknown field, or a value of the wrong type or range.
    """
    known = {f.name for f in fields(DeviceProfile)} - {"name", "thermal"}
    thermal_known = {f.name for f in fields(Thermal)}
    raw = dict(raw)
    thermal_raw = raw.pop("thermal", {})
    unknown = sorted(set(raw) - known) + sorted(
        f"thermal.{k}" for k in set(thermal_raw) - thermal_known
    )
    if unknown:
        raise ProfileError(f"profile {name!r}: unknown field(s) {unknown}; known: {sorted(known)}")
    try:
        values: dict[str, Any] = {key: _typed(key, value) for key, value in raw.items()}
        thermal = Thermal(**{k: float(v) for k, v in thermal_raw.items()})
        return DeviceProfile(name=name, thermal=thermal, **values)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ProfileError):
            raise
        raise ProfileError(f"profile {name!r}: {exc}") from exc


def _typed(key: str, value: Any) -> Any:
    """Check one field's type (TOML and JSON give ints where floats are meant)."""
    kind = {f.name: f.type for f in fields(DeviceProfile)}[key]
    if kind == "str":
        if not isinstance(value, str):
            raise ProfileError(f"{key} must be a string, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProfileError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProfileError(f"{key} must be a number, got {value!r}")
    return int(value) if kind == "int" else float(value)


def read_profiles(path: Path) -> dict[str, DeviceProfile]:
    """Every profile in the TOML or JSON file at ``path``: one table per profile name.

    Raises:
        ProfileError: the file is missing, unparsable, or holds a bad profile.
    """
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as exc:
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
