"""A file borrowing another's convolution weights computes, and reads back as, its plain self."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from detectors.quantize import QuantSettings, TensorReader, quantize_model
from detectors.shared_weights import (
    SharedWeightsError,
    check_donors,
    model_files,
    read_model,
    share_weights,
)

RNG = np.random.default_rng(0)
FIRST = RNG.normal(size=(8, 3, 3, 3)).astype(np.float32)
SECOND = RNG.normal(size=(4, 8, 3, 3)).astype(np.float32)
INPUT = RNG.random((1, 3, 12, 16), dtype=np.float32)


def two_convs(first: np.ndarray, second: np.ndarray, bias: float) -> onnx.ModelProto:
    """x -> Conv -> Relu -> Conv, as export writes it (weights and biases as initializers)."""
    tensors = [
        numpy_helper.from_array(first, "first.weight"),
        numpy_helper.from_array(np.full(len(first), bias, np.float32), "first.bias"),
        numpy_helper.from_array(second, "second.weight"),
        numpy_helper.from_array(np.full(len(second), -bias, np.float32), "second.bias"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["x", "first.weight", "first.bias"], ["a"], "/first/Conv", pads=[1] * 4
        ),
        helper.make_node("Relu", ["a"], ["b"], "/relu"),
        helper.make_node("Conv", ["b", "second.weight", "second.bias"], ["y"], "/second/Conv"),
    ]
    graph = helper.make_graph(
        nodes,
        "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 10, 14])],
        tensors,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def outputs(model: onnx.ModelProto | Path) -> np.ndarray:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": INPUT})[0]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, onnx.ModelProto]:
    """A donor and a borrower whose first weight is the donor's times a factor per channel."""
    donor, borrower = tmp_path / "wide.onnx", tmp_path / "narrow.onnx"
    onnx.save(two_convs(FIRST, SECOND, 0.1), donor)
    factors = np.linspace(0.5, 2.0, len(FIRST), dtype=np.float32)[:, None, None, None]
    plain = two_convs(FIRST * factors, RNG.normal(size=SECOND.shape).astype(np.float32), 0.3)
    onnx.save(plain, borrower)
    return donor, borrower, plain


def test_a_multiple_is_borrowed_and_computes_the_same(files) -> None:  # type: ignore[no-untyped-def]
    donor, borrower, plain = files
    before = borrower.stat().st_size
    assert share_weights(borrower, donor) == 1  # the second weight is its own: kept in the file
    assert borrower.stat().st_size < before - FIRST.nbytes // 2
    assert model_files(borrower) == [borrower, donor]
    np.testing.assert_allclose(outputs(borrower), outputs(plain), rtol=1e-5, atol=1e-5)


def test_read_model_gives_back_the_plain_graph(files) -> None:  # type: ignore[no-untyped-def]
    donor, borrower, plain = files
    share_weights(borrower, donor)
    back = read_model(borrower)
    onnx.checker.check_model(back)
    assert [(n.op_type, n.name, list(n.input)) for n in back.graph.node] == [
        (n.op_type, n.name, list(n.input)) for n in plain.graph.node
    ]
    expected = {t.name: numpy_helper.to_array(t) for t in plain.graph.initializer}
    got = {t.name: numpy_helper.to_array(t) for t in back.graph.initializer}
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name].shape == value.shape
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
    assert not back.metadata_props


def test_nothing_to_borrow_leaves_the_file(tmp_path: Path) -> None:
    donor, other = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(two_convs(FIRST, SECOND, 0.1), donor)
    onnx.save(two_convs(RNG.normal(size=FIRST.shape).astype(np.float32), SECOND[:2], 0.1), other)
    before = other.read_bytes()
    assert share_weights(other, donor) == 0
    assert other.read_bytes() == before
    assert model_files(other) == [other]
    assert read_model(other) == onnx.load(str(other))


@pytest.mark.parametrize(
    ("damage", "message"),
    [("remove", "missing"), ("change", "changed since export")],
)
def test_a_missing_or_changed_donor_is_refused(files, damage: str, message: str) -> None:  # type: ignore[no-untyped-def]
    donor, borrower, _ = files
    share_weights(borrower, donor)
    check_donors(borrower)
    if damage == "remove":
        donor.unlink()
    else:
        onnx.save(two_convs(FIRST * 2, SECOND, 0.1), donor)
    with pytest.raises(SharedWeightsError, match=message):
        check_donors(borrower)
    with pytest.raises(SharedWeightsError, match=message):
        read_model(borrower)


def test_a_donor_in_another_folder_is_refused(files, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    donor, borrower, _ = files
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / donor.name
    donor.rename(moved)
    with pytest.raises(SharedWeightsError, match="its own folder"):
        share_weights(borrower, moved)


def test_quantizing_a_borrower_quantizes_its_plain_graph(files, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    donor, borrower, plain = files
    plain_path = tmp_path / "plain.onnx"
    onnx.save(plain, plain_path)
    share_weights(borrower, donor)
    settings = QuantSettings("qoperator", False, "u8", ())
    calibration = [RNG.random(INPUT.shape, dtype=np.float32) for _ in range(4)]
    built = {}
    for name, source in (("plain", plain_path), ("borrower", borrower)):
        built[name] = tmp_path / f"{name}.int8.onnx"
        quantize_model(source, built[name], TensorReader("x", iter(calibration)), settings)
    ops = {name: [n.op_type for n in onnx.load(str(p)).graph.node] for name, p in built.items()}
    assert ops["borrower"] == ops["plain"]
    np.testing.assert_allclose(outputs(built["borrower"]), outputs(built["plain"]), atol=1e-5)
