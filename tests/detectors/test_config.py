"""The one mechanism every configuration file is read and checked with, and its reference page."""

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from detectors.card import DETECTOR_CARD, GLYPH_CARD
from detectors.config import read_data, read_tables, validate
from hw_sim.profiles import PROFILE
from voting.presets import SEQUENTIAL

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def field_paths(schema: dict[str, Any], defs: dict[str, Any], prefix: str = "") -> list[str]:
    """Every field of a JSON Schema object, nested ones as ``outer.inner``."""
    paths = []
    for name, prop in schema.get("properties", {}).items():
        paths.append(prefix + name)
        refs = [prop, *prop.get("anyOf", [])]
        for ref in (r["$ref"].rsplit("/", 1)[1] for r in refs if "$ref" in r):
            if "properties" in defs[ref] and name != "score_model":  # built in, not in files
                paths += field_paths(defs[ref], defs, f"{prefix}{name}.")
    return paths


@pytest.mark.parametrize("schema", [DETECTOR_CARD, GLYPH_CARD, PROFILE, SEQUENTIAL])
def test_the_reference_lists_every_field(schema: TypeAdapter[Any]) -> None:
    listed = set(re.findall(r"^\| `([\w.]+)` \|", REFERENCE.read_text(encoding="utf-8"), re.M))
    json_schema = schema.json_schema()
    paths = field_paths(json_schema, json_schema.get("$defs", {}))
    assert paths and set(paths) <= listed


def test_problems_are_one_line_each_naming_the_file_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = {"kind": "glyph_check", "min_score": 2, "sid": 64}
    with pytest.raises(ValueError) as refused:
        validate(GLYPH_CARD, data, tmp_path / "cards" / "g.json", ("outer",))
    assert str(refused.value).splitlines() == [
        "cards/g.json: outer.min_score: Input should be less than or equal to 1 (got 2)",
        "cards/g.json: outer.sid: extra field not permitted",
    ]


@pytest.mark.parametrize(
    ("name", "text", "data"),
    [
        ("a.json", '{"x": {"y": 1}}', {"x": {"y": 1}}),
        ("a.toml", "[x]\ny = 1\n", {"x": {"y": 1}}),
        ("a.JSON", '{"x": {}}', {"x": {}}),
    ],
)
def test_files_are_json_or_toml_by_their_suffix(
    tmp_path: Path, name: str, text: str, data: object
) -> None:
    (tmp_path / name).write_text(text)
    assert read_data(tmp_path / name) == read_tables(tmp_path / name) == data


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.json", "{x", "cannot read"),
        ("a.toml", "[x", "cannot read"),
        ("missing.toml", None, "cannot read"),
        ("a.json", "[1]", "expected one table"),
        ("a.json", '{"x": 1}', "expected one table"),
    ],
)
def test_unreadable_files_and_files_of_no_tables_are_refused(
    tmp_path: Path, name: str, text: str | None, message: str
) -> None:
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message) as refused:
        read_tables(tmp_path / name)
    assert name in str(refused.value)
