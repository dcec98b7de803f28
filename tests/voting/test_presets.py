import pytest
from pydantic import TypeAdapter

from voting import (
    KOfNVoter,
    SequentialVoter,
    VotingConfigError,
    make_config,
    make_voter,
    preset_names,
)
from voting.evidence import ScoreModel
from voting.presets import PRESETS, PRESETS_FILE, KOfNOptions, read_presets
from voting.sequential import (
    DEFAULT_SCORE_MODEL,
    OBJECT_SCAN_SCORE_MODEL,
    SequentialConfig,
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
    with pytest.raises(VotingConfigError, match=r"voting\.wobble: extra field not permitted"):
        make_voter("balanced", 0.7, (), {"wobble": 1})
    assert make_voter("kofn", 0.7, (), {"confirm_margin": 1}, k=2, n=3).k == 2


def test_kofn_ignores_the_detector_threshold():
    assert make_voter("kofn", 0.74, k=2, n=3).k == 2


def test_detector_threshold_is_no_client_option():
    with pytest.raises(VotingConfigError, match=r"voting\.detector_threshold: extra field not"):
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
        ("balanced", {"alpah": 0.1}, "bad_option", "voting.alpah: extra field not permitted"),
        ("balanced", {"alpha": "0.1"}, "bad_option", "voting.alpha: Input should be a valid num"),
        ("balanced", {"alpha": True}, "bad_option", "voting.alpha: Input should be a valid num"),
        ("balanced", {"max_tracks": 2.5}, "bad_option", "voting.max_tracks: Input should be a"),
        ("balanced", {"score_model": {}}, "bad_option", "voting.score_model: Input should be an"),
        ("balanced", {"label_score_models": [OWN]}, "bad_option", "voting.label_score_models:"),
        ("balanced", {"label_score_models": {"fu": 1.0}}, "bad_option", "label_score_models.fu:"),
        ("balanced", {"label_score_models": {1: OWN}}, "bad_option", "label_score_models.1.[key]"),
        ("balanced", {"alpha": 0.9}, "bad_option", "voting.alpha: Input should be less than 0.5"),
        ("balanced", {"edge_discount": -0.1}, "bad_option", "voting.edge_discount: Input should"),
        ("balanced", {"lose_below": 9.0}, "bad_option", "voting: lose_below must be below the"),
        ("kofn", {"alpha": 0.1}, "bad_option", "voting.alpha: extra field not permitted"),
        ("kofn", {"k": 2.0}, "bad_option", "voting.k: Input should be a valid integer (got 2.0)"),
        ("kofn", {"k": 0}, "bad_option", "voting.k: Input should be greater than or equal to 1"),
        ("kofn", {"k": 6, "n": 5}, "bad_option", "voting: need 1 <= k <= n"),
    ],
)
def test_errors_are_clear(preset, overrides, code, message):
    with pytest.raises(VotingConfigError) as caught:
        make_voter(preset, **overrides)
    assert caught.value.code == code
    assert message in str(caught.value)


def test_the_shipped_presets_are_read_from_their_file():
    assert read_presets(PRESETS_FILE) == PRESETS
    assert PRESETS["strict"] == {"alpha": 1e-4, "beta": 1e-2, "hold": 4.0}
    assert PRESETS["balanced"] == {}  # the defaults


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a misspelt key, at the top and nested (a preset is a table of fields)
        ("[quick]\nalpah = 0.01\n", "quick.alpah: extra field not permitted"),
        ("[quick]\nscore_model = {edges = [0.5], llrs = [-1, 1], misss = -1}\n", "misss"),
        # a wrong type
        ('[quick]\nalpha = "0.01"\n', "quick.alpha: Input should be a valid number (got '0.01')"),
        ("[quick]\nconfirm = 1\n", "quick.confirm: Input should be a valid boolean (got 1)"),
        ("[quick]\nmax_tracks = 2.5\n", "quick.max_tracks: Input should be a valid integer"),
        # out of bounds, alone and together
        ("[quick]\nalpha = 0.5\n", "quick.alpha: Input should be less than 0.5 (got 0.5)"),
        ("[quick]\nfloor = 1.0\n", "quick.floor: Input should be less than or equal to 0"),
        ("[quick]\nlose_below = 9.0\n", "quick: lose_below must be below the recognition"),
        # not a file of presets
        ("quick = 3\n", "expected one table"),
        ("[quick\n", "cannot read"),
    ],
)
def test_a_bad_presets_file_is_refused_naming_file_preset_and_field(tmp_path, text, message):
    path = tmp_path / "presets.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as refused:
        read_presets(path)
    assert str(path) in str(refused.value)
    assert message in str(refused.value)


@pytest.mark.parametrize("schema", [SequentialConfig, KOfNOptions])
def test_every_voting_field_says_what_it_is(schema):
    described = TypeAdapter(schema).json_schema()["properties"].values()
    assert described and all(field.get("description") for field in described)
