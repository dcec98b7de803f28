"""Model cards: the strict schema of detector and glyph check cards, and what a retrained model's
cards carry over."""

import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from detectors.card import (
    GLYPH_KIND,
    MODELS_DIR,
    TUNED_FIELDS,
    DetectorCardFile,
    GlyphCardFile,
    GlyphUse,
    InputSpec,
    ModelCardError,
    Outputs,
    ZoomSpec,
    find_card,
    list_cards,
    read_card,
    read_card_fields,
    tuned_fields,
    update_card,
    write_card,
)

GLYPH_CARD = "fu_glyph.int8.json"


def test_tuned_fields_are_the_measured_choices_a_card_has(tmp_path: Path) -> None:
    shipped = tuned_fields(MODELS_DIR / "fu_m.fp32.json")
    assert set(shipped) == {*TUNED_FIELDS, "provenance"}
    assert set(shipped["provenance"]) == {"threshold_rule"}  # why, not how it was trained
    assert shipped["zoom"]["candidates"] == 0.2
    assert shipped["vote"] == {"confirm_margin": 1, "edge_discount": 0.08}
    bare = tmp_path / "fu_s.int8.json"
    write_card(bare, {"tier": "s", "threshold": 0.7})
    assert tuned_fields(bare) == {"threshold": 0.7}  # only what the card has
    assert tuned_fields(tmp_path / "fu_x.int8.json") == {}  # no card: nothing to carry


def test_updates_replace_fields_but_add_to_the_provenance(tmp_path: Path) -> None:
    path = tmp_path / "fu_s.int8.json"
    write_card(path, {"threshold": 0.7, "metrics": {"ap50": 0.5}, "provenance": {"a": "1"}})
    update_card(path, metrics={"recall": 0.9}, provenance={"b": "2"})
    assert read_card_fields(path) == {
        "threshold": 0.7,
        "metrics": {"recall": 0.9},
        "provenance": {"a": "1", "b": "2"},
    }


def test_the_shipped_cards_load_and_share_one_glyph_check() -> None:
    cards = list_cards()
    assert sorted((c.tier, c.precision) for c in cards) == [
        (t, p) for t in ("l", "m", "s") for p in ("fp32", "int8")
    ]  # the glyph check's card is no detector's
    glyph_cards = {read_card_fields(c.path)["glyph"]["card"] for c in cards if c.glyph}
    assert glyph_cards == {GLYPH_CARD}
    assert read_card_fields(MODELS_DIR / GLYPH_CARD)["kind"] == GLYPH_KIND


def test_every_card_reads_a_box_at_the_edge_lower_and_only_m_fp32_asks_for_more() -> None:
    assert {card.vote.get("edge_discount") for card in list_cards()} == {0.08}
    assert find_card("m", "fp32").vote == {"confirm_margin": 1, "edge_discount": 0.08}
    assert find_card("l", "int8").vote == {"edge_discount": 0.08}


def test_a_rescue_is_the_detector_cards_own() -> None:
    l_glyph, m_glyph = find_card("l", "int8").glyph, find_card("m", "int8").glyph
    assert l_glyph is not None and m_glyph is not None
    assert (l_glyph.rescue_from, l_glyph.rescue_min) == (0.3, 0.9)
    assert m_glyph.rescue_from is None
    assert (l_glyph.min_score, l_glyph.contexts) == (m_glyph.min_score, m_glyph.contexts)


def _set(fields: dict[str, Any], path: str, value: Any) -> None:
    """Set the field at dotted ``path`` in ``fields``; ``...`` removes it."""
    *parents, name = path.split(".")
    for parent in parents:
        fields = fields.setdefault(parent, {})
    if value is ...:
        del fields[name]
    else:
        fields[name] = value


@pytest.fixture
def card_dir(tmp_path: Path) -> Path:
    """A copy of the shipped ``l`` INT8 card and the glyph check's card."""
    for name in ("fu_l.int8.json", GLYPH_CARD):
        shutil.copy(MODELS_DIR / name, tmp_path)
    return tmp_path


SURE = {"card": GLYPH_CARD, "rescue_from": 0.3, "rescue_sure_min": 0.99, "rescue_sure_score": 0.85}
"""A glyph use whose sure rescues are reported at 0.85 (valid as it is)."""


