"""Named voting set-ups (``strict``, ``balanced``, ``fast``, and the ``kofn`` baseline).

``make_voter(preset, **overrides)`` is what sessions and the evaluation call;
overrides are fields of :class:`SequentialConfig` (or of :class:`KOfNVoter` for
``kofn``) and are checked by name, type and range.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from detectors.config import STRICT, error_message, read_tables, validate
from voting.core import Voter
from voting.kofn import KOfNVoter
from voting.sequential import (
    DEFAULT_SCORE_MODEL,
    OBJECT_SCAN_SCORE_MODEL,
    SequentialConfig,
    SequentialVoter,
    score_model_for_threshold,
)
from voting.tracker import IouTracker

PRESETS_FILE = Path(__file__).resolve().parent / "presets.toml"
BASELINE = "kofn"
"""The fixed-window rule the sequential presets are compared against."""
OPTIONS = ("voting",)
"""Where a stream's voting options sit in a session's options, for error messages."""


@with_config(STRICT)
class KOfNOptions(TypedDict, total=False):
    """The options of the k-of-n baseline (:class:`KOfNVoter` and its tracker)."""

    k: Annotated[int, Field(ge=1, description="hits among the last n frames that recognize")]
    n: Annotated[int, Field(ge=1, description="frames the hits are counted over")]
    min_score: Annotated[float, Field(ge=0, le=1, description="detections scoring less miss")]
    min_iou: Annotated[float, Field(ge=0, le=1, description="least overlap continuing a track")]
    max_gap: Annotated[float, Field(gt=0, description="seconds a track may go unseen")]


SEQUENTIAL = TypeAdapter(SequentialConfig)
KOFN = TypeAdapter(KOfNOptions)


class VotingConfigError(ValueError):
    """A preset or a voting option is unknown, or has a bad type or value.

    ``code`` is ``"unknown_preset"`` or ``"bad_option"``, for error messages to clients.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def read_presets(path: Path) -> dict[str, dict[str, Any]]:
    """The presets in the TOML or JSON file at ``path``: one table of
    :class:`SequentialConfig` fields per preset name.

    Raises:
        ValueError: the file is unreadable, or a field is unknown, of the wrong type or out
            of its range; the message names the file, the preset and the field.
    """
    tables = read_tables(path)
    for name, table in tables.items():
        validate(SEQUENTIAL, table, path, (name,))
    return tables


PRESETS: dict[str, dict[str, Any]] = read_presets(PRESETS_FILE)
"""Overrides of the :class:`SequentialConfig` defaults per preset (``voting/presets.toml``)."""


def preset_names() -> list[str]:
    return [*PRESETS, BASELINE]


def make_voter(
    preset: str = "balanced",
    detector_threshold: float | None = None,
    detector_labels: Collection[str] = (),
    model_fields: Mapping[str, Any] | None = None,
    /,
    **overrides: Any,
) -> Voter:
    """A fresh voter for one stream: ``preset``'s settings with ``overrides`` applied.

    ``detector_threshold`` is the model card's threshold of the detector that
    feeds the voter (positional, so no client option can set it): the
    sequential presets then weigh scores relative to it
    (:func:`score_model_for_threshold`) unless ``score_model`` is overridden.
    ``None`` (unknown detector): the built-in curve as it is. k-of-n counts
    raw scores and ignores it.

    ``detector_labels`` are that detector's classes, for a stream that also
    carries object-scan targets: those labels get the curve above, and every
    other label ``OBJECT_SCAN_SCORE_MODEL``. Empty: every label gets the
    detector's curve.

    ``model_fields`` are that detector's card's ``vote`` fields
    (:attr:`detectors.card.ModelCard.vote`): the sequential presets start from
    them, and ``overrides`` (a session's options) override them. k-of-n ignores them.

    Raises:
        VotingConfigError: unknown preset, unknown field, wrong type or bad value.
    """
    if preset == BASELINE:
        return _make_kofn(overrides)
    if preset not in PRESETS:
        raise VotingConfigError(
            "unknown_preset", f"unknown voting preset {preset!r}; have {preset_names()}"
        )
    overrides = {**(model_fields or {}), **overrides}
    if "score_model" not in overrides:
        own = DEFAULT_SCORE_MODEL
        if detector_threshold is not None:
            own = score_model_for_threshold(detector_threshold)
        if detector_labels:
            overrides["label_score_models"] = dict.fromkeys(detector_labels, own)
            own = OBJECT_SCAN_SCORE_MODEL
        overrides["score_model"] = own
    return SequentialVoter(make_config(preset, **overrides))


def make_config(preset: str = "balanced", **overrides: Any) -> SequentialConfig:
    """The :class:`SequentialConfig` of a sequential ``preset`` with ``overrides`` applied.

    Raises:
        VotingConfigError: as :func:`make_voter`.
    """
    if preset not in PRESETS:
        raise VotingConfigError(
            "unknown_preset", f"unknown sequential preset {preset!r}; have {list(PRESETS)}"
        )
    try:
        return SequentialConfig(**{**PRESETS[preset], **overrides})
    except ValidationError as exc:
        raise VotingConfigError("bad_option", error_message(None, exc, OPTIONS)) from None


def _make_kofn(overrides: dict[str, Any]) -> KOfNVoter:
    try:
        options: dict[str, Any] = dict(KOFN.validate_python(overrides))
    except ValidationError as exc:
        raise VotingConfigError("bad_option", error_message(None, exc, OPTIONS)) from None
    tracker = IouTracker(min_iou=options.pop("min_iou", 0.3), max_gap=options.pop("max_gap", 1.0))
    try:
        return KOfNVoter(**options, tracker=tracker)
    except ValueError as exc:
        raise VotingConfigError("bad_option", f"{'.'.join(OPTIONS)}: {exc}") from None
