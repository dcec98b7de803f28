"""Named voting set-ups (``strict``, ``balanced``, ``fast``, and the ``kofn`` baseline).

``make_voter(preset, **overrides)`` is what sessions and the evaluation call;
overrides are fields of :class:`SequentialConfig` (or of :class:`KOfNVoter` for
``kofn``) and are checked by name, type and range.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

from voting.core import Voter
from voting.evidence import ScoreModel
from voting.kofn import KOfNVoter
from voting.sequential import (
    DEFAULT_SCORE_MODEL,
    OBJECT_SCAN_SCORE_MODEL,
    SequentialConfig,
    SequentialVoter,
    score_model_for_threshold,
)
from voting.tracker import IouTracker

PRESETS: dict[str, dict[str, Any]] = {
    # Fewest wrong decisions: alpha 1e-4, and more contrary evidence to lose it.
    # About 0.7 s on a clear view (docs/voting.md has the measured tables).
    "strict": {"alpha": 1e-4, "beta": 1e-2, "hold": 4.0},
    # The default: alpha 1e-3, about half a second on a clear view.
    "balanced": {},
    # Quickest feedback, for demos: alpha 1e-2, about 0.2 s.
    "fast": {"alpha": 1e-2, "beta": 5e-2, "hold": 2.0},
}
"""Overrides of the :class:`SequentialConfig` defaults per preset."""

BASELINE = "kofn"
"""The fixed-window rule the sequential presets are compared against."""

_KOFN_FIELDS = ("k", "n", "min_score", "min_iou", "max_gap")


class VotingConfigError(ValueError):
    """A preset or a voting option is unknown, or has a bad type or value.

    ``code`` is ``"unknown_preset"`` or ``"bad_option"``, for error messages to clients.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


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
    fields = {f.name: f for f in dataclasses.fields(SequentialConfig)}
    for name, value in overrides.items():
        if name not in fields:
            raise VotingConfigError(
                "bad_option", f"unknown voting option {name!r}; have {sorted(fields)}"
            )
        _check_type(name, value, ScoreModel if name == "score_model" else fields[name].type)
    try:
        return SequentialConfig(**{**PRESETS[preset], **overrides})
    except ValueError as exc:
        raise VotingConfigError("bad_option", str(exc)) from None


def _make_kofn(overrides: dict[str, Any]) -> KOfNVoter:
    for name, value in overrides.items():
        if name not in _KOFN_FIELDS:
            raise VotingConfigError(
                "bad_option", f"unknown k-of-n option {name!r}; have {sorted(_KOFN_FIELDS)}"
            )
        _check_type(name, value, "int" if name in ("k", "n") else "float")
    tracker = IouTracker(
        min_iou=overrides.pop("min_iou", 0.3), max_gap=overrides.pop("max_gap", 1.0)
    )
    try:
        return KOfNVoter(**overrides, tracker=tracker)
    except ValueError as exc:
        raise VotingConfigError("bad_option", str(exc)) from None


def _check_type(name: str, value: object, expected: object) -> None:
    """``expected`` is a dataclass field's annotation (a string, as annotations are postponed)."""
    if expected is ScoreModel:
        ok = isinstance(value, ScoreModel)
    elif expected == "Mapping[str, ScoreModel]":
        ok = isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(m, ScoreModel) for k, m in value.items()
        )
    elif expected == "bool":
        ok = isinstance(value, bool)
    elif expected == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        kind = expected.__name__ if isinstance(expected, type) else expected
        message = f"voting option {name!r} must be {kind}, not {value!r}"
        raise VotingConfigError("bad_option", message)
