"""Synthetic camera scenes with 福 posters, look-alike posters and clutter, labelled with 福 boxes.

Pure numpy + OpenCV and deterministic by seed: the same seed gives the same
pixels and boxes on every machine. :func:`render_scene` makes one still for
training and evaluation; :func:`make_clip` makes a short hand-held video for
end-to-end tests.

A label is the box of the 福 character's ink (not of the poster around it), in
pixels of the returned image, clipped to the image.

Every poster is at least ``MIN_VISIBLE`` in the frame and every 福 is
labelled, unless a still is asked for ``cut_look_alikes``: then look-alike
posters may be cut by the frame edge down to ``CUT_MIN_VISIBLE``, and a 福 is
labelled only while it can still be told from them: with its radical 礻 in
view (what is left without it, 畐, is the half that 幅 副 逼 蝠 辐 share) and
at least ``LABEL_MIN_VISIBLE`` of its ink in the frame. A 福 cut further is an
*ignored* region (``render_scene(...).ignore``): training neither rewards nor
punishes a detection there, since no reader could say what the fragment is.
A training option.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields, replace
from typing import Literal, NamedTuple

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import ImageBGR
from detectors.synth.backgrounds import load_photos
from detectors.synth.bank import LOOK_ALIKES, load_glyphs
from detectors.synth.brush import handwritten

Content = Literal["fu", "negative", "empty", "mixed"]
Split = Literal["train", "eval"]
Boxes = npt.NDArray[np.float32]
"""``N x 4`` float32 ``(x0, y0, x1, y1)`` boxes."""
Rng = np.random.Generator
FloatImage = npt.NDArray[np.float32]

MIN_VISIBLE = 0.6
"""A poster whose ink box is less inside the frame than this is never generated (but see
``CUT_MIN_VISIBLE``)."""
CUT_MIN_VISIBLE = 0.3
"""With ``cut_look_alikes``, how far inside the frame a look-alike poster need only be."""
RADICAL_SHARE = 0.4
"""The share of an upright 福's ink box, from the left, that its radical 礻 takes."""
RADICAL_MIN_VISIBLE = 0.5
"""With ``cut_look_alikes``, a 福 is labelled only if this much of its radical is in the frame..."""
LABEL_MIN_VISIBLE = 0.75
"""...and this much of its ink box; otherwise it is an ignored region."""
EMPTY_SHARE = 0.15
"""How often a ``content="mixed"`` scene holds no poster at all..."""
NEGATIVE_SHARE = 0.3
"""...and how often only look-alikes (``SceneOptions.negative_share``); the rest hold 福."""
UPSIDE_DOWN_SHARE = 0.3
"""How often a character is printed upside down (倒福, and look-alikes the same)."""
GLYPH_FILL = (0.1, 0.75)
"""The range of a character's side as a share of the scene's short side (drawn log-uniform)."""
CONTRAST_MIN_WINDOW = 7
"""Pixels: the least width of the neighbourhood in which :func:`ink_contrast` compares a
stroke with its surroundings (about a stroke's width on the smallest 福)."""

# (background, ink) colours, BGR. Red-and-gold is what most real 福 posters look like.
_PALETTES = (
    ((35, 30, 200), (20, 20, 20)),
    ((35, 30, 200), (60, 190, 235)),
    ((30, 20, 160), (40, 170, 230)),
    ((50, 60, 220), (15, 15, 15)),
    ((60, 190, 235), (30, 30, 190)),
    ((235, 240, 245), (20, 20, 20)),
    ((225, 235, 245), (30, 30, 190)),
    ((35, 30, 200), (240, 240, 240)),
    ((40, 40, 40), (60, 190, 235)),
)
_PLACEMENT_TRIES = 8
_STYLES = ("diamond", "square", "round", "bare")
_STYLE_P = (0.4, 0.3, 0.15, 0.15)  # the last: bare ink, printed straight onto the scene
# Glyph side as a fraction of the poster side, per style.
_GLYPH_FRACTION = {"diamond": (0.48, 0.6), "square": (0.6, 0.85), "round": (0.5, 0.62)}


@dataclass(frozen=True, slots=True)
class Poster:
    """A flat poster: colour, coverage (0..1) and the ink box of its character, in poster px."""

    color: FloatImage
    alpha: FloatImage
    ink_box: tuple[float, float, float, float]
    radical_box: tuple[float, float, float, float]
    """Where the radical of a 福 would be: the ink box's leading ``RADICAL_SHARE`` (its left,
    or its right when the glyph is upside down)."""
    ink: FloatImage
    """Coverage (0..1) of the character's strokes alone, for :func:`ink_contrast`."""
    bare: bool = False
    """Ink printed straight onto the scene, no paper."""


def _valid_fill(fill: tuple[float, float]) -> bool:
    """Whether ``fill`` is a range of shares ``(low, high)`` with 0 < low <= high <= 1."""
    low, high = fill
    return 0.0 < low <= high <= 1.0


