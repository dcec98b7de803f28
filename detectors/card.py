"""Model cards: the JSON file beside each shipped ONNX model that says how to feed and read it."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS_DIR = Path(__file__).resolve().parent / "models"
MIN_ZOOM_SIDE = 32
"""A close-up smaller than this leaves the network's coarsest maps a cell or two."""
TUNED_FIELDS = ("threshold", "threshold_rule", "zoom", "vote", "glyph")
"""A card's fields chosen by measurement after its model was exported (docs/detector.md)."""


GLYPH_SIDE = 64
CONTEXT = 1.25
"""The glyph check's crop side over the box's longer side (its default): a margin that shows
where the ink ends."""


class ModelCardError(ValueError):
    """A model card is missing, unreadable or lacks a required field."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    name: str
    width: int
    height: int
    scale: float = 1.0 / 255.0
    pad_value: int = 114
    color: str = "RGB"


@dataclass(frozen=True, slots=True)
class ZoomSpec:
    """The second look of a two-pass detector: each candidate is scored again on a close-up.

    The first pass reports candidates scoring at least ``candidates``; each is
    cropped out of the frame so that its box spans ``fill`` of the crop's side,
    and the network's score on that crop replaces the first one. ``size``
    (width, height) is the input the close-up is run at; ``None``: the card's.
    """

    fill: float = 0.4
    candidates: float = 0.3
    max_candidates: int = 6
    size: tuple[int, int] | None = None
    min_zoom: float | None = None
    """No close-up for a candidate whose crop would magnify the frame less than this;
    ``None``: only when the crop would hold the whole frame (a zoom of 1)."""
    turned_min: float | None = None
    """The detector offers a turned check (:meth:`OnnxDetector.confirmer`): a detection is
    confirmed if its close-up turned upside down also scores at least this. The model is
    taught 福 both ways up (倒福), so a real one reads as 福 turned too; a look-alike it
    mistakes for 福 one way up seldom does the other way. A voter asks for the check only
    when a track is about to be recognized. ``None``: no check to offer."""
    extra_fills: tuple[float, ...] | None = None
    """More close-ups of each candidate, its box spanning each of these shares of the crop;
    the candidate keeps its best score. The network's verdict on a glyph changes with the
    scale it sees it at, and a large candidate that ``fill`` and ``min_zoom`` leave without
    a close-up gets one at a larger share. ``None``: only ``fill``."""
    out_fill: float | None = None
    """A candidate too large for any close-up is seen again zoomed out: the frame shrunk
    into a border of the input's pad value, the box spanning this share of the view, if
    that shrinks the frame at least ``min_zoom`` times. The network learned 福 up to 0.75
    of the short side and scores one that fills the screen low. ``None``: the first look
    stands for such candidates."""

    @property
    def fills(self) -> tuple[float, ...]:
        """Every close-up's share of the crop: ``fill``, then ``extra_fills``."""
        return (self.fill, *(self.extra_fills or ()))


@dataclass(frozen=True, slots=True)
class GlyphSpec:
    """A card's ``glyph`` field: the glyph check (:mod:`detectors.glyph_check`) that a
    detection must also pass to be confirmed.

    ``model`` is its file (beside the card). A detection is looked at in
    several views, one crop per share in ``contexts`` (the crop's side over the
    box's longer side), each also turned upside down if ``turned``; it passes
    if every view scores ``min_score`` or more. A look-alike the recognizer
    takes for 福 in one view seldom passes them all, while a 福 (taught both
    ways up) does. ``macs`` is one view's cost (what hw_sim charges).
    """

    model: str
    min_score: float
    side: int = GLYPH_SIDE
    contexts: tuple[float, ...] = (CONTEXT,)
    turned: bool = False
    macs: int = 0
    rescue_from: float | None = None
    """The rescue: a candidate whose close-up scores at least this, but under the card's
    threshold, is kept at the threshold's score if every view reads it as 福 at
    ``rescue_min`` or more (the detector unsure, the recognizer sure: thin bare ink on a busy
    photo, mostly). Only a two-pass card (``zoom``) has candidates under its threshold.
    ``None``: no rescue; the check is asked only near a decision."""
    rescue_min: float = 0.9

    @property
    def views(self) -> int:
        return len(self.contexts) * (2 if self.turned else 1)

    @classmethod
    def from_fields(cls, raw: dict[str, Any]) -> GlyphSpec:
        contexts = raw.get("contexts", [CONTEXT])
        if not isinstance(contexts, list) or not contexts:
            raise ValueError(f"glyph: contexts wants a non-empty list of numbers: {raw}")
        spec = cls(
            model=str(raw["model"]),
            min_score=float(raw["min_score"]),
            side=int(raw.get("side", GLYPH_SIDE)),
            contexts=tuple(float(v) for v in contexts),
            turned=bool(raw.get("turned", False)),
            macs=int(raw.get("macs", 0)),
            rescue_from=None if raw.get("rescue_from") is None else float(raw["rescue_from"]),
            rescue_min=float(raw.get("rescue_min", 0.9)),
        )
        if not (0 < spec.min_score <= 1 and spec.side >= 16 and min(spec.contexts) >= 1):
            raise ValueError(f"glyph: want 0 < min_score <= 1, side >= 16, contexts >= 1: {raw}")
        if not (spec.rescue_from is None or 0 < spec.rescue_from < 1) or not (
            0 < spec.rescue_min <= 1
        ):
            raise ValueError(f"glyph: want 0 < rescue_from < 1 and 0 < rescue_min <= 1: {raw}")
        return spec


