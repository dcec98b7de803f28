"""Letterboxing and decoding of the dense head's outputs, table-driven."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from detectors.card import InputSpec, ModelCard
from detectors.network import InputBuffers, Letterbox, decode, letterbox


def card(width: int = 320, height: int = 240) -> ModelCard:
    return ModelCard(
        path=Path("unused.json"),
        tier="l",
        precision="int8",
        classes=("fu",),
        input=InputSpec("images", width, height),
        heatmap_output="heatmap",
        boxes_output="boxes",
        stride=8,
        threshold=0.5,
    )


@pytest.mark.parametrize(
    ("frame", "scale", "pad_x", "pad_y"),
    [
        ((480, 640), 0.5, 0, 0),
        ((720, 1280), 0.25, 0, 30),
        ((640, 480), 0.375, 70, 0),
        ((240, 320), 1.0, 0, 0),
        ((120, 160), 2.0, 0, 0),
    ],
)
def test_letterbox_keeps_aspect_and_centres(
    frame: tuple[int, int], scale: float, pad_x: int, pad_y: int
) -> None:
    image = np.full((*frame, 3), (10, 20, 200), np.uint8)  # red in BGR
    tensor, box_map = letterbox(image, card().input)
    assert tensor.shape == (1, 3, 240, 320) and tensor.dtype == np.float32
    assert box_map == Letterbox(scale, pad_x, pad_y)
    centre = tensor[0, :, 120, 160]
    assert np.allclose(centre, np.array([200, 20, 10]) / 255, atol=1e-6)  # RGB, x / 255
    if pad_y:
        assert np.allclose(tensor[0, :, 0, 160], 114 / 255)
    if pad_x:
        assert np.allclose(tensor[0, :, 120, 0], 114 / 255)


@pytest.mark.parametrize(
    ("box_map", "box", "frame", "expected"),
    [
        (Letterbox(0.5, 0, 0), (10, 20, 30, 40), (640, 480), (20, 40, 60, 80)),
        (Letterbox(0.25, 0, 30), (0, 30, 320, 210), (1280, 720), (0, 0, 1280, 720)),
        (Letterbox(0.5, 0, 0), (-5, -5, 400, 300), (640, 480), (0, 0, 640, 480)),  # clipped
    ],
)
def test_boxes_map_back_to_the_frame(
    box_map: Letterbox,
    box: tuple[float, float, float, float],
    frame: tuple[int, int],
    expected: tuple[float, float, float, float],
) -> None:
    assert box_map.to_frame(box, *frame) == pytest.approx(expected)


def maps(
    peaks: list[tuple[int, int, float]], ltrb: tuple[float, float, float, float] = (8, 8, 8, 8)
) -> tuple[np.ndarray, np.ndarray]:
    heat = np.zeros((1, 6, 8), np.float32)
    boxes = np.zeros((4, 6, 8), np.float32)
    for y, x, score in peaks:
        heat[0, y, x] = score
        boxes[:, y, x] = ltrb
    return heat, boxes


@pytest.mark.parametrize(
    ("peaks", "threshold", "expected"),
    [
        ([], 0.5, []),
        ([(2, 3, 0.4)], 0.5, []),  # below threshold
        ([(2, 3, 0.9)], 0.5, [(0, 0.9, (20.0, 12.0, 36.0, 28.0))]),  # centre (28, 20)
        (
            [(0, 0, 0.7), (5, 7, 0.8)],
            0.5,
            [(0, 0.8, (52.0, 36.0, 68.0, 52.0)), (0, 0.7, (-4.0, -4.0, 12.0, 12.0))],
        ),
        ([(2, 3, 0.9), (2, 4, 0.6)], 0.5, [(0, 0.9, (20.0, 12.0, 36.0, 28.0))]),  # not a 3x3 max
    ],
)
def test_decode_finds_local_maxima(
    peaks: list[tuple[int, int, float]], threshold: float, expected: list[object]
) -> None:
    heat, boxes = maps(peaks)
    found = decode(heat, boxes, 8, threshold)
    assert [(c, pytest.approx(s), pytest.approx(b)) for c, s, b in found] == expected


def test_decode_suppresses_overlapping_peaks() -> None:
    heat, boxes = maps(
        [(2, 2, 0.9), (2, 4, 0.8)], ltrb=(40, 40, 40, 40)
    )  # 16 px apart, 80 px boxes
    assert len(decode(heat, boxes, 8, 0.5)) == 1


def test_letterbox_into_reused_buffers_matches_a_fresh_blob() -> None:
    """Each frame overwrites the thread's buffers completely: padding of a taller frame does
    not survive into a wider one, and the values are blobFromImage's to the bit."""
    rng = np.random.default_rng(0)
    spec = card().input
    buffers = InputBuffers(spec)
    for h, w in [(480, 640), (640, 480), (720, 1280), (100, 100)]:
        image = rng.integers(0, 256, (h, w, 3), np.uint8)
        tensor, box_map = letterbox(image, card().input, buffers)
        assert tensor is buffers.tensor
        fresh, fresh_map = letterbox(image, card().input)
        assert fresh_map == box_map and np.array_equal(tensor, fresh)
        canvas = buffers.canvas
        expected = cv2.dnn.blobFromImage(canvas, spec.scale, swapRB=True)
        assert np.array_equal(tensor, expected)