@dataclass(frozen=True, slots=True)
class SceneOptions:
    """Training-time changes to what a scene holds; the defaults are the generator's own mix,
    which every evaluation uses."""

    cut_look_alikes: bool = False
    """Look-alikes cut by the frame edge, and a 福 cut so far that it could be one of them
    ignored instead of labelled (module docstring). Without it ``ignore`` is always empty."""
    bare_ink_share: float | None = None
    """The share of posters that are bare ink (no paper); ``None``: ``_STYLE_P``'s. The other
    styles keep their proportions."""
    upside_down_share: float = UPSIDE_DOWN_SHARE
    """The share of characters printed upside down."""
    low_contrast_share: float = 0.0
    """The share of bare-ink characters (福 and look-alikes alike) recoloured toward the
    scene under them, keeping 30-80 % of the colour difference (:func:`_faded`)."""
    glyph_fill: tuple[float, float] = GLYPH_FILL
    """The range of a character's side as a share of the scene's short side; above 0.75 it
    fills the screen the way people hold a phone to scan one."""
    aimed: bool = False
    """The scene's first poster (a 福 where there is one) goes in its middle, where a person
    scanning aims the camera, instead of anywhere."""
    ornament_share: float = 0.0
    """The share of backgrounds that are painted architecture (:func:`_ornament`) instead of a
    photo or a wall: bands of motifs, lattices and pillars in strong colours, whose strokes
    are what bare ink is lost among on the held-out photos."""
    negative_share: float = NEGATIVE_SHARE
    """The share of ``content="mixed"`` stills that hold only look-alikes; those with 福 give
    way (``EMPTY_SHARE`` stay empty). A clip's content is chosen by its caller, so clips refuse
    any other share."""

    favoured_look_alikes: str = ""
    """Look-alike characters drawn more often: a look-alike poster is one of them with
    probability ``favoured_share`` (and any, these too, otherwise)."""
    favoured_share: float = 0.0
    hand_share: float = 0.0
    """The share of characters (福 and look-alikes alike) drawn from the hand-written faces
    (``bank.HAND_FONTS``: brush calligraphy, display faces, handwriting) instead of print."""
    brush_share: float = 0.0
    """The share of characters written again by a hand (:func:`brush.handwritten`: brush
    pressure, bleed, dry brush, deformation, strokes run together, or a marker's thin line)."""
    media_share: float = 0.0
    """The share of posters printed as door decorations (:func:`_decoration`: red or gold
    paper with gold flecks, borders and ornaments, gold foil or black ink, glossy film), and
    of stills lit by a room's lamps (:func:`_room_light`)."""

    def __post_init__(self) -> None:
        unknown = set(self.favoured_look_alikes) - set(LOOK_ALIKES)
        if unknown:
            raise ValueError(
                f"favoured_look_alikes must be among {LOOK_ALIKES}, not {''.join(sorted(unknown))}"
            )
        if self.favoured_share > 0 and not self.favoured_look_alikes:
            raise ValueError("favoured_share needs favoured_look_alikes to draw from")
        for name in (
            "bare_ink_share",
            "upside_down_share",
            "low_contrast_share",
            "ornament_share",
            "favoured_share",
            "hand_share",
            "brush_share",
            "media_share",
        ):
            share = getattr(self, name)
            if share is not None and not 0.0 <= share <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {share}")
        if not 0.0 <= self.negative_share <= 1.0 - EMPTY_SHARE:
            raise ValueError(
                f"negative_share must be within 0..{1.0 - EMPTY_SHARE:g} (the rest of the "
                f"{EMPTY_SHARE:g} empty scenes), got {self.negative_share}"
            )
        if not _valid_fill(self.glyph_fill):
            raise ValueError(f"glyph_fill must be 0 < low <= high <= 1, got {self.glyph_fill}")

    def changes(self) -> str:
        """The fields set away from the generator's own mix, ``name=value`` comma-separated
        (empty for the mix itself)."""
        return ", ".join(
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if getattr(self, f.name) != getattr(GENERATOR_MIX, f.name)
        )

    def content_p(self) -> tuple[tuple[str, float], ...]:
        """How often a ``content="mixed"`` still holds 福, only look-alikes, or no poster."""
        return (
            ("fu", 1.0 - EMPTY_SHARE - self.negative_share),
            ("negative", self.negative_share),
            ("empty", EMPTY_SHARE),
        )

    def style_p(self) -> tuple[float, ...]:
        """Probabilities of ``_STYLES``."""
        if self.bare_ink_share is None:
            return _STYLE_P
        papers = sum(_STYLE_P[:-1])
        return (
            *(p / papers * (1 - self.bare_ink_share) for p in _STYLE_P[:-1]),
            self.bare_ink_share,
        )


GENERATOR_MIX = SceneOptions()


def add_scene_arguments(parser: argparse.ArgumentParser, clips: bool = False) -> None:
    """The flags of :class:`SceneOptions`, for the commands that generate scenes; for
    ``clips`` (:func:`make_clip`, which labels every 福 and takes its content from its caller)
    all but ``--cut-look-alikes`` and ``--negative-share``."""
    if not clips:
        parser.add_argument(
            "--cut-look-alikes",
            action="store_true",
            help="look-alikes cut by the frame edge; a 福 cut so far that it could be one of "
            "them (its radical or a quarter of its ink out of frame) is ignored, not labelled",
        )
        parser.add_argument(
            "--negative-share",
            type=share_argument,
            default=NEGATIVE_SHARE,
            help="share of scenes holding only look-alikes; fewer hold 福 "
            "(default %(default)s; the generator's mix)",
        )
    parser.add_argument(
        "--bare-ink-share",
        type=share_argument,
        help=f"share of posters printed as bare ink, no paper (default {_STYLE_P[-1]})",
    )
    parser.add_argument(
        "--low-contrast-share",
        type=share_argument,
        default=0.0,
        help="share of bare-ink characters recoloured toward the scene under them, keeping "
        "30-80 %% of the colour difference (default %(default)s)",
    )
    parser.add_argument(
        "--upside-down-share",
        type=share_argument,
        default=UPSIDE_DOWN_SHARE,
        help="share of characters printed upside down (default %(default)s)",
    )
    parser.add_argument(
        "--glyph-fill",
        type=_fill_range,
        default=GLYPH_FILL,
        metavar="LOW:HIGH",
        help="range of a character's side as a share of the scene's short side, e.g. 0.6:0.9 "
        f"for a 福 filling the screen (default {GLYPH_FILL[0]}:{GLYPH_FILL[1]})",
    )
    parser.add_argument(
        "--ornament-share",
        type=share_argument,
        default=0.0,
        help="share of backgrounds painted like temple architecture: bands of motifs, "
        "lattices and pillars in strong colours (default %(default)s)",
    )
    parser.add_argument(
        "--favoured-look-alikes",
        default="",
        metavar="CHARS",
        help=f"look-alikes to draw more often, among {LOOK_ALIKES} (with --favoured-share)",
    )
    parser.add_argument(
        "--favoured-share",
        type=share_argument,
        default=0.0,
        help="share of look-alike posters drawn from --favoured-look-alikes only (default "
        "%(default)s; the rest are drawn from all, those too)",
    )
    parser.add_argument(
        "--hand-share",
        type=share_argument,
        default=0.0,
        help="share of characters in hand-written faces: brush calligraphy in regular, "
        "running and cursive script, handwriting (default %(default)s)",
    )
    parser.add_argument(
        "--brush-share",
        type=share_argument,
        default=0.0,
        help="share of characters written again by a hand: brush pressure, ink bleed, dry "
        "brush, deformation, strokes run together, or a marker's line (default %(default)s)",
    )
    parser.add_argument(
        "--media-share",
        type=share_argument,
        default=0.0,
        help="share of posters printed as door decorations (gold-flecked red paper, borders, "
        "gold foil, glossy film) and of stills under room light (default %(default)s)",
    )
    parser.add_argument(
        "--aimed",
        action="store_true",
        help="the first poster (a 福 where there is one) in the middle of the scene, where a "
        "person scanning aims the camera",
    )


