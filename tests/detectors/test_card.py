"""Model cards: the vote fields a card may carry, and what a retrained model's cards carry over."""

import json
from pathlib import Path

import pytest

from detectors.card import (
    MODELS_DIR,
    TUNED_FIELDS,
    ModelCardError,
    find_card,
    read_card,
    tuned_fields,
)


def test_tuned_fields_are_the_measured_choices_a_card_has(tmp_path: Path) -> None:
    shipped = tuned_fields(MODELS_DIR / "fu_m.fp32.json")
    assert set(shipped) == set(TUNED_FIELDS)
    assert shipped["zoom"]["candidates"] == 0.2 and shipped["vote"] == {"confirm_margin": 1}
    bare = tmp_path / "fu_s.int8.json"
    bare.write_text(json.dumps({"tier": "s", "threshold": 0.7}), encoding="utf-8")
    assert tuned_fields(bare) == {"threshold": 0.7}  # only what the card has
    assert tuned_fields(tmp_path / "fu_x.int8.json") == {}  # no card: nothing to carry


@pytest.mark.parametrize("vote", [[1], {"confirm_margin": "one"}, {"confirm_margin": None}])
def test_bad_vote_fields_are_refused(tmp_path, vote) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(find_card("m", "fp32").path.read_text(encoding="utf-8"))
    path = tmp_path / "fu_m.fp32.json"
    path.write_text(json.dumps(raw | {"vote": vote}), encoding="utf-8")
    with pytest.raises(ModelCardError, match="vote"):
        read_card(path)


def test_only_the_low_profiles_card_asks_the_vote_for_more() -> None:
    assert find_card("m", "fp32").vote == {"confirm_margin": 1}
    assert find_card("l", "int8").vote == {}  # docs/voting.md: nothing for l to remove
