"""Renders the glyph bank: 福, its look-alikes and other festive characters from installed fonts.

Train-time only (needs Pillow and CJK fonts: ``make fonts`` installs them, the
Debian packages and the npm registry's ``@fontsource`` calligraphy families into
``build/fonts``). The result is committed as ``detectors/synth/glyph_bank.npz``
so that the scene generator, the tests and the GPU machine need no fonts. Run
``python -m detectors.synth.glyphs`` to rebuild it.

The print faces come first and the hand-written ones (``bank.HAND_FONTS``: brush
calligraphy in regular, running and cursive script, handwriting) after them, so
that the print glyphs are stored as they were before the hand-written faces came.

Each glyph is stored as a ``GLYPH_SIZE`` square uint8 ink mask (255 = ink),
cropped to its ink and scaled to touch the square on its longer side, so that
its box in a scene is the ink's box.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from detectors.synth.bank import (
    BANK_PATH,
    CHARACTERS,
    GLYPH_SIZE,
    HAND_FONTS,
    HELD_OUT_FONTS,
    TARGET,
)

_RENDER_PX = 160
_HAND_STEP = 51
"""Hand-written glyphs keep six levels of coverage (0, 51, ... 255), which halves what they
add to the committed bank; a scene resizes and blurs them anyway."""


@dataclass(frozen=True, slots=True)
class FontFace:
    """A font file (``index`` in a collection), or a fontsource package's stylesheet: a CJK
    face split into subset files by unicode range."""

    name: str
    path: str
    index: int = 0

    def file_for(self, char: str) -> str | None:
        """The file that holds ``char``; None where a split face has no subset for it."""
        if not self.path.endswith(".css"):
            return self.path
        for first, last, file in _subsets(self.path):
            if first <= ord(char) <= last:
                return file
        return None


@lru_cache(maxsize=64)
def _subsets(css: str) -> tuple[tuple[int, int, str], ...]:
    """A fontsource stylesheet's ``(first, last, file)`` unicode ranges, files as paths."""
    root = Path(css).parent
    ranges = []
    for block in Path(css).read_text().split("@font-face")[1:]:
        url = re.search(r"url\(\./([^)]+\.woff2)\)", block)
        spans = re.search(r"unicode-range:([^;]+);", block)
        if url is None or spans is None:
            continue
        for span in spans.group(1).split(","):
            first, _, last = span.strip().removeprefix("U+").partition("-")
            ranges.append((int(first, 16), int(last or first, 16), str(root / url.group(1))))
    return tuple(ranges)


FONT_ROOT = "/usr/share/fonts"
FONTSOURCE = Path(__file__).resolve().parents[2] / "build/fonts/node_modules/@fontsource"
"""Where ``make fonts`` installs the npm registry's fontsource packages."""


def _fontsource(family: str) -> FontFace:
    return FontFace(family, str(FONTSOURCE / family / "400.css"))


