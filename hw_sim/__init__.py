"""Hardware simulator: makes the server take as long per frame as an emulated phone would.

Pure: profiles are data, latency is a function of the profile, the model's
MACs, a seed and media time; the caller runs the real inference and waits the
difference. See docs/hw_sim.md.
"""

from hw_sim.camera import camera_scale, camera_view, confirm_received, to_received
from hw_sim.device import EmulatedDevice, HeatState, jitter_factor
from hw_sim.models import ModelChoice, ModelChoiceError, ModelSpec, check_tiers, choose_model
from hw_sim.profiles import (
    PROFILES,
    DeviceProfile,
    ProfileError,
    Thermal,
    get_profile,
    load_profiles,
    read_profiles,
)
from hw_sim.simulator import DeviceSimulator
from hw_sim.timeline import DeviceTimeline, Start

__all__ = [
    "PROFILES",
    "DeviceProfile",
    "DeviceSimulator",
    "DeviceTimeline",
    "EmulatedDevice",
    "HeatState",
    "ModelChoice",
    "ModelChoiceError",
    "ModelSpec",
    "ProfileError",
    "Start",
    "Thermal",
    "camera_scale",
    "camera_view",
    "check_tiers",
    "choose_model",
    "confirm_received",
    "get_profile",
    "jitter_factor",
    "load_profiles",
    "read_profiles",
    "to_received",
]
