import pytest

from voting import (
    KOfNVoter,
    SequentialVoter,
    VotingConfigError,
    make_config,
    make_voter,
    preset_names,
)
from voting.evidence import ScoreModel
from voting.sequential import (
    DEFAULT_SCORE_MODEL,
    OBJECT_SCAN_SCORE_MODEL,
    score_model_for_threshold,
)

OWN = ScoreModel((0.5,), (-1.0, 1.0), -1.0)


@pytest.mark.parametrize("preset", ["strict", "balanced", "fast"])
def test_sequential_presets(preset):
    assert isinstance(make_voter(preset), SequentialVoter)


def test_presets_order_by_caution():
    levels = [make_voter(p).config.thresholds.upper for p in ("fast", "balanced", "strict")]
    assert levels == sorted(levels)


@pytest.mark.parametrize(
    ("threshold", "overrides", "expected"),
    [
        (None, {}, DEFAULT_SCORE_MODEL),
        (0.6, {}, DEFAULT_SCORE_MODEL),
        (0.74, {}, score_model_for_threshold(0.74)),
        (0.74, {"score_model": OWN}, OWN),
    ],
)
def test_detector_threshold_moves_the_score_curve(threshold, overrides, expected):
    assert make_voter("balanced", threshold, **overrides).config.score_model == expected


@pytest.mark.parametrize(
    ("threshold", "labels", "overrides", "default", "per_label"),
    [
        (None, (), {}, DEFAULT_SCORE_MODEL, {}),
        (0.74, (), {}, score_model_for_threshold(0.74), {}),
        (None, ("fu",), {}, OBJECT_SCAN_SCORE_MODEL, {"fu": DEFAULT_SCORE_MODEL}),
        (0.74, ("fu",), {}, OBJECT_SCAN_SCORE_MODEL, {"fu": score_model_for_threshold(0.74)}),
        (0.74, ("fu",), {"score_model": OWN}, OWN, {}),
    ],
)
def test_detector_labels_keep_their_curve_and_others_get_object_scans(
    threshold, labels, overrides, default, per_label
):
    config = make_voter("balanced", threshold, labels, **overrides).config
    assert (config.score_model, config.label_score_models) == (default, per_label)


@pytest.mark.parametrize(
    ("model_fields", "overrides", "margin"),
    [
        (None, {}, 0.0),  # no card: the preset's
        ({"confirm_margin": 1}, {}, 1),  # the card's field is where the stream starts
        ({"confirm_margin": 1}, {"confirm_margin": 0}, 0),  # and the session's option wins
    ],
)
def test_a_models_vote_fields_start_the_stream_and_options_override_them(
    model_fields, overrides, margin
):
    voter = make_voter("balanced", 0.7, (), model_fields, **overrides)
    assert voter.config.confirm_margin == margin


def test_a_models_vote_fields_are_checked_and_kofn_ignores_them():
    with pytest.raises(VotingConfigError, match="unknown voting option 'wobble'"):
        make_voter("balanced", 0.7, (), {"wobble": 1})
    assert make_voter("kofn", 0.7, (), {"confirm_margin": 1}, k=2, n=3).k == 2


def test_kofn_ignores_the_detector_threshold():
    assert make_voter("kofn", 0.74, k=2, n=3).k == 2


def test_detector_threshold_is_no_client_option():
    with pytest.raises(VotingConfigError, match="unknown voting option 'detector_threshold'"):
        make_voter("balanced", detector_threshold=0.74)


def test_overrides_apply():
    model = ScoreModel((0.5,), (-1.0, 1.0), -1.0)
    voter = make_voter("strict", alpha=0.01, max_tracks=4, score_model=model)
    assert voter.config.alpha == 0.01
    assert voter.tracker.max_tracks == 4
    assert voter.config.score_model is model


def test_make_config_is_for_sequential_presets_only():
    with pytest.raises(VotingConfigError, match="unknown sequential preset 'kofn'") as caught:
        make_config("kofn")
    assert caught.value.code == "unknown_preset"


def test_kofn_baseline():
    voter = make_voter("kofn", k=2, n=4, min_iou=0.5, max_gap=0.5)
    assert isinstance(voter, KOfNVoter)
    assert (voter.k, voter.n, voter.tracker.min_iou, voter.tracker.max_gap) == (2, 4, 0.5, 0.5)
    assert "kofn" in preset_names()


@pytest.mark.parametrize(
    ("preset", "overrides", "code", "message"),
    [
        ("paranoid", {}, "unknown_preset", "unknown voting preset 'paranoid'"),
        ("balanced", {"alpah": 0.1}, "bad_option", "unknown voting option 'alpah'"),
        ("balanced", {"alpha": "0.1"}, "bad_option", "must be float"),
        ("balanced", {"alpha": True}, "bad_option", "must be float"),
        ("balanced", {"max_tracks": 2.5}, "bad_option", "must be int"),
        ("balanced", {"score_model": {}}, "bad_option", "must be ScoreModel"),
        ("balanced", {"label_score_models": [OWN]}, "bad_option", "must be Mapping"),
        ("balanced", {"label_score_models": {"fu": 1.0}}, "bad_option", "must be Mapping"),
        ("balanced", {"label_score_models": {1: OWN}}, "bad_option", "must be Mapping"),
        ("balanced", {"alpha": 0.9}, "bad_option", "alpha must be in"),
        ("balanced", {"edge_discount": -0.1}, "bad_option", "edge_discount must be in"),
        ("kofn", {"alpha": 0.1}, "bad_option", "unknown k-of-n option 'alpha'"),
        ("kofn", {"k": 2.0}, "bad_option", "must be int"),
        ("kofn", {"k": 6, "n": 5}, "bad_option", "need 1 <= k <= n"),
    ],
)
def test_errors_are_clear(preset, overrides, code, message):
    with pytest.raises(VotingConfigError, match=message) as caught:
        make_voter(preset, **overrides)
    assert caught.value.code == code