def scene_options(args: argparse.Namespace) -> SceneOptions:
    """The options that :func:`add_scene_arguments`'s flags parsed to."""
    return SceneOptions(
        getattr(args, "cut_look_alikes", False),
        args.bare_ink_share,
        args.upside_down_share,
        args.low_contrast_share,
        args.glyph_fill,
        args.aimed,
        args.ornament_share,
        getattr(args, "negative_share", NEGATIVE_SHARE),
        args.favoured_look_alikes,
        args.favoured_share,
        args.hand_share,
        args.brush_share,
        args.media_share,
    )


def _fill_range(text: str) -> tuple[float, float]:
    """An argparse type: ``LOW:HIGH`` shares with 0 < LOW <= HIGH <= 1."""
    low, _, high = text.partition(":")
    try:
        fill = (float(low), float(high))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want LOW:HIGH, got {text!r}") from None
    if not _valid_fill(fill):
        raise argparse.ArgumentTypeError(f"want 0 < LOW <= HIGH <= 1, got {text!r}")
    return fill


def share_argument(text: str) -> float:
    """An argparse type: a number within 0..1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within 0..1, got {text!r}")
    return value


class LabelledScene(NamedTuple):
    """A still, its 福 boxes, and the boxes of 福 too cut off to label either way
    (``image, boxes, _ = render_scene(...)``)."""

    image: ImageBGR
    boxes: Boxes
    ignore: Boxes


class PosterScene(NamedTuple):
    """A still as :class:`LabelledScene`, with the ink boxes of its other characters
    (look-alikes and festive ones) as well: what a glyph check learns to refuse."""

    image: ImageBGR
    boxes: Boxes
    ignore: Boxes
    others: Boxes


class Clip(NamedTuple):
    """A generated video: BGR frames and, per frame, the 福 boxes visible in it."""

    frames: list[ImageBGR]
    boxes: list[Boxes]
    contrast: tuple[float, ...]
    """Per 福 of the scene, in the order of each frame's boxes: its :func:`ink_contrast`
    (how plainly a person would see it, whatever a detector makes of it)."""


def _glyph_ink(
    rng: Rng, mask: npt.NDArray[np.uint8], side: int, upside_down_share: float
) -> tuple[FloatImage, bool]:
    """The bank mask with random stroke weight, maybe upside down (倒福), resized to ``side``.

    Returns the ink and whether it is upside down.
    """
    weight = rng.choice(3, p=(0.2, 0.6, 0.2))
    if weight != 1:
        kernel = np.ones((3, 3), np.uint8)
        thinned = cv2.erode(mask, kernel) if weight == 0 else cv2.dilate(mask, kernel)
        mask = np.asarray(thinned, np.uint8)
    upside_down = bool(rng.random() < upside_down_share)
    if upside_down:
        mask = mask[::-1, ::-1]
    interpolation = cv2.INTER_AREA if side < mask.shape[0] else cv2.INTER_LINEAR
    resized = cv2.resize(np.ascontiguousarray(mask), (side, side), interpolation=interpolation)
    return resized.astype(np.float32) / 255.0, upside_down


def _make_poster(
    rng: Rng, mask: npt.NDArray[np.uint8], glyph_side: int, options: SceneOptions
) -> Poster:
    # Drawn only when asked for: the generator's own mix stays as it was.
    if options.media_share > 0 and rng.random() < options.media_share:
        return _decoration(rng, mask, glyph_side, options)
    style = str(rng.choice(_STYLES, p=options.style_p()))
    lo, hi = _GLYPH_FRACTION.get(style, (1.0, 1.0))
    side = max(glyph_side, round(glyph_side / rng.uniform(lo, hi)))
    paper, ink_colour = _PALETTES[rng.integers(len(_PALETTES))]
    jitter = rng.normal(0, 12, 3)
    paper_bgr = np.clip(np.array(paper) + jitter, 0, 255).astype(np.float32)
    ink_bgr = np.clip(np.array(ink_colour) + rng.normal(0, 10, 3), 0, 255).astype(np.float32)
    shape = np.zeros((side, side), np.uint8)
    if style == "diamond":
        corners = np.array([[side / 2, 0], [side, side / 2], [side / 2, side], [0, side / 2]])
        cv2.fillConvexPoly(shape, np.round(corners * 16).astype(np.int32), 255, cv2.LINE_AA, 4)
    elif style == "round":
        cv2.circle(shape, (side * 8, side * 8), side * 8, 255, -1, cv2.LINE_AA, 4)
    elif style == "square":
        shape[:] = 255
    base = shape.astype(np.float32) / 255.0
    ink = np.zeros((side, side), np.float32)
    offset = (side - glyph_side) // 2
    glyph, upside_down = _glyph_ink(rng, mask, glyph_side, options.upside_down_share)
    ink[offset : offset + glyph_side, offset : offset + glyph_side] = glyph
    shade = np.linspace(rng.uniform(0.8, 1.0), rng.uniform(0.9, 1.15), side, dtype=np.float32)
    paper_img = paper_bgr * (shade[:, None, None] if rng.random() < 0.5 else shade[None, :, None])
    color = paper_img * (1 - ink[..., None]) + ink_bgr * ink[..., None]
    return _poster(color, np.maximum(base, ink), ink, upside_down, style == "bare")


def _poster(
    color: FloatImage, alpha: FloatImage, ink: FloatImage, upside_down: bool, bare: bool
) -> Poster:
    """A poster of its colour, coverage and character's ink, with the ink's and radical's
    boxes measured on the ink."""
    ys, xs = np.nonzero(ink > 0.3)
    x0, y0, x1, y1 = (
        (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
        if len(xs)
        else (0.0, 0.0, 0.0, 0.0)
    )
    radical = RADICAL_SHARE * (x1 - x0)
    radical_box = (x1 - radical, y0, x1, y1) if upside_down else (x0, y0, x0 + radical, y1)
    return Poster(color.astype(np.float32), alpha, (x0, y0, x1, y1), radical_box, ink, bare)


_DECORATION_PAPERS = ((35, 30, 200), (30, 20, 165), (45, 40, 215), (50, 170, 225))
"""BGR: vermilion, deep red and bright red paper, and gold paper."""
_GOLD = np.array((50, 175, 230), np.float32)


def _decoration(
    rng: Rng, mask: npt.NDArray[np.uint8], glyph_side: int, options: SceneOptions
) -> Poster:
    """A door decoration: a 斗方 diamond or a square of red (or gold) paper flecked with gold,
    an inset border and corner ornaments, the character in black or gold foil; some under
    glossy film that throws back a band of light. The character's ink is what its label
    covers; the flecks, borders and ornaments are paper."""
    diamond = rng.random() < 0.5
    side = max(
        glyph_side, round(glyph_side / rng.uniform(*((0.5, 0.62) if diamond else (0.55, 0.8))))
    )
    paper = np.array(_DECORATION_PAPERS[rng.integers(len(_DECORATION_PAPERS))], np.float32)
    paper = np.clip(paper + rng.normal(0, 10, 3), 0, 255).astype(np.float32)
    gold_paper = paper[2] > 200 and paper[1] > 120
    color = np.empty((side, side, 3), np.float32)
    color[:] = paper
    color *= 1 + rng.normal(0, 0.04, (side, side, 1)).astype(np.float32)  # paper grain
    if not gold_paper:  # gold flecks
        spots = (rng.random((side, side)) < rng.uniform(0, 0.004)).astype(np.uint8)
        size = 2 * max(1, round(side * rng.uniform(0.002, 0.008))) + 1
        disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
        fleck = np.asarray(cv2.dilate(spots, disc)) > 0
        color[fleck] = _GOLD * rng.uniform(0.8, 1.2, (int(fleck.sum()), 1)).astype(np.float32)
    trim = tuple(float(v) for v in (_GOLD if not gold_paper else np.array((30, 30, 170))))
    thick = max(1, round(side * rng.uniform(0.006, 0.02)))
    shape = np.zeros((side, side), np.uint8)
    centre = side / 2
    for inset in (0.0, *rng.uniform(0.03, 0.1, int(rng.integers(0, 3)))):
        half = centre * (1 - 2 * inset)
        if diamond:
            outline = np.array(
                [[centre, centre - half], [centre + half, centre], [centre, centre + half],
                 [centre - half, centre]]
            )  # fmt: skip
        else:
            outline = np.array(
                [[centre - half, centre - half], [centre + half, centre - half],
                 [centre + half, centre + half], [centre - half, centre + half]]
            )  # fmt: skip
        points = np.round(outline).astype(np.int32)
        if inset == 0.0:
            cv2.fillConvexPoly(shape, points, 255, cv2.LINE_AA)
        else:
            cv2.polylines(color, [points], True, trim, thick, cv2.LINE_AA)
            if rng.random() < 0.5:  # an ornament at each corner
                r = max(2, round(side * rng.uniform(0.015, 0.04)))
                for x, y in points:
                    cv2.circle(
                        color, (int(x), int(y)), r, trim, -1 if rng.random() < 0.5 else thick
                    )
    ink = np.zeros((side, side), np.float32)
    offset = (side - glyph_side) // 2
    glyph, upside_down = _glyph_ink(rng, mask, glyph_side, options.upside_down_share)
    ink[offset : offset + glyph_side, offset : offset + glyph_side] = glyph
    if gold_paper or rng.random() < 0.45:
        ink_bgr = np.clip(rng.normal(15, 6, 3), 0, 60).astype(np.float32)  # black
        ink_img = np.broadcast_to(ink_bgr, (side, side, 3))
    else:  # gold foil: its brightness varies with the light across the crumpled foil
        sheen = cv2.GaussianBlur(
            rng.uniform(0.6, 1.3, (side, side)).astype(np.float32), (0, 0), side * 0.02
        )
        ink_img = _GOLD * rng.uniform(0.8, 1.1) * sheen[..., None]
    color = color * (1 - ink[..., None]) + ink_img * ink[..., None]
    if rng.random() < 0.4:
        color = _glossy(rng, color)
    alpha = np.maximum(shape.astype(np.float32) / 255.0, ink)
    return _poster(np.clip(color, 0, 255), alpha, ink, upside_down, False)


def _glossy(rng: Rng, color: FloatImage) -> FloatImage:
    """Glossy film over a poster: a soft band of reflected light across it, washing out what
    is under it by up to 70 %."""
    side = color.shape[0]
    angle = rng.uniform(0, np.pi)
    ys, xs = np.mgrid[0:side, 0:side].astype(np.float32) / side - 0.5
    across = xs * np.cos(angle) + ys * np.sin(angle) - rng.uniform(-0.4, 0.4)
    band = np.exp(-((across / rng.uniform(0.04, 0.2)) ** 2)) * rng.uniform(0.3, 0.7)
    return np.asarray(color * (1 - band[..., None]) + 250 * band[..., None], np.float32)


def _room_light(rng: Rng, canvas: FloatImage) -> None:
    """A room's lamps, in place: a warm or cool cast, a bright spot where the lamp is and
    the corners falling off (vignetting)."""
    height, width = canvas.shape[:2]
    warm = rng.uniform(-1, 1)
    cast = np.array((1 - 0.2 * warm, 1.0, 1 + 0.15 * warm), np.float32)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    cx, cy = rng.uniform(0, width), rng.uniform(0, height)
    spread = max(width, height) * rng.uniform(0.4, 1.2)
    lamp = 1 + rng.uniform(0.1, 0.5) * np.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / spread**2)
    edge = ((xs / width - 0.5) ** 2 + (ys / height - 0.5) ** 2) * rng.uniform(0.3, 1.2)
    canvas *= (lamp * (1 - edge) * rng.uniform(0.6, 1.0))[..., None] * cast


def _placement(
    rng: Rng, side: int, width: int, height: int, centred: bool = False, aimed: bool = False
) -> npt.NDArray[np.float32]:
    """Where a poster's corners land in the scene: rotated, tilted in perspective, maybe cut off;
    ``centred`` well inside the scene, ``aimed`` within a tenth of its size of its middle."""
    angle = rng.normal(0, 0.12) if rng.random() < 0.85 else rng.uniform(-0.7, 0.7)
    if aimed:
        cx = width * (0.5 + rng.uniform(-0.1, 0.1))
        cy = height * (0.5 + rng.uniform(-0.1, 0.1))
    else:
        slack = -0.3 * min(width, height) if centred else 0.25 * side
        cx = rng.uniform(-slack, width + slack)
        cy = rng.uniform(-slack, height + slack)
    half = side / 2
    square = np.array([[-half, -half], [half, -half], [half, half], [-half, half]])
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    corners = square @ rot.T + (cx, cy)
    tilt = rng.normal(0, 0.07 * side, (4, 2))
    return np.asarray(corners + tilt, np.float32)


def _box_of(points: npt.NDArray[np.float32]) -> tuple[float, float, float, float]:
    return (
        float(points[:, 0].min()),
        float(points[:, 1].min()),
        float(points[:, 0].max()),
        float(points[:, 1].max()),
    )


def _visible_fraction(box: tuple[float, float, float, float], width: int, height: int) -> float:
    area = (box[2] - box[0]) * (box[3] - box[1])
    cw = max(0.0, min(box[2], width) - max(box[0], 0.0))
    ch = max(0.0, min(box[3], height) - max(box[1], 0.0))
    return cw * ch / area if area > 0 else 0.0


def _warp(
    values: FloatImage, corners: npt.NDArray[np.float32], width: int, height: int
) -> tuple[tuple[int, int], FloatImage] | None:
    """A poster-sized map warped so that its corners land on ``corners``, cut to a ``width``
    x ``height`` scene: where the cut starts (x, y) and the warped values; ``None`` outside."""
    x0, y0 = (max(0, int(np.floor(v))) for v in corners.min(axis=0))
    x1 = min(width, int(np.ceil(corners[:, 0].max())))
    y1 = min(height, int(np.ceil(corners[:, 1].max())))
    if x1 <= x0 or y1 <= y0:
        return None
    side = values.shape[0]
    src = np.array([[0, 0], [side, 0], [side, side], [0, side]], np.float32)
    warp = cv2.getPerspectiveTransform(src, corners - np.array([x0, y0], np.float32))
    out = cv2.warpPerspective(values, warp, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR)
    return (x0, y0), np.asarray(out, np.float32)


def _paste(canvas: FloatImage, poster: Poster, corners: npt.NDArray[np.float32]) -> None:
    """Warp ``poster`` onto ``canvas`` (in place) so its corners land on ``corners``."""
    height, width = canvas.shape[:2]
    rgba = np.dstack([poster.color * poster.alpha[..., None], poster.alpha])  # premultiplied
    warped = _warp(rgba, corners, width, height)
    if warped is None:
        return
    (x0, y0), out = warped
    alpha = out[..., 3:4]
    roi = canvas[y0 : y0 + out.shape[0], x0 : x0 + out.shape[1]]
    roi *= 1 - alpha
    roi += out[..., :3]


def _faded(
    rng: Rng, poster: Poster, canvas: FloatImage, corners: npt.NDArray[np.float32]
) -> Poster:
    """Bare ink recoloured toward the mean colour of the scene its strokes will cover,
    keeping 30-80 % of the difference: a character a person makes out, less plainly
    (the 福 the vote missed most often)."""
    keep = rng.uniform(0.3, 0.8)
    height, width = canvas.shape[:2]
    warped = _warp(poster.ink, corners, width, height)
    if warped is None:
        return poster
    (x0, y0), ink = warped
    under = canvas[y0 : y0 + ink.shape[0], x0 : x0 + ink.shape[1]][ink >= 0.5]
    if not len(under):
        return poster
    ground = under.mean(axis=0)
    return replace(poster, color=(ground + (poster.color - ground) * keep).astype(np.float32))


def ink_contrast(canvas: FloatImage, poster: Poster, corners: npt.NDArray[np.float32]) -> float:
    """How plainly a pasted character stands out from what is right around its strokes.

    The CIE 1976 colour difference (ΔE*ab) across the strokes' outline, on
    ``canvas`` (float BGR) as it is now: at each pixel just outside a stroke,
    between the mean colour of the stroke pixels and of the outside pixels
    within a stroke's width of it (a tenth of the character, at least
    ``CONTRAST_MIN_WINDOW``); the median over the outline. Local: what lies
    next to the strokes counts, not the mean of a busy photo around them.
    Paper for a poster, the scene itself for bare ink. NaN when no stroke is
    in the frame.
    """
    height, width = canvas.shape[:2]
    warped = _warp(poster.ink, corners, width, height)
    if warped is None:
        return math.nan
    (x0, y0), ink = warped
    in_stroke = ink >= 0.5
    ys, xs = np.nonzero(in_stroke)
    if not len(xs):
        return math.nan
    side = max(ys.max() - ys.min(), xs.max() - xs.min()) + 1
    window = max(CONTRAST_MIN_WINDOW, side // 10 | 1)
    strokes = in_stroke.astype(np.float32)
    outside = (ink <= 0.05).astype(np.float32)  # past the strokes' soft, resized edges
    near = cv2.dilate(strokes, np.ones((window, window), np.uint8)) > 0
    outline = near & (outside > 0)
    if not outline.any():
        return math.nan
    patch = canvas[y0 : y0 + ink.shape[0], x0 : x0 + ink.shape[1]]
    lab = cv2.cvtColor(np.clip(patch / 255.0, 0.0, 1.0).astype(np.float32), cv2.COLOR_BGR2Lab)
    means = []
    for mask in (strokes, outside):
        weight = cv2.blur(mask, (window, window))[outline]
        total = cv2.blur(lab * mask[..., None], (window, window))[outline]
        means.append(total / np.maximum(weight, 1e-6)[:, None])
    return float(np.median(np.linalg.norm(means[0] - means[1], axis=1)))


def _in_scene(
    poster: Poster, corners: npt.NDArray[np.float32], points: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``N x 2`` poster pixel ``points`` where they land in the scene."""
    side = poster.alpha.shape[0]
    src = np.array([[0, 0], [side, 0], [side, side], [0, side]], np.float32)
    warp = cv2.getPerspectiveTransform(src, corners)
    return np.asarray(cv2.perspectiveTransform(points[None], warp)[0], np.float32)


