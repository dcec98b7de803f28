import math
import statistics

import pytest
from schedules import settled

from hw_sim import (
    DeviceProfile,
    DeviceSimulator,
    EmulatedDevice,
    HeatState,
    ModelSpec,
    Thermal,
    jitter_factor,
)

MODEL = ModelSpec("s", "int8", macs=50_000_000)
COOL = Thermal()


def phone(jitter=0.0, thermal=COOL, gop_s=10.0, preprocess_ms=0.0):
    return DeviceProfile(
        "p", int8_gop_s=gop_s, jitter=jitter, thermal=thermal, preprocess_ms=preprocess_ms
    )


@pytest.mark.parametrize(
    ("gop_s", "preprocess_ms", "expected"),
    [(10.0, 0.0, 0.010), (20.0, 0.0, 0.005), (10.0, 5.0, 0.015)],
)
def test_latency_is_two_ops_per_mac_over_speed_plus_preprocessing(gop_s, preprocess_ms, expected):
    device = EmulatedDevice(phone(gop_s=gop_s, preprocess_ms=preprocess_ms), MODEL)
    assert device.nominal_latency == pytest.approx(expected)
    assert device.run(0, 0.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("preprocess_ms", "runs", "expected"),
    [
        (0.0, 2, 0.020),  # all network: a close-up costs one more frame's worth
        (5.0, 2, 0.025),  # pre-processing is paid once, the network twice
        (5.0, 4, 0.045),
    ],
)
def test_each_network_run_costs_the_network_not_the_preprocessing(preprocess_ms, runs, expected):
    device = EmulatedDevice(phone(preprocess_ms=preprocess_ms), MODEL)  # 10 ms network
    assert device.run(0, 0.0, runs) == pytest.approx(expected)


def test_fp32_models_use_the_fp32_speed():
    profile = DeviceProfile("p", int8=False, fp32_gop_s=5.0, int8_gop_s=50.0)
    fp32 = ModelSpec("s", "fp32", macs=50_000_000)
    assert EmulatedDevice(profile, fp32).nominal_latency == pytest.approx(0.020)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_jitter_is_a_function_of_seed_and_frame_index(seed):
    draws = [jitter_factor(seed, i, 0.1) for i in range(200)]
    assert draws == [jitter_factor(seed, i, 0.1) for i in range(200)]
    assert draws != [jitter_factor(seed + 1, i, 0.1) for i in range(200)]
    assert statistics.median(draws) == pytest.approx(1.0, abs=0.03)
    assert min(draws) >= math.exp(-0.3) - 1e-12  # clipped to 3 sigma
    assert max(draws) <= math.exp(0.3) + 1e-12


def test_no_jitter_means_a_factor_of_one():
    assert jitter_factor(7, 3, 0.0) == 1.0


def test_same_seed_same_latencies_whatever_the_start_times():
    a = EmulatedDevice(phone(jitter=0.2), MODEL, seed=3)
    b = EmulatedDevice(phone(jitter=0.2), MODEL, seed=3)
    assert [a.run(i, i * 1.0) for i in range(10)] == [b.run(i, i * 1.0) for i in range(10)]


HOT = Thermal(heat_tau_s=10.0, cool_tau_s=20.0, onset=0.5, min_speed=0.5)


def test_sustained_load_throttles_and_rest_recovers():
    device = EmulatedDevice(phone(thermal=HOT), MODEL)  # 10 ms a frame, busy back to back
    t, latencies = 0.0, []
    while t < 60.0:
        latency = device.run(0, t)
        latencies.append((t, latency))
        t += latency
    cold = latencies[0][1]
    assert cold == pytest.approx(0.010)
    assert device.heat > 0.99
    assert latencies[-1][1] == pytest.approx(0.020, rel=0.02)  # min_speed 0.5 at full heat
    onset_t = next(t for t, lat in latencies if lat > cold * 1.001)
    assert onset_t == pytest.approx(10.0 * 0.693, rel=0.05)  # heat reaches 0.5 at tau * ln 2
    assert device.speed_at(t + 5.0) < 1.0
    assert device.speed_at(t + 60.0) == 1.0  # heat e^-3 after 3 cooling time constants
    assert device.run(0, t + 60.0) == pytest.approx(cold)


@pytest.mark.parametrize(
    ("busy", "idle", "heat"),
    [
        (0.0, 0.0, 0.0),
        (10.0, 0.0, 1 - math.exp(-1)),
        (10.0, 20.0, (1 - math.exp(-1)) * math.exp(-1)),
    ],
)
def test_heat_is_first_order_in_media_time(busy, idle, heat):
    state = HeatState()
    state.heat_until(busy, 10.0)
    state.cool_until(busy + idle, 20.0)
    assert state.heat == pytest.approx(heat)


def test_pass_through_profiles_cannot_be_emulated():
    with pytest.raises(ValueError, match="pass-through"):
        EmulatedDevice(DeviceProfile("host"), MODEL)


@pytest.mark.parametrize(
    ("profile", "model", "tier"),
    [
        (DeviceProfile("host"), None, "l"),
        (DeviceProfile("pinned", tier="m"), None, "m"),
        (phone(), MODEL, "s"),
    ],
)
def test_simulator_tier_is_the_models_else_the_profiles(profile, model, tier):
    assert DeviceSimulator(profile, model).tier == tier


def test_simulator_timelines_start_cool_and_repeat_by_seed():
    simulator = DeviceSimulator(phone(jitter=0.3), MODEL, seed=4)
    runs = []
    for _ in range(2):
        timeline = simulator.timeline()
        runs.append(
            [
                latency
                for t in range(20)
                for _, latency in settled(timeline, timeline.offer(t, t, t * 0.1))
            ]
        )
    assert runs[0] == runs[1]


def test_emulated_profiles_need_a_model_and_pass_through_has_no_timeline():
    with pytest.raises(ValueError, match="needs a model spec"):
        DeviceSimulator(phone())
    assert not DeviceSimulator(DeviceProfile("host")).emulated
    with pytest.raises(ValueError, match="pass-through"):
        DeviceSimulator(DeviceProfile("host")).timeline()
