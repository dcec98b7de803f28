"""Hardware simulator: makes the server take as long per frame as an emulated phone would.

Pure: the caller measures the real inference time and passes media time in.
"""

from hw_sim.profiles import PROFILES, DeviceProfile, get_profile
from hw_sim.simulator import DeviceSimulator

__all__ = ["PROFILES", "DeviceProfile", "DeviceSimulator", "get_profile"]
