import json

import pytest

from hw_sim import PROFILES, DeviceProfile, ProfileError, Thermal, get_profile, read_profiles
from hw_sim.profiles import load_profiles


def test_bundled_catalogue_has_a_pass_through_host_and_three_emulated_phones():
    assert not PROFILES["host"].emulated
    for name in ("low", "mid", "high"):
        profile = PROFILES[name]
        assert profile.emulated
        assert profile.camera_fps > 0 and profile.camera_width > 0 and profile.camera_height > 0
        assert (
            profile.budget_ms == pytest.approx(1000 / profile.camera_fps)
            and profile.memory_mb > 0
            and profile.cores > 0
        )
    assert PROFILES["low"].precision == "fp32"  # INT8 kernels do not pay on Cortex-A53
    assert PROFILES["high"].precision == "int8"
    speeds = [PROFILES[n].gop_s(PROFILES[n].int8) for n in ("low", "mid", "high")]
    assert speeds == sorted(speeds)


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".toml", "[lab]\nfp32_gop_s = 10\nint8 = false\n[lab.thermal]\nmin_speed = 0.5\n"),
        (
            ".json",
            json.dumps({"lab": {"fp32_gop_s": 10, "int8": False, "thermal": {"min_speed": 0.5}}}),
        ),
    ],
)
def test_user_files_add_profiles_in_toml_or_json(tmp_path, suffix, text):
    path = tmp_path / f"mine{suffix}"
    path.write_text(text)
    try:
        assert load_profiles(path) == ["lab"]
        lab = get_profile("lab")
        assert lab.fp32_gop_s == 10.0 and isinstance(lab.fp32_gop_s, float)
        assert lab.thermal == Thermal(min_speed=0.5)
    finally:
        PROFILES.pop("lab", None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[x]\nspeed = 2\n", "unknown field"),
        ("[x]\nfp32_gop_s = 10\nint8 = false\n[x.thermal]\nheat = 1\n", "thermal.heat"),
        ("[x]\nint8_gop_s = 'fast'\n", "must be a number"),
        ("[x]\nint8 = 1\nint8_gop_s = 3\n", "true or false"),
        ("[x]\nint8_gop_s = -1\n", ">= 0"),
        ("[x]\nint8 = true\nfp32_gop_s = 5\n", "needs int8_gop_s"),
        ("[x]\nfp32_gop_s = 5\nint8 = false\n[x.thermal]\nonset = 1.5\n", "onset"),
        ("[x]\ndescription = 3\n", "must be a string"),
        ("[x]\nfp32_gop_s = 5\nint8 = false\n[x.thermal]\nheat_tau_s = 0\n", "time constants"),
        ("[x]\nfp32_gop_s = 5\nint8 = false\n[x.thermal]\nmin_speed = 0\n", "min_speed"),
        ("x = 3\n", "one table"),
        ("[x\n", "cannot read"),
    ],
)
def test_bad_profile_files_are_refused_with_a_clear_message(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message):
        read_profiles(path)


def test_missing_file_and_unknown_profile_name_say_what_is_wrong(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        read_profiles(tmp_path / "nope.toml")
    with pytest.raises(KeyError, match="known:"):
        get_profile("toaster")


@pytest.mark.parametrize(("heat", "speed"), [(0.0, 1.0), (0.5, 1.0), (0.75, 0.8), (1.0, 0.6)])
def test_throttle_speed_falls_linearly_from_onset_to_full_heat(heat, speed):
    assert Thermal(onset=0.5, min_speed=0.6).speed(heat) == pytest.approx(speed)


def test_a_profile_without_compute_figures_is_pass_through():
    assert not DeviceProfile("t").emulated
    assert DeviceProfile("t").tier == "auto"


@pytest.mark.parametrize(
    ("profile", "budget"),
    [
        (DeviceProfile("p", camera_fps=25.0), 40.0),
        (DeviceProfile("p", camera_fps=25.0, frame_budget_ms=100.0), 100.0),
        (DeviceProfile("host"), 0.0),
    ],
)
def test_budget_is_explicit_else_one_camera_frame_else_none(profile, budget):
    assert profile.budget_ms == pytest.approx(budget)