@pytest.mark.parametrize(
    ("card", "field", "value", "message"),
    [
        # a misspelt key, at the top and nested
        ("fu_l.int8.json", "thresold", 0.5, "thresold: extra field not permitted"),
        ("fu_l.int8.json", "zoom.scale", 2, "zoom.scale: extra field not permitted"),
        ("fu_l.int8.json", "input.colour", "RGB", "input.colour: extra field not permitted"),
        ("fu_l.int8.json", "glyph.min_score", 0.5, "glyph.min_score: extra field not permitted"),
        (GLYPH_CARD, "min_scor", 0.5, "min_scor: extra field not permitted"),
        (GLYPH_CARD, "metrics.crops", {"x": 1}, "metrics.crops: want a number or a text"),
        # settings no card uses are gone
        ("fu_l.int8.json", "zoom.size", [160, 120], "zoom.size: extra field not permitted"),
        (GLYPH_CARD, "turned", True, "turned: extra field not permitted"),
        # a wrong type
        ("fu_l.int8.json", "threshold", "0.69", "threshold: Input should be a valid number"),
        ("fu_l.int8.json", "zoom.max_candidates", 6.5, "zoom.max_candidates: Input should be"),
        ("fu_l.int8.json", "input.width", True, "input.width: Input should be a valid integer"),
        ("fu_l.int8.json", "classes", "fu", "classes: Input should be a valid"),
        ("fu_l.int8.json", "vote", [1], "vote: Input should be an object"),
        ("fu_l.int8.json", "vote.confirm_margin", "one", "vote.confirm_margin: want a number or"),
        ("fu_l.int8.json", "vote.confirm_margin", None, "vote.confirm_margin: want a number or"),
        ("fu_l.int8.json", "zoom.extra_fills", 0.6, "zoom.extra_fills: Input should be"),
        (GLYPH_CARD, "contexts", [1.2, "1.4"], "contexts.1: Input should be a valid number"),
        # out of bounds
        ("fu_l.int8.json", "threshold", 1.0, "threshold: Input should be less than 1"),
        ("fu_l.int8.json", "zoom.fill", 0, "zoom.fill: Input should be greater than 0"),
        ("fu_l.int8.json", "zoom.extra_fills", [], "zoom.extra_fills: Tuple should have at least"),
        ("fu_l.int8.json", "zoom.min_zoom", 0.5, "zoom.min_zoom: Input should be greater than"),
        ("fu_l.int8.json", "zoom.turned_min", 1.5, "zoom.turned_min: Input should be less than"),
        ("fu_l.int8.json", "input.color", "RGBA", "input.color: Input should be 'RGB' or 'BGR'"),
        ("fu_l.int8.json", "glyph.rescue_from", 1.0, "glyph.rescue_from: Input should be less"),
        ("fu_l.int8.json", "glyph.rescue_min", 0, "glyph.rescue_min: Input should be greater"),
        (GLYPH_CARD, "min_score", 0, "min_score: Input should be greater than 0"),
        (GLYPH_CARD, "side", 8, "side: Input should be greater than or equal to 16"),
        (GLYPH_CARD, "contexts", [0.9], "contexts.0: Input should be greater than or equal to 1"),
        (GLYPH_CARD, "contexts", [], "contexts: Tuple should have at least 1 item"),
        # missing, and what needs another field
        ("fu_l.int8.json", "tier", ..., "tier: field required"),
        (GLYPH_CARD, "min_score", ..., "min_score: field required"),
        ("fu_l.int8.json", "zoom", None, "glyph.rescue_from: needs a zoom spec"),
        ("fu_l.int8.json", "glyph.card", "nope.json", "glyph.card: no file nope.json beside"),
        ("fu_l.int8.json", "glyph", SURE | {"rescue_sure_score": 1.0}, "Input should be less"),
        ("fu_l.int8.json", "glyph", SURE | {"rescue_sure_score": None}, "give both or neither"),
        ("fu_l.int8.json", "glyph", SURE | {"rescue_from": None}, "needs rescue_from"),
        ("fu_l.int8.json", "glyph", SURE | {"rescue_sure_min": 0.8}, "under rescue_min (0.9)"),
        ("fu_l.int8.json", "glyph", SURE | {"rescue_sure_score": 0.6}, "under the threshold"),
    ],
)
def test_a_bad_field_is_refused_naming_the_file_and_the_field(
    card_dir: Path, card: str, field: str, value: Any, message: str
) -> None:
    fields = read_card_fields(card_dir / card)
    _set(fields, field, value)
    write_card(card_dir / card, fields)
    with pytest.raises(ModelCardError) as refused:
        read_card(card_dir / "fu_l.int8.json")
    assert str(refused.value).startswith(f"{card_dir / card}: ")
    assert message in str(refused.value)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_a_card_that_is_no_json_object_is_refused(card_dir: Path, text: str) -> None:
    (card_dir / "fu_l.int8.json").write_text(text)
    with pytest.raises(ModelCardError, match=r"fu_l\.int8\.json"):
        read_card(card_dir / "fu_l.int8.json")
    with pytest.raises(ModelCardError, match=r"fu_l\.int8\.json"):
        list_cards(card_dir)


def test_the_provenance_is_free_but_never_a_setting(card_dir: Path) -> None:
    before = read_card(card_dir / "fu_l.int8.json")
    update_card(card_dir / "fu_l.int8.json", provenance={"threshold": 0.1, "notes": {"a": [1]}})
    assert read_card(card_dir / "fu_l.int8.json") == before


@pytest.mark.parametrize(
    "schema", [DetectorCardFile, GlyphCardFile, GlyphUse, Outputs, InputSpec, ZoomSpec]
)
def test_every_field_of_a_card_says_what_it_is(schema: type[BaseModel]) -> None:
    properties = schema.__pydantic_fields__  # type: ignore[attr-defined]
    assert properties and all(f.description for f in properties.values())
