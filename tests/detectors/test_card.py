"""Model cards: the vote fields a card may carry, and what a retrained model's cards carry over."""

from pathlib import Path

import pytest

from detectors.card import (
    MODELS_DIR,
    TUNED_FIELDS,
    ModelCardError,
    find_card,
    read_card,
    read_card_fields,
    tuned_fields,
    write_card,
)


def test_tuned_fields_are_the_measured_choices_a_card_has(tmp_path: Path) -> None:
    shipped = tuned_fields(MODELS_DIR / "fu_m.fp32.json")
    assert set(shipped) == set(TUNED_FIELDS)
    assert shipped["zoom"]["candidates"] == 0.2 and shipped["vote"] == {"confirm_margin": 1}
    bare = tmp_path / "fu_s.int8.json"
    write_card(bare, {"tier": "s", "threshold": 0.7})
    assert tuned_fields(bare) == {"threshold": 0.7}  # only what the card has
    assert tuned_fields(tmp_path / "fu_x.int8.json") == {}  # no card: nothing to carry


@pytest.mark.parametrize("vote", [[1], {"confirm_margin": "one"}, {"confirm_margin": None}])
def test_bad_vote_fields_are_refused(tmp_path, vote) -> None:  # type: ignore[no-untyped-def]
    raw = read_card_fields(find_card("m", "fp32").path)
    path = tmp_path / "fu_m.fp32.json"
    write_card(path, raw | {"vote": vote})
    with pytest.raises(ModelCardError, match="vote"):
        read_card(path)


def test_only_the_low_profiles_card_asks_the_vote_for_more() -> None:
    assert find_card("m", "fp32").vote == {"confirm_margin": 1}
    assert find_card("l", "int8").vote == {}  # docs/voting.md: nothing for l to remove
