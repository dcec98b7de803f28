"""eval-frame-cost: both paths over the same frames, in one table."""

import numpy as np
import pytest

from detectors.onnx_detector import load_detector
from evals.frame_cost import as_decoded, cost_rows, format_rows


def test_both_paths_run_the_same_frames_and_count_their_network_runs() -> None:
    rows = cost_rows(load_detector("l"), ((320, 240),), ("fu",), clips=1, seconds=0.2)
    assert [(r.size, r.content, r.path, r.frames) for r in rows] == [
        ("320x240", "fu", "focused", 3),
        ("320x240", "fu", "unfocused", 3),
    ]
    focused, unfocused = rows
    assert 1 <= focused.runs <= unfocused.runs  # the first look, and close-ups at most as many
    assert all(r.network_ms > 0 and r.ratio == r.frame_ms / r.network_ms for r in rows)
    table = format_rows(rows).splitlines()
    assert len(table) == 3 and table[0].startswith("frame")


@pytest.mark.parametrize(
    ("size", "decoded"),
    [((1280, 720), (640, 360)), ((640, 480), (320, 240)), ((638, 480), (638, 480))],
)
def test_frames_reach_the_detector_at_the_size_a_session_decodes(
    size: tuple[int, int], decoded: tuple[int, int]
) -> None:
    frame = np.full((size[1], size[0], 3), 128, np.uint8)
    (image,) = as_decoded([frame], 320)
    assert (image.shape[1], image.shape[0]) == decoded
