import math

import numpy as np
import pytest

from voting.smoothing import OneEuroBox, OneEuroConfig

BOX = (100.0, 100.0, 200.0, 200.0)


def test_first_sample_and_repeated_timestamps_pass_through():
    smoother = OneEuroBox(OneEuroConfig())
    assert smoother.update(BOX, 0.0) == BOX
    assert smoother.update((0.0, 0.0, 1.0, 1.0), 0.0) == BOX


@pytest.mark.parametrize("fps", [5, 15, 30])
def test_still_box_jitter_is_reduced(fps):
    rng = np.random.default_rng(fps)
    smoother = OneEuroBox(OneEuroConfig())
    raw, out = [], []
    for k in range(fps * 4):
        noisy = tuple(v + rng.normal(0, 3) for v in BOX)
        raw.append(noisy)
        out.append(smoother.update(noisy, k / fps))
    raw_steps = np.diff(np.array(raw[fps:]), axis=0).std()
    out_steps = np.diff(np.array(out[fps:]), axis=0).std()
    assert out_steps < 0.6 * raw_steps


def test_moving_box_is_followed_with_little_lag():
    smoother = OneEuroBox(OneEuroConfig())
    speed = 200.0  # px/s, two box sizes a second
    for k in range(31):
        t = k / 30
        box = (100 + speed * t, 100.0, 200 + speed * t, 200.0)
        out = smoother.update(box, t)
    assert abs(out[0] - box[0]) < 0.1 * speed  # less than 100 ms behind


@pytest.mark.parametrize(
    "kwargs", [{"min_cutoff": 0.0}, {"d_cutoff": -1.0}, {"beta": -0.1}, {"min_cutoff": math.nan}]
)
def test_config_is_checked(kwargs):
    with pytest.raises(ValueError, match="One Euro"):
        OneEuroConfig(**kwargs)
