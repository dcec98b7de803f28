"""The committed glyph bank: ink masks of 福 and look-alike characters, split by font.

Numpy only, so that tests, CI and the training machine need no fonts; the bank
is rebuilt from installed fonts by :mod:`detectors.synth.glyphs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

BANK_PATH = Path(__file__).resolve().parent / "glyph_bank.npz"
GLYPH_SIZE = 96
TARGET = "福"
HARD_NEGATIVES = "富幅副逼辐蝠祸祝禄神"
FESTIVE = "春喜寿财"
LOOK_ALIKES = HARD_NEGATIVES + FESTIVE
"""Every character of the bank but 福."""
CHARACTERS = TARGET + LOOK_ALIKES
HAND_FONTS = (
    "ma-shan-zheng",
    "zhi-mang-xing",
    "liu-jian-mao-cao",
    "long-cang",
    "yuji-syuku",
    "yuji-boku",
    "yuji-mai",
    "kouzan-kaisho",
    "kouzan-gyosho",
    "kouzan-sosho",
    "aoyagi-kouzan",
    "aoyagi-soseki",
    "arphic-gkai",
    "tw-kai",
    "zcool-kuaile",
    "zcool-qingke-huangyou",
    "yusei-magic",
    "hachi-maru-pop",
    "klee",
    "seto",
    "kiloji",
)
"""Faces written by hand: brush calligraphy (regular, running and cursive script), designed
display faces and handwriting. Their glyphs are a pool of their own (``load_glyphs(...,
hand=True)``), drawn from only as often as a scene asks, so that the generator's own mix
keeps the print faces it always had."""
HELD_OUT_FONTS = (
    "cwtex-kai",
    "lxgw-wenkai",
    "noto-serif-tc-bold",
    "wqy-zenhei",
    "zhi-mang-xing",
    "kouzan-sosho",
    "yusei-magic",
)
"""Fonts whose glyphs only the evaluation split sees."""


@dataclass(frozen=True, slots=True)
class GlyphSet:
    """Glyph masks of one split: ``target`` are 福, ``negatives`` every other character, and
    ``negative_chars`` which character each of those is."""

    target: npt.NDArray[np.uint8]
    negatives: npt.NDArray[np.uint8]
    negative_chars: npt.NDArray[np.str_]


@lru_cache(maxsize=4)
def load_glyphs(split: str, hand: bool = False) -> GlyphSet:
    """The glyphs of ``split`` ("train" or "eval"), from the committed bank: of the print
    faces, or with ``hand`` of the hand-written ones (``HAND_FONTS``).

    Raises:
        ValueError: ``split`` is neither "train" nor "eval".
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', not {split!r}")
    with np.load(BANK_PATH) as bank:
        masks, chars, fonts = bank["masks"], bank["chars"], bank["fonts"]
    held_out = np.isin(fonts, HELD_OUT_FONTS)
    in_split = (held_out if split == "eval" else ~held_out) & (np.isin(fonts, HAND_FONTS) == hand)
    is_target = chars == TARGET
    others = in_split & ~is_target
    return GlyphSet(masks[in_split & is_target], masks[others], chars[others])
