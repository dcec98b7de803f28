"""Model cards: the JSON file beside each shipped ONNX model that says how to feed and read it.

A detector's card (``fu_l.int8.json`` beside ``fu_l.int8.onnx``) follows
:class:`DetectorCardFile`; the glyph check shared by the detectors has its own card
(``fu_glyph.int8.json``, :class:`GlyphCardFile`), which a detector's card names in its
``glyph`` field. Both are strict (:mod:`detectors.config`): an unknown or misspelt key is an
error naming the file and the field. What explains a card (how the model was trained, why a
threshold was chosen, the command that measured it) goes in its ``provenance``, which the
runtime never reads; what was measured, in its ``metrics``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PlainValidator, TypeAdapter
from pydantic.dataclasses import dataclass as strict_dataclass

from detectors.config import STRICT, read_data, shown, validate

MODELS_DIR = Path(__file__).resolve().parent / "models"
TUNED_FIELDS = ("threshold", "zoom", "vote", "glyph")
"""A card's fields chosen by measurement after its model was exported (docs/detector.md)."""
TUNED_PROVENANCE = ("threshold_rule",)
"""The ``provenance`` entries that say why the :data:`TUNED_FIELDS` are what they are."""
GLYPH_KIND = "glyph_check"
"""The ``kind`` of a glyph check's card; a detector's card is of kind ``detector``."""

GLYPH_SIDE = 64
CONTEXT = 1.25
"""The glyph check's crop side over the box's longer side (its default): a margin that shows
where the ink ends."""

Share = Annotated[float, Field(gt=0, lt=1)]
Score = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0)]


def _only(kinds: tuple[type, ...], what: str) -> PlainValidator:
    """A value of one of ``kinds`` as it is (strict, with one message instead of one a kind)."""

    def check(value: object) -> object:
        if isinstance(value, kinds):
            return value
        raise ValueError(f"want {what}")

    return PlainValidator(check)


VoteValue = Annotated[bool | int | float, _only((bool, int, float), "a number or true/false")]
Metrics = dict[str, Annotated[int | float | str, _only((int, float, str), "a number or a text")]]
Provenance = dict[str, Any]
METRICS: Any = Field(default_factory=dict, description="what was measured of the model")
PROVENANCE: Any = Field(
    default_factory=dict,
    description="how the model was made and why its settings were chosen (prose and commands); "
    "never read at run time",
)


class ModelCardError(ValueError):
    """A model card is missing, unreadable or has a bad, missing or unknown field."""


@strict_dataclass(frozen=True, slots=True, config=STRICT)
class InputSpec:
    """A card's ``input``: how a frame becomes the network's input tensor."""

    name: str = Field(description="the ONNX graph's input name")
    width: int = Field(ge=16, le=4096, description="input width in pixels")
    height: int = Field(ge=16, le=4096, description="input height in pixels")
    scale: float = Field(default=1.0 / 255.0, gt=0, le=1, description="pixel values times this")
    pad_value: int = Field(
        default=114, ge=0, le=255, description="grey around the letterboxed frame"
    )
    color: Literal["RGB", "BGR"] = Field(default="RGB", description="channel order of the tensor")
    layout: Literal["NCHW"] = Field(default="NCHW", description="tensor layout")
    resize: Literal["letterbox"] = Field(
        default="letterbox", description="letterbox: the frame scaled keeping its aspect, centred"
    )