@dataclass(frozen=True, slots=True)
class ModelCard:
    """What the runtime needs to know about one ONNX file, plus its measured numbers."""

    path: Path
    tier: str
    precision: str
    classes: tuple[str, ...]
    input: InputSpec
    heatmap_output: str
    boxes_output: str
    stride: int
    threshold: float
    macs: int = 0
    params: int = 0
    zoom: ZoomSpec | None = None
    vote: dict[str, bool | int | float] = field(default_factory=dict)
    """Fields of the sequential vote that streams of this model start from, where this
    model's errors need another setting than the presets' (e.g. ``confirm_margin`` for a
    model whose check a look-alike passes now and then); a session's own ``voting``
    options override them. Names are checked where a voter is made (``voting.make_voter``)."""
    metrics: dict[str, Any] = field(default_factory=dict)
    glyph: GlyphSpec | None = None

    @property
    def model_path(self) -> Path:
        return self.path.with_suffix(".onnx")

    @property
    def glyph_path(self) -> Path | None:
        """The glyph check's file, beside the card; ``None`` without one."""
        return None if self.glyph is None else self.path.parent / self.glyph.model


def read_card(path: Path) -> ModelCard:
    """Parse the card at ``path``; its model is ``path`` with the suffix ``.onnx``.

    Raises:
        ModelCardError: the file is missing, is not JSON, or lacks a field.
    """
    try:
        raw = read_card_fields(path)
        spec = raw["input"]
        outputs = raw["outputs"]
        card = ModelCard(
            path=path,
            tier=str(raw["tier"]),
            precision=str(raw["precision"]),
            classes=tuple(str(c) for c in raw["classes"]),
            input=InputSpec(
                name=str(spec["name"]),
                width=int(spec["width"]),
                height=int(spec["height"]),
                scale=float(spec.get("scale", 1.0 / 255.0)),
                pad_value=int(spec.get("pad_value", 114)),
                color=str(spec.get("color", "RGB")),
            ),
            heatmap_output=str(outputs["heatmap"]),
            boxes_output=str(outputs["boxes"]),
            stride=int(outputs["stride"]),
            threshold=float(raw["threshold"]),
            macs=int(raw.get("macs", 0)),
            params=int(raw.get("params", 0)),
            zoom=_zoom_spec(raw.get("zoom")),
            vote=_vote_fields(raw.get("vote", {})),
            metrics=dict(raw.get("metrics", {})),
            glyph=None if raw.get("glyph") is None else GlyphSpec.from_fields(raw["glyph"]),
        )
        if card.glyph is not None and card.glyph.rescue_from is not None and card.zoom is None:
            raise ValueError(
                "glyph: rescue_from needs a zoom spec (candidates under the threshold)"
            )
        return card
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelCardError(f"bad model card {path}: {exc}") from exc


def _vote_fields(raw: object) -> dict[str, bool | int | float]:
    if not isinstance(raw, dict) or not all(
        isinstance(name, str) and isinstance(value, bool | int | float)
        for name, value in raw.items()
    ):
        raise ValueError(f"vote: want an object of voting fields and numbers: {raw}")
    return dict(raw)