def _box_corners(box: tuple[float, float, float, float]) -> npt.NDArray[np.float32]:
    x0, y0, x1, y1 = box
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)


def _share_in_frame(
    poster: Poster,
    corners: npt.NDArray[np.float32],
    box: tuple[float, float, float, float],
    width: int,
    height: int,
) -> float:
    """Share of ``box`` (poster pixels) that lands inside the frame, on an 8 x 8 grid of points."""
    x0, y0, x1, y1 = box
    xs, ys = np.meshgrid(np.linspace(x0, x1, 8), np.linspace(y0, y1, 8))
    points = _in_scene(poster, corners, np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32))
    inside = (points[:, 0] >= 0) & (points[:, 0] < width) & (points[:, 1] >= 0)
    return float(np.mean(inside & (points[:, 1] < height)))


def _background(
    rng: Rng, split: Split, width: int, height: int, ornament_share: float = 0.0
) -> FloatImage:
    """A random crop of a background photo, or a procedural wall, as float BGR; with
    ``ornament_share``, that share of them painted architecture (:func:`_ornament`)."""
    # Drawn only when asked for: the generator's own mix stays as it was.
    if ornament_share > 0 and rng.random() < ornament_share:
        return _ornament(rng, width, height)
    if rng.random() < 0.75:
        photos = load_photos(split)
        photo = photos[rng.integers(len(photos))]
        ph, pw = photo.shape[:2]
        crop = rng.uniform(0.35, 1.0)
        cw = max(8, min(pw, round(pw * crop)))
        ch = max(8, min(ph, round(cw * height / width)))
        x = rng.integers(pw - cw + 1)
        y = rng.integers(ph - ch + 1)
        patch = photo[y : y + ch, x : x + cw]
        if rng.random() < 0.5:
            patch = patch[:, ::-1]
        return cv2.resize(patch, (width, height), interpolation=cv2.INTER_LINEAR).astype(np.float32)
    base = rng.uniform(40, 230, 3).astype(np.float32)
    ramp = np.linspace(rng.uniform(0.6, 1.0), rng.uniform(0.6, 1.2), width, dtype=np.float32)
    wall = np.broadcast_to(base * ramp[None, :, None], (height, width, 3)).copy()
    return wall