@strict_dataclass(frozen=True, slots=True, config=STRICT)
class ZoomSpec:
    """The second look of a two-pass detector: each candidate is scored again on a close-up.

    The first pass reports candidates scoring at least ``candidates``; each is
    cropped out of the frame so that its box spans ``fill`` of the crop's side,
    and the network's score on that crop replaces the first one.
    """

    fill: Share = Field(
        default=0.4, description="share of the close-up's side the candidate's box spans"
    )
    candidates: Score = Field(
        default=0.3, description="first-look score from which a box is a candidate"
    )
    max_candidates: int = Field(
        default=6, ge=1, le=64, description="candidates looked at again, at most"
    )
    min_zoom: float | None = Field(
        default=None,
        ge=1,
        description="least magnification worth a close-up; none: any below the frame",
    )
    """No close-up for a candidate whose crop would magnify the frame less than this;
    ``None``: only when the crop would hold the whole frame (a zoom of 1)."""
    turned_min: Score | None = Field(
        default=None,
        description="close-up turned upside down must score this to confirm; none: no check",
    )
    """The detector offers a turned check (:meth:`OnnxDetector.confirmer`): a detection is
    confirmed if its close-up turned upside down also scores at least this. The model is
    taught 福 both ways up (倒福), so a real one reads as 福 turned too; a look-alike it
    mistakes for 福 one way up seldom does the other way. A voter asks for the check only
    when a track is about to be recognized. ``None``: no check to offer."""
    extra_fills: tuple[Share, ...] | None = Field(
        default=None, min_length=1, description="more close-ups' shares; a candidate keeps its best"
    )
    """More close-ups of each candidate, its box spanning each of these shares of the crop;
    the candidate keeps its best score. The network's verdict on a glyph changes with the
    scale it sees it at, and a large candidate that ``fill`` and ``min_zoom`` leave without
    a close-up gets one at a larger share. ``None``: only ``fill``."""
    out_fill: Share | None = Field(
        default=None,
        description="share of a zoomed-out view for candidates too large for a close-up",
    )
    """A candidate too large for any close-up is seen again zoomed out: the frame shrunk
    into a border of the input's pad value, the box spanning this share of the view, if
    that shrinks the frame at least ``min_zoom`` times. The network learned 福 up to 0.75
    of the short side and scores one that fills the screen low. ``None``: the first look
    stands for such candidates."""

    @property
    def fills(self) -> tuple[float, ...]:
        """Every close-up's share of the crop: ``fill``, then ``extra_fills``."""
        return (self.fill, *(self.extra_fills or ()))


class Outputs(BaseModel):
    """A detector card's ``outputs``: the graph's output names and their grid."""

    model_config = STRICT
    heatmap: str = Field(description="output of per-cell class scores")
    boxes: str = Field(description="output of per-cell box distances")
    stride: int = Field(ge=1, le=64, description="input pixels per output cell")


class GlyphUse(BaseModel):
    """A detector card's ``glyph``: the glyph check it uses, and its own rescue settings."""

    model_config = STRICT
    card: str = Field(description="the glyph check's card, a file beside this one")
    rescue_from: Share | None = Field(
        default=None,
        description="close-up score from which the check may rescue a candidate; none: no",
    )
    rescue_min: float = Field(
        default=0.9, gt=0, le=1, description="score every view must give a candidate to rescue it"
    )
    rescue_sure_min: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="score every view gives a rescue reported at rescue_sure_score; none: every "
        "rescue at the threshold",
    )
    rescue_sure_score: Share | None = Field(
        default=None, description="the score such a rescue is reported at (the threshold or more)"
    )


class DetectorCardFile(BaseModel):
    """A detector's card, as its JSON file holds it."""

    model_config = STRICT
    kind: Literal["detector"] = Field(default="detector", description="a detector's card")
    tier: str = Field(min_length=1, description="model tier (s, m, l) the device simulator picks")
    precision: Literal["int8", "fp32"] = Field(description="the build's number format")
    classes: tuple[str, ...] = Field(min_length=1, description="labels of the heatmap's channels")
    input: InputSpec = Field(description="how a frame becomes the input tensor")
    outputs: Outputs = Field(description="the graph's outputs")
    threshold: Share = Field(description="score from which a detection is reported")
    macs: Count = Field(default=0, description="multiply-adds of one run (what hw_sim charges)")
    params: Count = Field(default=0, description="parameters of the network")
    file_size: Count = Field(default=0, description="bytes of the ONNX file")
    fp32_model: str | None = Field(
        default=None, description="the FP32 file this one was quantized from"
    )
    weights_from: str | None = Field(
        default=None, description="the file whose weights this one shares"
    )
    zoom: ZoomSpec | None = Field(default=None, description="the second look; none: one pass")
    vote: dict[str, VoteValue] = Field(
        default_factory=dict, description="sequential vote fields streams of this model start from"
    )
    glyph: GlyphUse | None = Field(
        default=None, description="the glyph check a detection must pass"
    )
    metrics: Metrics = METRICS
    provenance: Provenance = PROVENANCE


