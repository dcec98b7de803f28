"""Hand-written glyphs (detectors.synth.brush): deterministic by seed, ink kept in the square."""

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from detectors.synth import brush
from detectors.synth.bank import GLYPH_SIZE, load_glyphs

Mask = npt.NDArray[np.uint8]
HANDS: list[Callable[[np.random.Generator, Mask], Mask]] = [
    brush.brush,
    brush.cursive,
    brush.pen,
    brush.handwritten,
]


def _fu() -> Mask:
    return load_glyphs("train").target[0]


def _ink_box(mask: Mask) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask >= 128)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


@pytest.mark.parametrize("hand", HANDS)
def test_a_hand_is_deterministic_by_seed_and_keeps_the_banks_shape(
    hand: Callable[[np.random.Generator, Mask], Mask],
) -> None:
    fu = _fu()
    once = hand(np.random.default_rng(3), fu)
    again = hand(np.random.default_rng(3), fu)
    other = hand(np.random.default_rng(4), fu)
    assert once.shape == (GLYPH_SIZE, GLYPH_SIZE) and once.dtype == np.uint8
    assert np.array_equal(once, again) and not np.array_equal(once, other)
    assert not np.array_equal(once, fu)


@pytest.mark.parametrize("hand", HANDS)
def test_written_ink_touches_the_square_on_its_longer_side(
    hand: Callable[[np.random.Generator, Mask], Mask],
) -> None:
    for seed in range(6):
        x0, y0, x1, y1 = _ink_box(hand(np.random.default_rng(seed), _fu()))
        assert max(x1 - x0, y1 - y0) >= GLYPH_SIZE - 1
        assert 0 <= x0 < x1 <= GLYPH_SIZE and 0 <= y0 < y1 <= GLYPH_SIZE


def test_a_pen_writes_thinner_than_the_print_it_follows() -> None:
    fu = _fu()
    pens = [brush.pen(np.random.default_rng(seed), fu) for seed in range(6)]
    assert np.mean([(p >= 128).mean() for p in pens]) < (fu >= 128).mean()


def test_a_lifted_brush_keeps_a_hairline_of_every_stroke() -> None:
    fu = _fu()
    lines = brush.centre_lines(fu) > 0
    for seed in range(6):
        assert np.all(brush.pressure(np.random.default_rng(seed), fu)[lines] == 255)


def test_strokes_run_together_join_the_ink() -> None:
    fu = _fu()
    joined = brush.run_together(np.random.default_rng(0), fu)
    assert np.all(joined[fu >= 128] >= 128)  # nothing taken away
    assert (joined >= 128).sum() > (fu >= 128).sum()


def test_refit_leaves_an_empty_mask_empty() -> None:
    empty = np.zeros((GLYPH_SIZE, GLYPH_SIZE), np.uint8)
    assert np.array_equal(brush.refit(empty), empty)