ORNAMENT_PALETTE = np.array(
    [
        (40, 40, 190), (30, 30, 120), (60, 150, 50), (40, 90, 30), (160, 100, 30),
        (120, 60, 20), (40, 180, 220), (30, 120, 170), (230, 230, 230), (30, 30, 30),
        (150, 150, 60), (70, 110, 200),
    ],
    np.float32,
)  # fmt: skip
"""BGR colours of painted temple woodwork: vermilion, maroon, greens, blues, gold, ochre,
white, black, teal, orange."""


def _ornament(rng: Rng, width: int, height: int) -> FloatImage:
    """Painted architecture, as float BGR: horizontal bands, each plain, a row of motifs
    (boxes, discs, diamonds, short strokes), a lattice of thin bars, slats, roof tiles or a
    mosaic of small cells, in a few strong colours, with pillars across them. Its edges are
    as dense and stroke-like as a temple's beams and windows, where bare ink on a held-out
    photo was most often missed."""
    scale = min(width, height) / 480
    colours = ORNAMENT_PALETTE[rng.choice(len(ORNAMENT_PALETTE), 4, replace=False)]
    colours = np.clip(colours * rng.uniform(0.75, 1.2, (4, 1)), 0, 255)
    paints = [tuple(float(v) for v in c) for c in colours]  # as OpenCV's drawing takes them
    canvas = np.empty((height, width, 3), np.float32)
    canvas[:] = colours[0]
    y = 0
    while y < height:
        band = max(4, round(rng.uniform(0.04, 0.3) * height))
        ink, ground = (int(i) for i in rng.choice(4, 2, replace=False))
        pen = paints[ink]
        cv2.rectangle(canvas, (0, y), (width, y + band), paints[ground], -1)
        kind = rng.integers(6)
        thick = max(1, round(rng.uniform(1, 6) * scale))
        if kind == 1:  # a row of motifs
            step = max(6, round(rng.uniform(0.5, 1.5) * band))
            motif = rng.integers(4)
            for x in range(int(rng.integers(step)), width + step, step):
                cx, cy, r = x, y + band // 2, max(2, round(band * rng.uniform(0.25, 0.45)))
                if motif == 0:
                    cv2.rectangle(canvas, (cx - r, cy - r), (cx + r, cy + r), pen, thick)
                elif motif == 1:
                    cv2.circle(canvas, (cx, cy), r, pen, thick, cv2.LINE_AA)
                elif motif == 2:
                    diamond = np.array([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)])
                    cv2.polylines(canvas, [diamond.astype(np.int32)], True, pen, thick)
                else:
                    cv2.line(canvas, (cx - r, cy + r), (cx + r, cy - r), pen, thick)
        elif kind == 2:  # a lattice window
            step = max(4, round(rng.uniform(6, 24) * scale))
            for x in range(int(rng.integers(step)), width, step):
                cv2.line(canvas, (x, y), (x, y + band), pen, thick)
            for yy in range(y + int(rng.integers(step)), y + band, step):
                cv2.line(canvas, (0, yy), (width, yy), pen, thick)
        elif kind == 3:  # slats
            step = max(3, round(rng.uniform(3, 12) * scale))
            for x in range(int(rng.integers(step)), width, step):
                cv2.line(canvas, (x, y), (x, y + band), pen, max(1, step // 3))
        elif kind == 4:  # roof tiles: rows of arcs
            r = max(2, round(rng.uniform(3, 12) * scale))
            for row, yy in enumerate(range(y, y + band, r)):
                for x in range(-(row % 2) * r, width + r, 2 * r):
                    cv2.ellipse(canvas, (x, yy), (r, r), 0, 0, 180, pen, thick)
        elif kind == 5:  # a painted mosaic of small cells
            cell = max(2, round(rng.uniform(4, 16) * scale))
            cells = rng.integers(4, size=(band // cell + 1, width // cell + 1))
            mosaic = np.repeat(np.repeat(colours[cells], cell, 0), cell, 1)
            canvas[y : y + band] = mosaic[: min(band, height - y), :width]
        y += band
    for _ in range(int(rng.integers(0, 4))):  # pillars
        x, half = int(rng.integers(width)), max(2, round(rng.uniform(0.02, 0.08) * width))
        cv2.rectangle(canvas, (x - half, 0), (x + half, height), paints[int(rng.integers(4))], -1)
    return canvas


def _clutter(rng: Rng, canvas: FloatImage, count: int) -> None:
    """Rectangles, discs and brush strokes: things that are red, square or ink-like but not 福."""
    height, width = canvas.shape[:2]
    scale = min(width, height)
    for _ in range(count):
        colour = tuple(float(c) for c in rng.uniform(0, 255, 3))
        if rng.random() < 0.3:
            colour = (float(rng.uniform(10, 60)), float(rng.uniform(10, 60)), 200.0)
        kind = rng.integers(3)
        x, y = int(rng.integers(width)), int(rng.integers(height))
        size = int(rng.uniform(0.03, 0.3) * scale)
        if kind == 0:
            cv2.rectangle(
                canvas, (x, y), (x + size, y + int(size * rng.uniform(0.3, 2))), colour, -1
            )
        elif kind == 1:
            cv2.circle(canvas, (x, y), size // 2, colour, -1, cv2.LINE_AA)
        else:
            spread = rng.normal(0, size / 2, (int(rng.integers(2, 6)), 2))
            points = (spread + np.array([x, y])).astype(np.int32)
            thickness = max(1, int(rng.uniform(0.02, 0.12) * size))
            cv2.polylines(canvas, [points], False, colour, thickness, cv2.LINE_AA)


def _noise(rng: Rng, height: int, width: int, sigma: float) -> FloatImage:
    """Sensor noise from ``rng`` (not OpenCV's global generator, so that seeds reproduce)."""
    noise = rng.standard_normal((height, width, 3), dtype=np.float32)
    noise *= sigma
    return noise


def _degrade(rng: Rng, canvas: FloatImage) -> ImageBGR:
    """Camera effects: lighting, colour cast, blur, sensor noise and JPEG compression."""
    height, width = canvas.shape[:2]
    gain = rng.uniform(0.55, 1.3) * rng.uniform(0.85, 1.15, 3).astype(np.float32)
    ramp = np.linspace(rng.uniform(0.7, 1.1), rng.uniform(0.7, 1.1), width, dtype=np.float32)
    canvas *= gain.astype(np.float32)
    canvas *= ramp[None, :, None]
    blur = rng.random()
    if blur < 0.25:
        canvas = np.asarray(cv2.GaussianBlur(canvas, (0, 0), rng.uniform(0.5, 1.6)), np.float32)
    elif blur < 0.45:
        length = int(rng.integers(3, 10))
        kernel = np.zeros((length, length), np.float32)
        kernel[length // 2] = 1.0 / length
        rot = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), rng.uniform(0, 180), 1)
        kernel = np.asarray(cv2.warpAffine(kernel, rot, (length, length)), np.float32)
        kernel /= max(float(kernel.sum()), 1e-6)
        canvas = np.asarray(cv2.filter2D(canvas, -1, kernel), np.float32)
    noise = _noise(rng, height, width, float(rng.uniform(1, 8)))
    image: ImageBGR = np.clip(canvas + noise, 0, 255).astype(np.uint8)
    if rng.random() < 0.6:
        quality = int(rng.integers(35, 95))
        _, blob = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
        image = np.asarray(cv2.imdecode(blob, cv2.IMREAD_COLOR), np.uint8)
    return image


def _pick_content(rng: Rng, content: Content, options: SceneOptions) -> str:
    if content != "mixed":
        return content
    mix = options.content_p()
    return mix[rng.choice(len(mix), p=[weight for _, weight in mix])][0]


def radical_in_view(
    poster: Poster, corners: npt.NDArray[np.float32], width: int, height: int
) -> bool:
    """Whether at least ``RADICAL_MIN_VISIBLE`` of a 福 poster's radical lands in the frame."""
    return (
        _share_in_frame(poster, corners, poster.radical_box, width, height) >= RADICAL_MIN_VISIBLE
    )


class Placed(NamedTuple):
    """The posters that :func:`_place_posters` pasted: the ink corners of the 福 labelled and
    of those ignored, the labelled ones' posters with their corners (for
    :func:`ink_contrast`, which only clips measure), and the ink corners of the others
    (look-alikes and festive characters)."""

    targets: list[npt.NDArray[np.float32]]
    ignored: list[npt.NDArray[np.float32]]
    labelled: list[tuple[Poster, npt.NDArray[np.float32]]]
    others: list[npt.NDArray[np.float32]]


def _place_posters(
    rng: Rng, canvas: FloatImage, split: Split, content: str, options: SceneOptions
) -> Placed:
    """Paste this scene's posters onto ``canvas``; return where each 福 landed.

    With ``cut_look_alikes``, look-alikes may be cut by the frame down to
    ``CUT_MIN_VISIBLE`` and a 福 is labelled only with its radical and
    ``LABEL_MIN_VISIBLE`` of its ink in view, and ignored otherwise; without,
    every poster is at least ``MIN_VISIBLE`` in the frame and every 福 placed
    is labelled.
    """
    height, width = canvas.shape[:2]
    glyphs = load_glyphs(split)
    n_target = 1 + int(rng.random() < 0.2) + int(rng.random() < 0.05) if content == "fu" else 0
    n_other = int(rng.choice(4, p=(0.35, 0.35, 0.2, 0.1)))
    if content == "negative":
        n_other = max(1, n_other)
    kinds = [True] * n_target + [False] * (0 if content == "empty" else n_other)
    taken: list[tuple[float, float, float, float]] = []
    targets: list[npt.NDArray[np.float32]] = []
    ignored: list[npt.NDArray[np.float32]] = []
    labelled: list[tuple[Poster, npt.NDArray[np.float32]]] = []
    others: list[npt.NDArray[np.float32]] = []
    scale = min(width, height)
    log_low, log_high = (np.log(share) for share in options.glyph_fill)
    for is_target in kinds:
        source = glyphs
        # Drawn only when asked for, as below: the generator's own mix stays as it was.
        if options.hand_share > 0 and rng.random() < options.hand_share:
            source = load_glyphs(split, hand=True)
        pool = source.target if is_target else source.negatives
        if not is_target and options.favoured_share and rng.random() < options.favoured_share:
            favoured = pool[np.isin(source.negative_chars, list(options.favoured_look_alikes))]
            pool = favoured if len(favoured) else pool
        mask = pool[rng.integers(len(pool))]
        if options.brush_share > 0 and rng.random() < options.brush_share:
            mask = handwritten(rng, mask)
        glyph_side = max(12, round(scale * np.exp(rng.uniform(log_low, log_high))))
        poster = _make_poster(rng, mask, glyph_side, options)
        aimed = options.aimed and not taken
        for attempt in range(_PLACEMENT_TRIES):
            # A 福 that found no free spot goes in the middle: "fu" scenes always hold one.
            last_chance = is_target and not targets and attempt == _PLACEMENT_TRIES - 1
            corners = _placement(rng, poster.alpha.shape[0], width, height, last_chance, aimed)
            ink = _in_scene(poster, corners, _box_corners(poster.ink_box))
            box = _box_of(corners)
            free = last_chance or aimed or all(_overlap(box, other) < 0.15 for other in taken)
            least = CUT_MIN_VISIBLE if options.cut_look_alikes and not is_target else MIN_VISIBLE
            visible = _visible_fraction(_box_of(ink), width, height)
            if free and visible >= least:
                # The draw is made only when asked for: the generator's own mix stays as it was.
                fade = poster.bare and options.low_contrast_share > 0
                if fade and rng.random() < options.low_contrast_share:
                    poster = _faded(rng, poster, canvas, corners)
                _paste(canvas, poster, corners)
                taken.append(box)
                if is_target:
                    is_labelled = not options.cut_look_alikes or (
                        visible >= LABEL_MIN_VISIBLE
                        and radical_in_view(poster, corners, width, height)
                    )
                    (targets if is_labelled else ignored).append(ink)
                    if is_labelled:
                        labelled.append((poster, corners))
                else:
                    others.append(ink)
                break
    return Placed(targets, ignored, labelled, others)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Intersection over the smaller box's area."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    small = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return ix * iy / small if small > 0 else 0.0


def _clip_boxes(corner_sets: list[npt.NDArray[np.float32]], width: int, height: int) -> Boxes:
    boxes = np.zeros((len(corner_sets), 4), np.float32)
    for i, corners in enumerate(corner_sets):
        boxes[i] = _box_of(corners)
    boxes[:, 0::2] = boxes[:, 0::2].clip(0, width)
    boxes[:, 1::2] = boxes[:, 1::2].clip(0, height)
    return boxes


def render_scene(
    seed: int,
    width: int = 320,
    height: int = 240,
    split: Split = "train",
    content: Content = "mixed",
    options: SceneOptions = GENERATOR_MIX,
) -> LabelledScene:
    """:func:`render_posters` without the other characters' boxes: what a detector learns."""
    image, boxes, ignore, _ = render_posters(seed, width, height, split, content, options)
    return LabelledScene(image, boxes, ignore)


def render_posters(
    seed: int,
    width: int = 320,
    height: int = 240,
    split: Split = "train",
    content: Content = "mixed",
    options: SceneOptions = GENERATOR_MIX,
) -> PosterScene:
    """One synthetic camera still, the boxes of every 福 in it, the 福 to ignore, and the rest.

    Args:
        seed: the scene is a pure function of the arguments.
        width, height: image size in pixels.
        split: "train" draws from training fonts and photos, "eval" from held-out ones.
        content: "fu" holds at least one 福 poster (ignored instead of labelled,
            with ``cut_look_alikes``, in the few scenes where the frame cuts it),
            "negative" only posters of look-alike or other festive characters,
            "empty" none, "mixed" a random one of these.
        options: the mix of posters, for training (:class:`SceneOptions`).

    Returns:
        ``(image, boxes, ignore, others)``: a ``height x width x 3`` BGR uint8
        image and three ``N x 4`` float32 arrays of ink boxes ``(x0, y0, x1,
        y1)``, clipped to the image: the 福 labelled, the 福 ignored, and every
        other character (look-alike or festive).
    """
    rng = np.random.default_rng(seed)
    canvas = _background(rng, split, width, height, options.ornament_share)
    _clutter(rng, canvas, int(rng.integers(0, 6)))
    picked = _pick_content(rng, content, options)
    placed = _place_posters(rng, canvas, split, picked, options)
    if rng.random() < 0.2:
        _clutter(rng, canvas, 1)  # may occlude a poster a little, like a hand or a door frame
    if options.media_share > 0 and rng.random() < options.media_share:
        _room_light(rng, canvas)
    return PosterScene(
        _degrade(rng, canvas),
        _clip_boxes(placed.targets, width, height),
        _clip_boxes(placed.ignored, width, height),
        _clip_boxes(placed.others, width, height),
    )


def make_clip(
    seed: int,
    n_frames: int = 60,
    fps: float = 30.0,
    width: int = 640,
    height: int = 480,
    content: Content = "fu",
    options: SceneOptions = GENERATOR_MIX,
) -> Clip:
    """A short hand-held camera video of one scene, with the 福 boxes of every frame.

    The camera shakes and drifts a little. With ``content="fu"`` or
    ``"negative"`` the scene holds its poster(s) throughout; with ``"empty"``
    no poster; with ``"mixed"`` the 福 poster is in view only during the middle
    half of the clip (frames ``n_frames // 4`` to ``3 * n_frames // 4 - 1``)
    and look-alike posters before and after. Boxes are ``N x 4`` float32 arrays.

    ``options`` change what the posters are (:class:`SceneOptions`); a clip labels
    every 福, so ``cut_look_alikes`` is refused, and its content is the caller's, so is a
    ``negative_share`` other than the generator's.

    Fast (about 10 ms a 640x480 frame) and deterministic by ``seed``.

    Raises:
        ValueError: ``options.cut_look_alikes`` is set, or ``options.negative_share`` moved.
    """
    if options.cut_look_alikes:
        raise ValueError("clips label every 福 they show: cut_look_alikes is for still scenes")
    if options.negative_share != NEGATIVE_SHARE:
        raise ValueError("a clip's content is its caller's: negative_share is for still scenes")
    rng = np.random.default_rng(seed)
    margin = 0.06
    big_w, big_h = round(width * (1 + 2 * margin)), round(height * (1 + 2 * margin))
    split: Split = "eval"
    base = _background(rng, split, big_w, big_h, options.ornament_share)
    _clutter(rng, base, int(rng.integers(0, 4)))
    if content == "mixed":
        with_fu = base.copy()
        placed = _place_posters(rng, with_fu, split, "fu", options)
        without = base.copy()
        _place_posters(rng, without, split, "negative", options)
        views = [(without, []), (with_fu, placed.targets)]
    else:
        placed = _place_posters(rng, base, split, content, options)
        views = [(base, placed.targets)]
    # Measured once every poster is down: a later one may overlap an earlier one a little.
    contrast = tuple(ink_contrast(views[-1][0], *pasted) for pasted in placed.labelled)
    ready = [(cv2.convertScaleAbs(v), t) for v, t in views]
    first, last = n_frames // 4, 3 * n_frames // 4
    drift = np.cumsum(rng.normal(0, 0.6, (n_frames, 3)), axis=0) / np.sqrt(fps / 30.0)
    shake = rng.normal(0, 0.8, (n_frames, 3))
    frames: list[ImageBGR] = []
    boxes: list[Boxes] = []
    for i in range(n_frames):
        image, corner_sets = ready[-1] if content != "mixed" or first <= i < last else ready[0]
        dx, dy, rot = drift[i] + shake[i]
        move = cv2.getRotationMatrix2D((big_w / 2, big_h / 2), rot * 0.3, 1.0)
        move[:, 2] += (dx - margin * width, dy - margin * height)
        frame = cv2.warpAffine(image, move, (width, height), borderMode=cv2.BORDER_REFLECT)
        noise = _noise(rng, height, width, 3.0)
        frames.append(np.asarray(cv2.add(frame, noise, dtype=cv2.CV_8U), np.uint8))
        moved = [cv2.transform(c[None], move)[0] for c in corner_sets]
        boxes.append(_clip_boxes(moved, width, height))
    return Clip(frames, boxes, contrast)
