"""Device profiles: what an emulated phone can do, as data.

The bundled catalogue is ``hw_sim/profiles.toml``; users add or replace
profiles with their own TOML or JSON file (:func:`load_profiles`). Every
number is an estimate; ``docs/hw_sim.md`` says where each one comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, TypeAdapter
from pydantic.dataclasses import dataclass

from detectors.config import STRICT, read_tables, shown, validate

CATALOGUE = Path(__file__).resolve().parent / "profiles.toml"
AUTO_TIER = "auto"


class ProfileError(ValueError):
    """A profile file cannot be read, or a profile has a bad or unknown field."""


def _unset_or(low: float) -> AfterValidator:
    """0 (the field left out) or at least ``low``: far below ``low`` is likely a typo."""

    def check(value: float) -> float:
        if 0 < value < low:
            raise ValueError(f"0 (unset) or at least {low:g}")
        return value

    return AfterValidator(check)


@dataclass(frozen=True, slots=True, config=STRICT)
class Thermal:
    """First-order heat model in media time (see :mod:`hw_sim.device`).

    Under constant load the heat approaches 1; idle, it approaches 0.
    """

    heat_tau_s: float = Field(
        default=120.0, ge=1, le=86_400, description="heating time constant (busy)"
    )
    cool_tau_s: float = Field(
        default=180.0, ge=1, le=86_400, description="cooling time constant (idle)"
    )
    onset: float = Field(
        default=0.5, ge=0, lt=1, description="heat level at which throttling starts"
    )
    min_speed: float = Field(
        default=1.0, ge=0.1, le=1, description="speed at full heat; 1: no throttling"
    )

    def speed(self, heat: float) -> float:
        """Speed factor (1 = full speed) at ``heat`` in [0, 1]."""
        if heat <= self.onset:
            return 1.0
        over = min(1.0, (heat - self.onset) / (1.0 - self.onset))
        return 1.0 - (1.0 - self.min_speed) * over


@dataclass(frozen=True, slots=True, config=STRICT)
class DeviceProfile:
    """One device class: a table of ``hw_sim/profiles.toml`` or of a user's file.

    A profile without compute figures (``int8_gop_s``/``fp32_gop_s`` both 0)
    is a pass-through: the host is the device, frames take as long as they
    really take. Any other profile is emulated: its per-frame latency is
    computed from these figures and the model's MACs, never measured. A field
    left out takes its default; 0 there means "none" or "unknown".
    """

    name: str = Field(description="profile id in commands and results: its table's name")
    description: str = Field(default="", description="one line for listings")
    camera_fps: Annotated[float, _unset_or(1)] = Field(
        default=0.0,
        ge=0,
        le=240,
        description="frames a second the camera delivers; 0: every frame sent",
    )
    camera_width: Annotated[int, _unset_or(16)] = Field(
        default=0, ge=0, le=8192, description="preview width the app analyses; 0: frames as sent"
    )
    camera_height: Annotated[int, _unset_or(16)] = Field(
        default=0, ge=0, le=8192, description="preview height the app analyses; 0: frames as sent"
    )
    int8: bool = Field(
        default=True, description="INT8 kernels are faster than FP32 ones (the int8 build)"
    )
    int8_gop_s: float = Field(
        default=0.0, ge=0, le=100_000, description="effective INT8 speed, 1 MAC = 2 ops; 0: unknown"
    )
    fp32_gop_s: float = Field(
        default=0.0, ge=0, le=100_000, description="effective FP32 speed, 1 MAC = 2 ops; 0: unknown"
    )
    preprocess_ms: float = Field(
        default=0.0, ge=0, le=1000, description="fixed cost of every frame"
    )
    cores: int = Field(default=0, ge=0, le=256, description="SoC cores; 0: unknown")
    threads: int = Field(
        default=0, ge=0, le=256, description="threads the speeds were measured with"
    )
    memory_mb: Annotated[float, _unset_or(1)] = Field(
        default=0.0, ge=0, le=65_536, description="memory the scan may use; 0: no limit"
    )
    frame_budget_ms: Annotated[float, _unset_or(1)] = Field(
        default=0.0,
        ge=0,
        le=10_000,
        description="slowest frame the product accepts; 0: one camera frame",
    )
    jitter: float = Field(
        default=0.0, ge=0, le=0.5, description="sigma of the log-normal per-frame latency noise"
    )
    tier: str = Field(
        default=AUTO_TIER, description='"auto" (best within the budget) or a fixed tier'
    )
    thermal: Thermal = Field(default_factory=Thermal, description="heat model; never throttles")

    def __post_init__(self) -> None:
        if (self.camera_width > 0) != (self.camera_height > 0):
            raise ValueError("give both camera_width and camera_height, or neither")
        if self.emulated and self.gop_s(self.int8) <= 0:
            precision = "int8" if self.int8 else "fp32"
            raise ValueError(f"int8={self.int8} needs {precision}_gop_s")

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


PROFILE = TypeAdapter(DeviceProfile)


def read_profiles(path: Path) -> dict[str, DeviceProfile]:
    """Every profile in the TOML or JSON file at ``path``: one table per profile name.

    Raises:
        ProfileError: the file is missing or unparsable, or a profile has an unknown field
            or a value of the wrong type or out of its range; the message names the file,
            the profile and the field.
    """
    try:
        tables = read_tables(path)
        return {name: _profile(path, name, table) for name, table in tables.items()}
    except ValueError as exc:
        raise ProfileError(str(exc)) from None


def _profile(path: Path, name: str, table: dict[str, object]) -> DeviceProfile:
    if "name" in table:
        raise ValueError(f"{shown(path)}: {name}.name: extra field not permitted (its table's)")
    return validate(PROFILE, table | {"name": name}, path, (name,))


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