FONTS = (
    FontFace("noto-sans-sc", f"{FONT_ROOT}/opentype/noto/NotoSansCJK-Regular.ttc", 2),
    FontFace("noto-sans-sc-bold", f"{FONT_ROOT}/opentype/noto/NotoSansCJK-Bold.ttc", 2),
    FontFace("noto-sans-tc-bold", f"{FONT_ROOT}/opentype/noto/NotoSansCJK-Bold.ttc", 3),
    FontFace("noto-serif-sc", f"{FONT_ROOT}/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
    FontFace("noto-serif-sc-bold", f"{FONT_ROOT}/opentype/noto/NotoSerifCJK-Bold.ttc", 2),
    FontFace("noto-serif-tc-bold", f"{FONT_ROOT}/opentype/noto/NotoSerifCJK-Bold.ttc", 3),
    FontFace("ukai", f"{FONT_ROOT}/truetype/arphic/ukai.ttc", 0),
    FontFace("uming", f"{FONT_ROOT}/truetype/arphic/uming.ttc", 0),
    FontFace("cwtex-fangsong", f"{FONT_ROOT}/truetype/cwtex/cwfs.ttf"),
    FontFace("cwtex-heibold", f"{FONT_ROOT}/truetype/cwtex/cwheib.ttf"),
    FontFace("cwtex-kai", f"{FONT_ROOT}/truetype/cwtex/cwkai.ttf"),
    FontFace("cwtex-ming", f"{FONT_ROOT}/truetype/cwtex/cwming.ttf"),
    FontFace("cwtex-yen", f"{FONT_ROOT}/truetype/cwtex/cwyen.ttf"),
    FontFace("lxgw-wenkai-bold", f"{FONT_ROOT}/truetype/lxgw-wenkai/LXGWWenKai-Bold.ttf"),
    FontFace("lxgw-wenkai-light", f"{FONT_ROOT}/truetype/lxgw-wenkai/LXGWWenKai-Light.ttf"),
    FontFace("lxgw-wenkai", f"{FONT_ROOT}/truetype/lxgw-wenkai/LXGWWenKai-Regular.ttf"),
    FontFace("wqy-microhei", f"{FONT_ROOT}/truetype/wqy/wqy-microhei.ttc", 0),
    FontFace("wqy-zenhei", f"{FONT_ROOT}/truetype/wqy/wqy-zenhei.ttc", 0),
    # Hand-written faces (HAND_FONTS): brush calligraphy, then handwriting.
    _fontsource("ma-shan-zheng"),
    _fontsource("zhi-mang-xing"),
    _fontsource("liu-jian-mao-cao"),
    _fontsource("long-cang"),
    _fontsource("yuji-syuku"),
    _fontsource("yuji-boku"),
    _fontsource("yuji-mai"),
    FontFace("kouzan-kaisho", f"{FONT_ROOT}/truetype/kouzan-mouhitsu/kouzan-mouhitsu.ttf"),
    FontFace("kouzan-gyosho", f"{FONT_ROOT}/truetype/kouzan-mouhitsu/kouzan-mouhitsu-gyosho.ttf"),
    FontFace("kouzan-sosho", f"{FONT_ROOT}/truetype/kouzan-mouhitsu/KouzanBrushFontSousyo.ttf"),
    FontFace("aoyagi-kouzan", f"{FONT_ROOT}/truetype/aoyagi-kouzan-t/AoyagiKouzanT.ttf"),
    FontFace("aoyagi-soseki", f"{FONT_ROOT}/truetype/aoyagi-soseki/aoyagi-soseki.ttf"),
    FontFace("arphic-gkai", f"{FONT_ROOT}/truetype/arphic-gkai00mp/gkai00mp.ttf"),
    FontFace("tw-kai", f"{FONT_ROOT}/truetype/cns11643/TW-Kai-98_1.ttf"),
    _fontsource("zcool-kuaile"),
    _fontsource("zcool-qingke-huangyou"),
    _fontsource("yusei-magic"),
    _fontsource("hachi-maru-pop"),
    FontFace("klee", f"{FONT_ROOT}/truetype/klee/KleeOne-SemiBold.ttf"),
    FontFace("seto", f"{FONT_ROOT}/truetype/seto/setofont.ttf"),
    FontFace("kiloji", f"{FONT_ROOT}/truetype/kiloji/kiloji.ttf"),
)


_MISSING = "\ue000"
"""A private-use code point: what a font draws for it is what it draws for a missing glyph."""


def _draw(font: ImageFont.FreeTypeFont, char: str) -> npt.NDArray[np.uint8]:
    canvas = Image.new("L", (2 * _RENDER_PX, 2 * _RENDER_PX), 0)
    ImageDraw.Draw(canvas).text((_RENDER_PX // 2, _RENDER_PX // 2), char, fill=255, font=font)
    return np.asarray(canvas)


def render_glyph(face: FontFace, char: str) -> npt.NDArray[np.uint8] | None:
    """``char`` in ``face``: a ``GLYPH_SIZE`` square ink mask cropped to its ink; None if absent."""
    path = face.file_for(char)
    if path is None:
        return None
    font = ImageFont.truetype(path, _RENDER_PX, index=face.index)
    ink = _draw(font, char)
    ys, xs = np.nonzero(ink > 64)
    if len(xs) == 0 or np.array_equal(ink, _draw(font, _MISSING)):
        return None
    crop = Image.fromarray(ink[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1])
    scale = GLYPH_SIZE / max(crop.size)
    size = (max(1, round(crop.width * scale)), max(1, round(crop.height * scale)))
    crop = crop.resize(size, Image.Resampling.LANCZOS)
    out = np.zeros((GLYPH_SIZE, GLYPH_SIZE), np.uint8)
    x0, y0 = (GLYPH_SIZE - size[0]) // 2, (GLYPH_SIZE - size[1]) // 2
    out[y0 : y0 + size[1], x0 : x0 + size[0]] = np.asarray(crop)
    return out


def build_bank(path: Path = BANK_PATH) -> None:
    """Render every character in every font and write the compressed bank to ``path``."""
    masks: list[npt.NDArray[np.uint8]] = []
    chars: list[str] = []
    fonts: list[str] = []
    for face in FONTS:
        for char in CHARACTERS:
            mask = render_glyph(face, char)
            if mask is not None and face.name in HAND_FONTS:
                mask = (np.round(mask / _HAND_STEP) * _HAND_STEP).astype(np.uint8)
            # Some faces share glyphs (Noto's SC and TC for most of these): keep one copy,
            # so that no held-out glyph is also a training glyph.
            if mask is not None and not any(np.array_equal(mask, m) for m in masks):
                masks.append(mask)
                chars.append(char)
                fonts.append(face.name)
    np.savez_compressed(path, masks=np.stack(masks), chars=np.array(chars), fonts=np.array(fonts))
    held = sorted(set(fonts) & set(HELD_OUT_FONTS))
    hand = sum(font in HAND_FONTS for font in fonts)
    print(
        f"{path}: {len(masks)} glyphs ({hand} hand-written), {len(FONTS)} fonts "
        f"(held out {held}), target {TARGET}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=BANK_PATH)
    build_bank(parser.parse_args(argv).out)


if __name__ == "__main__":
    main()