class GlyphCardFile(BaseModel):
    """The glyph check's card (:mod:`detectors.glyph_check`), as its JSON file holds it."""

    model_config = STRICT
    kind: Literal["glyph_check"] = Field(description="a glyph check's card")
    min_score: float = Field(gt=0, le=1, description="score every view must give a detection")
    side: int = Field(default=GLYPH_SIDE, ge=16, le=512, description="crop side in pixels")
    contexts: tuple[Annotated[float, Field(ge=1)], ...] = Field(
        default=(CONTEXT,), min_length=1, description="views: crop side over the box's longer side"
    )
    macs: Count = Field(default=0, description="multiply-adds of one view (what hw_sim charges)")
    params: Count = Field(default=0, description="parameters of the network")
    file_size: Count = Field(default=0, description="bytes of the ONNX file")
    fp32_model: str | None = Field(
        default=None, description="the FP32 file this one was quantized from"
    )
    metrics: Metrics = METRICS
    provenance: Provenance = PROVENANCE


DETECTOR_CARD = TypeAdapter(DetectorCardFile)
GLYPH_CARD = TypeAdapter(GlyphCardFile)


@dataclass(frozen=True, slots=True)
class GlyphSpec:
    """A detector card's glyph check (:mod:`detectors.glyph_check`), its card's fields and the
    detector card's own: what a detection must also pass to be confirmed.

    ``model`` is its file (beside the card). A detection is looked at in
    several views, one crop per share in ``contexts`` (the crop's side over the
    box's longer side); it passes if every view scores ``min_score`` or more. A
    look-alike the recognizer takes for 福 in one view seldom passes them all.
    ``macs`` is one view's cost (what hw_sim charges).
    """

    model: str
    min_score: float
    side: int = GLYPH_SIDE
    contexts: tuple[float, ...] = (CONTEXT,)
    macs: int = 0
    rescue_from: float | None = None
    """The rescue: a candidate whose close-up scores at least this, but under the card's
    threshold, is kept at the threshold's score if every view reads it as 福 at
    ``rescue_min`` or more (the detector unsure, the recognizer sure: thin bare ink on a busy
    photo, mostly). Only a two-pass card (``zoom``) has candidates under its threshold.
    ``None``: no rescue; the check is asked only near a decision."""
    rescue_min: float = 0.9
    rescue_sure_min: float | None = None
    """A rescue whose every view reads at least this is reported at ``rescue_sure_score``
    instead of the threshold: the recognizer all but certain is stronger evidence for the vote
    than the weakest "福". ``None``: every rescue at the threshold."""
    rescue_sure_score: float | None = None

    @property
    def views(self) -> int:
        return len(self.contexts)


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
    """Parse the detector card at ``path`` and the glyph check's card it names; its model is
    ``path`` with the suffix ``.onnx``.

    Raises:
        ModelCardError: a file is missing or not JSON, or a field is missing, unknown, of the
            wrong type or out of bounds; the message names the file and the field.
    """
    try:
        return _card(path, read_data(path))
    except ValueError as exc:
        raise ModelCardError(str(exc)) from None


def _card(path: Path, data: object) -> ModelCard:
    fields = validate(DETECTOR_CARD, data, path)
    glyph = None if fields.glyph is None else _glyph_spec(path, fields.glyph)
    if glyph is not None and glyph.rescue_from is not None and fields.zoom is None:
        raise ValueError(
            f"{shown(path)}: glyph.rescue_from: needs a zoom spec (candidates under the threshold)"
        )
    if glyph is not None:
        _check_sure_rescue(path, glyph, fields.threshold)
    return ModelCard(
        path=path,
        tier=fields.tier,
        precision=fields.precision,
        classes=fields.classes,
        input=fields.input,
        heatmap_output=fields.outputs.heatmap,
        boxes_output=fields.outputs.boxes,
        stride=fields.outputs.stride,
        threshold=fields.threshold,
        macs=fields.macs,
        params=fields.params,
        zoom=fields.zoom,
        vote=fields.vote,
        metrics=fields.metrics,
        glyph=glyph,
    )