def _zoom_spec(raw: dict[str, Any] | None) -> ZoomSpec | None:
    if raw is None:
        return None
    spec = ZoomSpec(
        fill=float(raw["fill"]),
        candidates=float(raw["candidates"]),
        max_candidates=int(raw["max_candidates"]),
        size=None if raw.get("size") is None else _size(raw["size"]),
        min_zoom=None if raw.get("min_zoom") is None else float(raw["min_zoom"]),
        turned_min=None if raw.get("turned_min") is None else float(raw["turned_min"]),
        extra_fills=None if raw.get("extra_fills") is None else _fills(raw["extra_fills"]),
        out_fill=None if raw.get("out_fill") is None else float(raw["out_fill"]),
    )
    if not (
        all(0 < fill < 1 for fill in spec.fills)
        and (spec.out_fill is None or 0 < spec.out_fill < 1)
        and 0 <= spec.candidates <= 1
        and spec.max_candidates > 0
        and (spec.min_zoom is None or spec.min_zoom >= 1)
        and (spec.turned_min is None or 0 <= spec.turned_min <= 1)
    ):
        raise ValueError(
            "zoom: want 0 < fill < 1 (and extra_fills, out_fill), 0 <= candidates <= 1, "
            f"max_candidates >= 1, min_zoom >= 1, 0 <= turned_min <= 1: {raw}"
        )
    return spec


def _fills(raw: Any) -> tuple[float, ...]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"zoom: extra_fills wants a non-empty list of shares: {raw}")
    return tuple(float(v) for v in raw)


def _size(raw: Any) -> tuple[int, int]:
    values = [int(v) for v in raw] if isinstance(raw, list) else []
    if len(values) != 2 or min(values) < MIN_ZOOM_SIDE:
        raise ValueError(f"zoom: size wants [width, height], each >= {MIN_ZOOM_SIDE}: {raw}")
    return values[0], values[1]


def list_cards(models_dir: Path = MODELS_DIR) -> list[ModelCard]:
    """Every readable card in ``models_dir`` whose model exists, by tier and precision."""
    cards = [read_card(p) for p in sorted(models_dir.glob("*.json"))]
    return [c for c in cards if c.model_path.exists()]


def find_card(tier: str, precision: str = "int8", models_dir: Path = MODELS_DIR) -> ModelCard:
    """The card for ``tier`` at ``precision``.

    Raises:
        ModelCardError: no such model is shipped.
    """
    for card in list_cards(models_dir):
        if card.tier == tier and card.precision == precision:
            return card
    have = sorted({(c.tier, c.precision) for c in list_cards(models_dir)})
    raise ModelCardError(f"no {precision} model for tier {tier!r} in {models_dir}; have {have}")


def read_card_fields(path: Path) -> dict[str, Any]:
    """The card at ``path`` as its JSON fields, unchecked (:func:`read_card` checks them)."""
    fields: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return fields


def write_card(path: Path, fields: dict[str, Any]) -> None:
    """Write a card's JSON (UTF-8, indented, 福 kept readable)."""
    path.write_text(json.dumps(fields, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def update_card(path: Path, **fields: Any) -> None:
    """Set ``fields`` in the card at ``path``, keeping every other field as it is."""
    write_card(path, read_card_fields(path) | fields)


def tuned_fields(path: Path) -> dict[str, Any]:
    """The :data:`TUNED_FIELDS` the card at ``path`` has; none if there is no card there.

    A retrained model starts from what was measured and chosen for the one it
    replaces (its threshold, the second look, the vote's fields), until it is
    measured itself.
    """
    if not path.exists():
        return {}
    raw = read_card_fields(path)
    return {name: raw[name] for name in TUNED_FIELDS if name in raw}


def copy_glyph_check(fields: dict[str, Any], source: Path, out: Path) -> None:
    """The glyph check that card ``fields`` name, copied from ``source`` into ``out`` so that a
    card written there loads as it did in ``source``: its model, and the FP32 file it came from
    where ``source`` has it."""
    glyph = fields.get("glyph") or {}
    if not glyph or source.resolve() == out.resolve():
        return
    shutil.copyfile(source / glyph["model"], out / glyph["model"])
    fp32 = glyph.get("fp32_model")
    if fp32 and (source / fp32).is_file():
        shutil.copyfile(source / fp32, out / fp32)
