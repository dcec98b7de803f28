"""Session options that choose and tune the voter (preset, voting overrides)."""

import pytest
from fakes import RedSquareDetector

from stream.pipelines import OptionError, Pipelines, SessionOptions
from voting import KOfNVoter, SequentialVoter
from voting.sequential import OBJECT_SCAN_SCORE_MODEL, score_model_for_threshold


@pytest.mark.parametrize(
    ("raw", "preset", "voting"),
    [
        ({}, "balanced", {}),
        ({"preset": "strict"}, "strict", {}),
        ({"preset": "fast", "voting": {"alpha": 0.02}}, "fast", {"alpha": 0.02}),
        ({"preset": "kofn", "voting": {"k": 2, "n": 3}}, "kofn", {"k": 2, "n": 3}),
        ({"voting": {"confirm": False}}, "balanced", {"confirm": False}),
    ],
)
def test_voting_options_are_accepted(raw, preset, voting):
    options = SessionOptions.from_json(raw, "host")
    assert (options.preset, options.voting) == (preset, voting)


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        ({"preset": 3}, "bad_option", "preset must be a string"),
        ({"preset": "paranoid"}, "unknown_preset", "paranoid"),
        ({"voting": [1]}, "bad_option", "voting must be an object"),
        ({"voting": {"alpah": 0.1}}, "bad_option", "voting.alpah: extra field not permitted"),
        ({"voting": {"alpha": "high"}}, "bad_option", "voting.alpha: Input should be a valid"),
        ({"voting": {"alpha": 0.9}}, "bad_option", "voting.alpha: Input should be less than 0.5"),
        ({"voting": {"confirm": "no"}}, "bad_option", "voting.confirm: Input should be a valid"),
        ({"voting": {"confirm": 0}}, "bad_option", "voting.confirm: Input should be a valid"),
        ({"voting": {"score_model": {}}}, "bad_option", "ScoreModel"),
        ({"preset": "kofn", "voting": {"k": 9, "n": 3}}, "bad_option", "k <= n"),
    ],
)
def test_bad_voting_options_are_refused(raw, code, message):
    with pytest.raises(OptionError, match=message) as caught:
        SessionOptions.from_json(raw, "host")
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        (SessionOptions(), SequentialVoter),
        (SessionOptions(preset="kofn", voting={"k": 2}), KOfNVoter),
    ],
)
def test_sessions_get_their_own_voter(options, kind):
    pipelines = Pipelines({"s": RedSquareDetector()}, workers=1)
    try:

        async def send(message):
            pass

        first, second = pipelines.open(options, send), pipelines.open(options, send)
        assert isinstance(first.voter, kind)
        assert first.voter is not second.voter
    finally:
        pipelines.shutdown()


@pytest.mark.parametrize(("tier", "voting"), [("s", {}), ("l", {}), ("s", {"alpha": 0.02})])
def test_sessions_weigh_fu_against_their_models_threshold_and_targets_on_their_own(tier, voting):
    pipelines = Pipelines.from_models()
    try:

        async def send(message):
            pass

        session = pipelines.open(SessionOptions(tier=tier, voting=voting), send)
        threshold = pipelines.detector_for(tier).threshold
        config = session.voter.config
        assert config.label_score_models == {"fu": score_model_for_threshold(threshold)}
        assert config.score_model == OBJECT_SCAN_SCORE_MODEL  # registered targets
    finally:
        pipelines.shutdown()


@pytest.mark.parametrize(
    ("profile", "tier", "voting", "margin"),
    [("host", None, {}, 0.0), ("low", "m", {}, 1), ("low", "m", {"confirm_margin": 2}, 2)],
)
def test_sessions_start_from_their_models_vote_fields(profile, tier, voting, margin):
    pipelines = Pipelines.from_models()
    try:

        async def send(message):
            pass

        session = pipelines.open(SessionOptions(profile=profile, tier=tier, voting=voting), send)
        assert session.voter.config.confirm_margin == margin  # m FP32's card asks for 1
    finally:
        pipelines.shutdown()