def read_glyph_card(path: Path) -> GlyphCardFile:
    """The glyph check's card at ``path``; its model is ``path`` with the suffix ``.onnx``.

    Raises:
        ValueError: as :func:`read_card`.
    """
    return validate(GLYPH_CARD, read_data(path), path)


def _check_sure_rescue(path: Path, glyph: GlyphSpec, threshold: float) -> None:
    sure_min, sure_score = glyph.rescue_sure_min, glyph.rescue_sure_score
    if (sure_min is None) != (sure_score is None):
        problem = "rescue_sure_min and rescue_sure_score: give both or neither"
    elif sure_min is None or sure_score is None:
        return
    elif glyph.rescue_from is None:
        problem = "rescue_sure_min: needs rescue_from (there is no rescue)"
    elif sure_min < glyph.rescue_min:
        problem = f"rescue_sure_min: under rescue_min ({glyph.rescue_min})"
    elif sure_score < threshold:
        problem = f"rescue_sure_score: under the threshold ({threshold})"
    else:
        return
    raise ValueError(f"{shown(path)}: glyph.{problem}")


def _glyph_spec(card_path: Path, use: GlyphUse) -> GlyphSpec:
    glyph_card = card_path.parent / use.card
    if not glyph_card.is_file():
        raise ValueError(f"{shown(card_path)}: glyph.card: no file {use.card} beside the card")
    check = read_glyph_card(glyph_card)
    return GlyphSpec(
        model=glyph_card.with_suffix(".onnx").name,
        min_score=check.min_score,
        side=check.side,
        contexts=check.contexts,
        macs=check.macs,
        rescue_from=use.rescue_from,
        rescue_min=use.rescue_min,
        rescue_sure_min=use.rescue_sure_min,
        rescue_sure_score=use.rescue_sure_score,
    )


def list_cards(models_dir: Path = MODELS_DIR) -> list[ModelCard]:
    """Every detector card in ``models_dir`` whose model exists, by tier and precision.

    Raises:
        ModelCardError: a card there is bad (:func:`read_card`).
    """
    cards = []
    for path in sorted(models_dir.glob("*.json")):
        try:
            data = read_data(path)
            if not (isinstance(data, dict) and data.get("kind") == GLYPH_KIND):
                cards.append(_card(path, data))
        except ValueError as exc:
            raise ModelCardError(str(exc)) from None
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


def with_fields(fields: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Card ``fields`` with ``changes``: each field replaced, but ``provenance`` entry by entry."""
    provenance = fields.get("provenance", {}) | changes.get("provenance", {})
    return fields | changes | ({"provenance": provenance} if provenance else {})


def update_card(path: Path, **fields: Any) -> None:
    """Set ``fields`` in the card at ``path`` (:func:`with_fields`), keeping every other field."""
    write_card(path, with_fields(read_card_fields(path), fields))


def tuned_fields(path: Path) -> dict[str, Any]:
    """The :data:`TUNED_FIELDS` and :data:`TUNED_PROVENANCE` the card at ``path`` has; none if
    there is no card there.

    A retrained model starts from what was measured and chosen for the one it
    replaces (its threshold, the second look, the vote's fields), until it is
    measured itself.
    """
    if not path.exists():
        return {}
    raw = read_card_fields(path)
    tuned = {name: raw[name] for name in TUNED_FIELDS if name in raw}
    why = {k: v for k, v in raw.get("provenance", {}).items() if k in TUNED_PROVENANCE}
    return tuned | ({"provenance": why} if why else {})


def copy_glyph_check(fields: dict[str, Any], source: Path, out: Path) -> None:
    """The glyph check that card ``fields`` name, copied from ``source`` into ``out`` so that a
    card written there loads as it did in ``source``: its card, its model, and the FP32 file it
    came from where ``source`` has it."""
    glyph = fields.get("glyph") or {}
    if not glyph or source.resolve() == out.resolve():
        return
    card = Path(glyph["card"])
    shutil.copyfile(source / card, out / card)
    shutil.copyfile(source / card.with_suffix(".onnx"), out / card.with_suffix(".onnx"))
    fp32 = read_card_fields(source / card).get("fp32_model")
    if fp32 and (source / fp32).is_file():
        shutil.copyfile(source / fp32, out / fp32)
