import contextlib
import json

import pytest

from detectors.card import list_cards, read_card
from hw_sim import (
    PROFILES,
    DeviceProfile,
    ModelChoiceError,
    ModelSpec,
    ProfileError,
    check_tiers,
    choose_model,
)
from hw_sim.models import card_accuracy

# Three tiers, each in both builds; 20 / 100 / 400 MMAC.
SPECS = [
    ModelSpec(tier, precision, macs, params)
    for tier, macs, params in (
        ("s", 20_000_000, 300_000),
        ("m", 100_000_000, 1_200_000),
        ("l", 400_000_000, 5_000_000),
    )
    for precision in ("int8", "fp32")
]


def phone(**fields):
    base = {"int8_gop_s": 10.0, "fp32_gop_s": 5.0, "frame_budget_ms": 50.0}
    return DeviceProfile("p", **(base | fields))


@pytest.mark.parametrize(
    ("profile", "tier", "precision"),
    [
        (phone(), "m", "int8"),  # s 4 ms, m 20 ms, l 80 ms: m is the largest within 50 ms
        (phone(frame_budget_ms=100.0), "l", "int8"),
        (phone(frame_budget_ms=5.0), "s", "int8"),
        (phone(frame_budget_ms=1.0), "s", "int8"),  # nothing fits: the fastest
        (phone(int8=False), "m", "fp32"),  # fp32: s 8 ms, m 40 ms, l 160 ms
        (phone(memory_mb=2.0), "s", "int8"),  # m needs 1.2 MB x 4 of work space
        (phone(tier="l"), "l", "int8"),  # fixed by the profile, even over budget
        (DeviceProfile("host"), "l", "int8"),  # pass-through: the most accurate
    ],
)
def test_most_accurate_tier_within_budget_and_memory(profile, tier, precision):
    choice = choose_model(profile, SPECS)
    assert (choice.spec.tier, choice.spec.precision) == (tier, precision)


def test_fp32_profile_picks_the_largest_fp32_tier_within_budget():
    assert choose_model(phone(int8=False), SPECS).spec == SPECS[3]  # m fp32, 40 ms <= 50 ms


def test_per_session_override_wins_and_reports_whether_it_fits():
    choice = choose_model(phone(), SPECS, tier="l")
    assert choice.spec.tier == "l" and not choice.fits
    assert choice.latency == pytest.approx(0.080)
    with pytest.raises(ModelChoiceError, match="unknown model tier 'xl'"):
        choose_model(phone(), SPECS, tier="xl")


@pytest.mark.parametrize(
    ("tier", "specs", "refused"),
    [
        ("auto", SPECS, False),
        ("m", SPECS, False),
        ("q", SPECS, True),
        ("xl", SPECS, True),  # a tier name, but not shipped
        ("q", [], False),  # no models: nothing to check against
    ],
)
def test_check_tiers_refuses_a_fixed_tier_that_is_not_shipped(tier, specs, refused):
    expected = pytest.raises(
        ProfileError, match=rf"profile 'p': tier .*'l', 'm', 's'.*got '{tier}'"
    )
    with expected if refused else contextlib.nullcontext():
        check_tiers([PROFILES["low"], phone(tier=tier)], specs)


@pytest.mark.parametrize(
    ("s_accuracy", "m_accuracy", "tier"),
    [
        (0.9, 0.8, "s"),  # clearly more accurate: the smaller tier
        (0.988, 0.982, "m"),  # within ACCURACY_TOLERANCE: a tie, the bigger tier
        (0.982, 0.988, "m"),
        (0.9, None, "s"),  # a known accuracy beats an unknown one
        (None, None, "m"),  # none known: the bigger tier
    ],
)
def test_accuracy_from_the_cards_beats_size_when_clearly_better(s_accuracy, m_accuracy, tier):
    specs = [
        ModelSpec("s", "int8", 20e6, accuracy=s_accuracy),
        ModelSpec("m", "int8", 100e6, accuracy=m_accuracy),
    ]
    assert choose_model(phone(), specs).spec.tier == tier
    assert choose_model(DeviceProfile("host"), specs).spec.tier == tier


def test_the_shipped_cards_give_each_phone_the_model_its_vote_was_measured_on():
    # docs/voting.md measures mid and high on l INT8 and low on l FP32; a fine-tune that
    # swaps per-frame AP50 by noise must not move a phone to a model never voted on
    shipped = [ModelSpec.from_card(card) for card in list_cards()]
    picked = {
        name: choose_model(PROFILES[name], shipped).spec for name in ("host", "low", "mid", "high")
    }
    assert {name: (s.tier, s.precision) for name, s in picked.items()} == {
        "host": ("l", "int8"),
        "low": ("l", "fp32"),
        "mid": ("l", "int8"),
        "high": ("l", "int8"),
    }


def test_a_missing_build_falls_back_to_the_other_precision():
    only_int8 = [s for s in SPECS if s.precision == "int8"]
    assert choose_model(phone(int8=False), only_int8).spec.precision == "int8"
    with pytest.raises(ModelChoiceError, match="no models"):
        choose_model(phone(), [])


@pytest.mark.parametrize(
    ("specs", "tier", "picked", "refused"),
    [
        # m ships only in FP32, which this INT8-only phone cannot time: auto skips it
        ([SPECS[0], SPECS[3]], None, "s", None),
        ([SPECS[0], SPECS[3]], "m", None, "tier m ships only fp32"),
        ([SPECS[3], SPECS[5]], None, None, "speed for no shipped build"),
    ],
)
def test_a_build_the_profile_has_no_speed_for_is_never_emulated(specs, tier, picked, refused):
    int8_only = phone(fp32_gop_s=0.0)
    if refused:
        with pytest.raises(ModelChoiceError, match=refused):
            choose_model(int8_only, specs, tier=tier)
    else:
        assert choose_model(int8_only, specs, tier=tier).spec.tier == picked


def test_pass_through_profile_uses_the_host_precision():
    assert (
        choose_model(DeviceProfile("host"), SPECS, host_precision="fp32").spec.precision == "fp32"
    )


@pytest.mark.parametrize(
    ("metrics", "accuracy"),
    [
        ({"ap50": 0.91}, 0.91),
        ({"f1": 0.5, "map": 0.7}, 0.7),
        ({"ap50": True}, None),
        ({"latency_ms": 3}, None),
        ({}, None),
    ],
)
def test_card_accuracy_reads_known_metric_keys(tmp_path, metrics, accuracy):
    path = tmp_path / "fu_s.int8.json"
    card = {
        "tier": "s",
        "precision": "int8",
        "classes": ["fu"],
        "input": {"name": "images", "width": 160, "height": 160},
        "outputs": {"heatmap": "heatmap", "boxes": "boxes", "stride": 4},
        "threshold": 0.3,
        "macs": 1000,
        "params": 10,
        "metrics": metrics,
    }
    path.write_text(json.dumps(card))
    assert card_accuracy(read_card(path)) == accuracy
    assert ModelSpec.from_card(read_card(path)).macs == 1000


def test_bundled_profiles_get_tiers_in_speed_order():
    tiers = [choose_model(PROFILES[n], SPECS).spec.macs for n in ("low", "mid", "high")]
    assert tiers == sorted(tiers)
