"""Model cards: what a retrained model's cards carry over from the ones they replace."""

import json
from pathlib import Path

from detectors.card import MODELS_DIR, TUNED_FIELDS, tuned_fields


def test_tuned_fields_are_the_measured_choices_a_card_has(tmp_path: Path) -> None:
    shipped = tuned_fields(MODELS_DIR / "fu_m.fp32.json")
    assert set(shipped) == set(TUNED_FIELDS)
    assert shipped["zoom"]["candidates"] == 0.2 and shipped["vote"] == {"confirm_margin": 1}
    bare = tmp_path / "fu_s.int8.json"
    bare.write_text(json.dumps({"tier": "s", "threshold": 0.7}), encoding="utf-8")
    assert tuned_fields(bare) == {"threshold": 0.7}  # only what the card has
    assert tuned_fields(tmp_path / "fu_x.int8.json") == {}  # no card: nothing to carry
