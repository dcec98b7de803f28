"""The shipped graphs at another input size: the close-ups' copy of the network."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from detectors.card import find_card
from evals.bench.reshape import at_input_size, halved


def run(model: onnx.ModelProto, tensor: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: tensor})  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("side", "times", "expected"),
    [(240, 3, 30), (240, 4, 15), (240, 5, 8), (120, 5, 4), (97, 1, 49), (5, 0, 5)],
)
def test_halved_follows_stride_two_convolutions(side: int, times: int, expected: int) -> None:
    assert halved(side, times) == expected


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_at_its_own_size_the_copy_computes_what_the_original_does(precision: str) -> None:
    model = onnx.load(find_card("l", precision).model_path)
    tensor = np.random.default_rng(0).random((1, 3, 240, 320), np.float32)
    for got, want in zip(
        run(at_input_size(model, 320, 240), tensor), run(model, tensor), strict=True
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("tier", "precision"), [("l", "fp32"), ("l", "int8"), ("m", "int8"), ("s", "int8")]
)
@pytest.mark.parametrize(("width", "height"), [(160, 120), (224, 168), (200, 150)])
def test_at_another_size_the_outputs_follow_the_stride(
    tier: str, precision: str, width: int, height: int
) -> None:
    card = find_card(tier, precision)
    model = at_input_size(onnx.load(card.model_path), width, height)
    heatmap, boxes = run(model, np.zeros((1, 3, height, width), np.float32))
    cells = (halved(height, 3), halved(width, 3))  # stride 8
    assert heatmap.shape == (1, len(card.classes), *cells)
    assert boxes.shape == (1, 4, *cells)


def test_the_original_model_is_left_as_it_was() -> None:
    model = onnx.load(find_card("l", "int8").model_path)
    before = model.SerializeToString()
    at_input_size(model, 160, 120)
    assert model.SerializeToString() == before


def test_a_resize_whose_sizes_are_computed_is_refused() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Resize", ["x", "", "", "shape"], ["y"], mode="nearest"),
        ],
        "computed-sizes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 8, 8])],
    )
    with pytest.raises(ValueError, match="not a constant"):
        at_input_size(helper.make_model(graph), 4, 4)
