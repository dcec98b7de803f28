import json

import pytest
from pydantic import ValidationError

from hw_sim import PROFILES, DeviceProfile, ProfileError, Thermal, get_profile, read_profiles
from hw_sim.profiles import load_profiles


def test_bundled_catalogue_has_a_pass_through_host_and_three_emulated_phones():
    assert not PROFILES["host"].emulated
    for name in ("low", "mid", "high"):
        profile = PROFILES[name]
        assert profile.emulated
        assert profile.camera_fps > 0 and profile.camera_width > 0 and profile.camera_height > 0
        assert profile.memory_mb > 0 and profile.cores > 0
    assert PROFILES["mid"].budget_ms == pytest.approx(1000 / PROFILES["mid"].camera_fps)
    assert PROFILES["high"].budget_ms == pytest.approx(1000 / PROFILES["high"].camera_fps)
    # the cheap phone trades frames for the larger model: the vote weighs media time
    assert PROFILES["low"].budget_ms == 100.0 > 1000 / PROFILES["low"].camera_fps
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


def _write(folder, suffix, profiles):
    """``profiles`` as a TOML or JSON profiles file; a dict value becomes a sub-table."""
    path = folder / f"profiles{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(profiles))
        return path
    lines = []
    for name, table in profiles.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in table.items() if not isinstance(v, dict)]
        for sub, inner in ((k, v) for k, v in table.items() if isinstance(v, dict)):
            lines.append(f"[{name}.{sub}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in inner.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


FP32 = {"fp32_gop_s": 10, "int8": False}


@pytest.mark.parametrize("suffix", [".toml", ".json"])
@pytest.mark.parametrize(
    ("table", "message"),
    [
        # a misspelt key, at the top and nested
        ({"speed": 2}, "x.speed: extra field not permitted"),
        (FP32 | {"thermal": {"heat": 1}}, "x.thermal.heat: extra field not permitted"),
        (FP32 | {"name": "y"}, "x.name: extra field not permitted"),
        # a wrong type
        (FP32 | {"thermal": 3}, "x.thermal: Input should be an object"),
        ({"int8_gop_s": "fast"}, "x.int8_gop_s: Input should be a valid number (got 'fast')"),
        ({"int8": 1, "int8_gop_s": 3}, "x.int8: Input should be a valid boolean (got 1)"),
        ({"description": 3}, "x.description: Input should be a valid string (got 3)"),
        ({"tier": 1}, "x.tier: Input should be a valid string"),
        (FP32 | {"camera_width": 640.5, "camera_height": 480}, "x.camera_width: Input should be"),
        # out of bounds
        ({"int8_gop_s": -1}, "x.int8_gop_s: Input should be greater than or equal to 0 (got -1)"),
        ({"int8_gop_s": 1e6}, "x.int8_gop_s: Input should be less than or equal to 100000"),
        (FP32 | {"jitter": 5}, "x.jitter: Input should be less than or equal to 0.5 (got 5)"),
        (FP32 | {"camera_fps": 0.5}, "x.camera_fps: 0 (unset) or at least 1 (got 0.5)"),
        (FP32 | {"camera_fps": 300}, "x.camera_fps: Input should be less than or equal to 240"),
        (FP32 | {"camera_width": 8, "camera_height": 480}, "x.camera_width: 0 (unset) or at"),
        (FP32 | {"cores": 300}, "x.cores: Input should be less than or equal to 256 (got 300)"),
        (FP32 | {"memory_mb": 0.5}, "x.memory_mb: 0 (unset) or at least 1 (got 0.5)"),
        (FP32 | {"frame_budget_ms": 0.5}, "x.frame_budget_ms: 0 (unset) or at least 1"),
        (FP32 | {"preprocess_ms": 5000}, "x.preprocess_ms: Input should be less than or equal"),
        (FP32 | {"thermal": {"onset": 1.0}}, "x.thermal.onset: Input should be less than 1"),
        (FP32 | {"thermal": {"heat_tau_s": 0}}, "x.thermal.heat_tau_s: Input should be greater"),
        (FP32 | {"thermal": {"min_speed": 0}}, "x.thermal.min_speed: Input should be greater"),
        # fields that need one another
        ({"int8": True, "fp32_gop_s": 5}, "x: int8=True needs int8_gop_s"),
        (FP32 | {"camera_width": 640}, "x: give both camera_width and camera_height"),
    ],
)
def test_bad_fields_are_refused_naming_file_profile_and_field(tmp_path, suffix, table, message):
    path = _write(tmp_path, suffix, {"x": table})
    with pytest.raises(ProfileError) as refused:
        read_profiles(path)
    assert str(refused.value).startswith(f"{path}: x")
    assert message in str(refused.value)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_fields_at_the_ends_of_their_ranges_load(tmp_path, suffix):
    table = FP32 | {
        "camera_fps": 240, "camera_width": 16, "camera_height": 8192, "fp32_gop_s": 1,
        "preprocess_ms": 0, "cores": 256, "threads": 1, "memory_mb": 1, "frame_budget_ms": 10000,
        "jitter": 0.5,
        "thermal": {"heat_tau_s": 1, "cool_tau_s": 86400, "onset": 0, "min_speed": 0.1},
    }  # fmt: skip
    lab = read_profiles(_write(tmp_path, suffix, {"lab": table}))["lab"]
    assert (lab.camera_width, lab.camera_height, lab.jitter) == (16, 8192, 0.5)
    assert isinstance(lab.camera_width, int) and isinstance(lab.fp32_gop_s, float)


@pytest.mark.parametrize("schema", [DeviceProfile, Thermal])
def test_every_field_of_a_profile_says_what_it_is(schema):
    described = schema.__pydantic_fields__.values()
    assert described and all(f.description for f in described)


@pytest.mark.parametrize(
    ("suffix", "text", "message"),
    [
        (".toml", "x = 3\n", "expected one table"),
        (".json", '{"x": 3}', "expected one table"),
        (".toml", "[x\n", "cannot read"),
        (".json", "{x", "cannot read"),
        (".json", "[" * 100_000, "cannot read"),  # nesting deeper than the parser's recursion
        (".toml", "x = " + "[" * 100_000, "cannot read"),
    ],
)
def test_unreadable_files_are_refused_with_a_clear_message(tmp_path, suffix, text, message):
    path = tmp_path / f"bad{suffix}"
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


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Thermal(heat_tau_s=0), "heat_tau_s\n  Input should be greater than or equal to 1"),
        (lambda: Thermal(onset=1.0), "onset\n  Input should be less than 1"),
        (lambda: Thermal(min_speed=0), "min_speed\n  Input should be greater than or equal"),
        (lambda: DeviceProfile("x", jitter=-0.1), "jitter\n  Input should be greater than"),
        (lambda: DeviceProfile("x", jitter="0.1"), "jitter\n  Input should be a valid number"),
        (lambda: DeviceProfile("x", wobble=1), "wobble\n  Unexpected keyword argument"),
    ],
)
def test_profiles_made_in_code_are_checked_as_files_are(make, message):
    with pytest.raises(ValidationError) as refused:
        make()
    assert message in str(refused.value)
