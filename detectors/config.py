"""Configuration as data with one strict schema: how every configuration file is read and checked.

Model cards (:mod:`detectors.card`), device profiles (:mod:`hw_sim.profiles`) and voting
presets (:mod:`voting.presets`) are declared as pydantic models or dataclasses with
:data:`STRICT`: every field has a type, its bounds and a one-line description, and a key
the schema does not declare is an error, not ignored. :func:`read_config` reads a JSON or
TOML file against such a schema; :func:`error_message` says what is wrong, one line per
problem, naming the file and the field::

    detectors/models/fu_l.int8.json: zoom.scale: extra field not permitted
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ConfigDict, TypeAdapter, ValidationError

T = TypeVar("T")

STRICT = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
"""Unknown keys are errors, and no value is coerced (``"0.5"`` is no number, ``1`` no ``true``);
a whole number is accepted where a float is meant. Files are validated as JSON data, so a
list fills a tuple field and an object a nested dataclass."""

_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")


def error_message(
    source: str | Path | None, error: ValidationError, within: Sequence[str] = ()
) -> str:
    """``error`` as one line per problem: ``SOURCE: FIELD.PATH: what is wrong``.

    ``within`` is the path of the validated data inside ``source`` (a table's name, say);
    ``source`` ``None``: the lines start at the field.
    """
    prefix = "" if source is None else f"{shown(source)}: "
    lines = []
    for problem in error.errors(include_url=False):
        field = ".".join(str(part) for part in (*within, *problem["loc"])) or "(top level)"
        if problem["type"] in _UNKNOWN:
            what = "extra field not permitted"
        elif problem["type"] == "missing":
            what = "field required"
        elif problem["type"] == "value_error":  # a check of the schema's own
            what = str(problem["ctx"]["error"])
        else:
            what = problem["msg"]
        if problem["loc"] and problem["type"] not in (*_UNKNOWN, "missing"):
            what += f" (got {problem['input']!r:.60})"
        lines.append(f"{prefix}{field}: {what}")
    return "\n".join(lines)


def shown(path: str | Path) -> str:
    """``path`` relative to the working directory where it is below it, for messages."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_data(path: Path) -> object:
    """The JSON (``.json``) or TOML (any other suffix) document at ``path``.

    Raises:
        ValueError: naming ``path``: it is missing, unreadable or not valid JSON or TOML.
    """
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
        raise ValueError(f"cannot read {shown(path)}: {exc}") from exc


def read_tables(path: Path) -> dict[str, dict[str, object]]:
    """The document at ``path`` (:func:`read_data`) as one table (object) per name.

    Raises:
        ValueError: as :func:`read_data`, or the document is not one table per name.
    """
    data = read_data(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"{shown(path)}: expected one table (object) per name")
    return data


def validate(
    schema: TypeAdapter[T], data: object, source: str | Path, within: Sequence[str] = ()
) -> T:
    """``data`` (as a JSON or TOML file holds it) checked against ``schema``.

    Raises:
        ValueError: :func:`error_message` of every problem.
    """
    try:
        return schema.validate_json(json.dumps(data, default=str))
    except ValidationError as exc:
        raise ValueError(error_message(source, exc, within)) from None


def read_config(schema: TypeAdapter[T], path: Path) -> T:
    """The file at ``path`` (:func:`read_data`) checked against ``schema`` (:func:`validate`).

    Raises:
        ValueError: naming the file, and the field where a field is wrong.
    """
    return validate(schema, read_data(path), path)
