"""Model files that borrow convolution weights from another file: a supernet's weights, once.

Tiers of the supernet as wide as another share its convolutions and differ
only in batch norm, which export folds into each convolution: the narrower
input's weight is the wider one's times one factor per output channel. Such a
file can hold each convolution's weight as ONNX external data, a byte range
of the other (donor) file, followed by a per-channel ``Mul`` and an ``Add``
for its bias. ONNX Runtime folds both back into the convolution when a
session starts, so it runs as fast as the plain file; :func:`read_model` does
the same fold for tools that read the graph (recovery, quantization).

The borrowed bytes are only right as long as the donor file does not change,
so the borrower records the donor's SHA-256, and :func:`check_donors` says
when it no longer matches.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper

DONOR_KEY = "fuscan.weights_from"
DIGEST_KEY = "fuscan.weights_from_sha256"
SCALE_SUFFIX = "/channel_scale"
BIAS_SUFFIX = "/channel_bias"
MAX_RESIDUAL = 1e-5
"""Largest mismatch, relative to the layer's largest weight, of a weight borrowed as a multiple."""


class SharedWeightsError(ValueError):
    """A file's borrowed weights cannot be read as they were written."""


def share_weights(path: Path, donor: Path) -> int:
    """Rewrite the ONNX file ``path`` to borrow ``donor``'s convolution weights where it can.

    A convolution is borrowed when ``donor`` has a weight of the same name and
    shape and ``path``'s weight is that times one factor per output channel
    (within :data:`MAX_RESIDUAL`); the others stay in the file. Both files must
    be in the same folder. Returns how many convolutions were borrowed.
    """
    if donor.parent.resolve() != path.parent.resolve():
        raise SharedWeightsError(f"{path.name} can only borrow from a file in its own folder")
    model = onnx.load(str(path))
    donor_bytes = donor.read_bytes()
    donor_weights = {t.name: t for t in onnx.load_model_from_string(donor_bytes).graph.initializer}
    weights = {t.name: t for t in model.graph.initializer}
    nodes: list[onnx.NodeProto] = []
    borrowed: list[TensorProto] = []
    for node in model.graph.node:
        shared = None
        if (
            node.op_type == "Conv"
            and len(node.input) == 3
            and set(node.input[1:]) <= weights.keys()
        ):
            shared = _borrow(node, weights, donor_weights.get(node.input[1]), donor, donor_bytes)
        if shared is None:
            nodes.append(node)
            continue
        new_nodes, new_tensors = shared
        nodes += new_nodes
        borrowed += new_tensors
        del weights[node.input[1]], weights[node.input[2]]
    if not borrowed:
        return 0
    graph = helper.make_graph(
        nodes,
        model.graph.name,
        model.graph.input,
        model.graph.output,
        [*weights.values(), *borrowed],
        value_info=model.graph.value_info,
    )
    out = helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    out.producer_name, out.producer_version = model.producer_name, model.producer_version
    helper.set_model_props(
        out, {DONOR_KEY: donor.name, DIGEST_KEY: hashlib.sha256(donor_bytes).hexdigest()}
    )
    path.write_bytes(out.SerializeToString())
    return len(borrowed) // 3  # a weight, its scale and its bias for each


def _borrow(
    conv: onnx.NodeProto,
    weights: dict[str, TensorProto],
    donor_weight: TensorProto | None,
    donor: Path,
    donor_bytes: bytes,
) -> tuple[list[onnx.NodeProto], list[TensorProto]] | None:
    own = numpy_helper.to_array(weights[conv.input[1]])
    if donor_weight is None or list(donor_weight.dims) != list(own.shape):
        return None
    theirs = numpy_helper.to_array(donor_weight)
    rows_own, rows_theirs = own.reshape(len(own), -1), theirs.reshape(len(theirs), -1)
    scale = (rows_own * rows_theirs).sum(1) / np.maximum((rows_theirs**2).sum(1), 1e-30)
    residual = np.abs(rows_own - rows_theirs * scale[:, None]).max()
    offset = donor_bytes.find(donor_weight.raw_data) if donor_weight.raw_data else -1
    unique = offset >= 0 and donor_bytes.find(donor_weight.raw_data, offset + 1) < 0
    if residual > MAX_RESIDUAL * np.abs(own).max() or not unique:
        return None
    weight = TensorProto(name=conv.input[1], data_type=donor_weight.data_type)
    weight.dims.extend(donor_weight.dims)
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (
        ("location", donor.name),
        ("offset", str(offset)),
        ("length", str(len(donor_weight.raw_data))),
    ):
        weight.external_data.add(key=key, value=value)
    bias = numpy_helper.to_array(weights[conv.input[2]])
    per_channel = (1, len(own), 1, 1)
    scale_tensor = numpy_helper.from_array(
        scale.astype(np.float32).reshape(per_channel), conv.input[1] + SCALE_SUFFIX
    )
    bias_tensor = numpy_helper.from_array(bias.reshape(per_channel), conv.input[2])
    out = conv.output[0]
    attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    nodes = [
        helper.make_node(
            "Conv", [conv.input[0], weight.name], [out + "/borrowed"], conv.name, **attributes
        ),
        helper.make_node(
            "Mul",
            [out + "/borrowed", scale_tensor.name],
            [out + "/scaled"],
            conv.name + SCALE_SUFFIX,
        ),
        helper.make_node(
            "Add", [out + "/scaled", bias_tensor.name], [out], conv.name + BIAS_SUFFIX
        ),
    ]
    return nodes, [weight, scale_tensor, bias_tensor]


def donor_of(path: Path) -> tuple[str, str] | None:
    """The donor file name and SHA-256 that ``path`` records, or ``None`` for a plain file.

    A file that is not ONNX at all borrows nothing; loading it fails with its own error.
    """
    try:
        model = onnx.load(str(path), load_external_data=False)
    except DecodeError:
        return None
    props = {p.key: p.value for p in model.metadata_props}
    if DONOR_KEY not in props:
        return None
    return props[DONOR_KEY], props.get(DIGEST_KEY, "")


def model_files(path: Path) -> list[Path]:
    """``path`` and, if it borrows weights, the donor file whose bytes it reads."""
    donor = donor_of(path)
    return [path] if donor is None else [path, path.parent / donor[0]]


def check_donors(path: Path) -> None:
    """Raise :class:`SharedWeightsError` unless ``path``'s donor is there and unchanged."""
    donor = donor_of(path)
    if donor is None:
        return
    name, digest = donor
    donor_path = path.parent / name
    if not donor_path.is_file():
        raise SharedWeightsError(f"{path.name} borrows its weights from {name}, which is missing")
    if hashlib.sha256(donor_path.read_bytes()).hexdigest() != digest:
        raise SharedWeightsError(
            f"{path.name} borrows its weights from {name}, which has changed since export: "
            "export both again"
        )


def read_model(path: Path) -> onnx.ModelProto:
    """The graph of ``path`` with any borrowed weights folded back in: the file export made."""
    check_donors(path)
    model = onnx.load(str(path))
    tensors = {t.name: t for t in model.graph.initializer}
    producers = {n.output[0]: n for n in model.graph.node}
    folded: dict[str, tuple[onnx.NodeProto, str, str]] = {}  # Add output -> conv, weight, bias
    dropped_nodes: set[str] = set()  # each borrowed Conv, Mul, Add: one plain Conv instead
    scales: set[str] = set()
    for add in model.graph.node:
        if add.op_type != "Add" or not add.name.endswith(BIAS_SUFFIX):
            continue
        mul = producers[add.input[0]]
        conv = producers[mul.input[0]]
        weight = numpy_helper.to_array(tensors[conv.input[1]])
        scale = numpy_helper.to_array(tensors[mul.input[1]]).reshape(-1)
        bias = numpy_helper.to_array(tensors[add.input[1]]).reshape(-1)
        _replace(tensors, conv.input[1], weight * scale[:, None, None, None])
        _replace(tensors, add.input[1], bias)
        folded[add.output[0]] = (conv, conv.input[1], add.input[1])
        dropped_nodes |= {conv.name, mul.name, add.name}
        scales.add(mul.input[1])
    if not folded:
        return model
    nodes = []
    for node in model.graph.node:
        if node.name in dropped_nodes:
            if node.output[0] in folded:
                conv, weight_name, bias_name = folded[node.output[0]]
                plain = onnx.NodeProto()
                plain.CopyFrom(conv)
                del plain.input[:], plain.output[:]
                plain.input.extend([conv.input[0], weight_name, bias_name])
                plain.output.append(node.output[0])
                nodes.append(plain)
            continue
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    kept = [tensor for name, tensor in tensors.items() if name not in scales]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    props = [p for p in model.metadata_props if p.key not in (DONOR_KEY, DIGEST_KEY)]
    del model.metadata_props[:]
    model.metadata_props.extend(props)
    return model


def _replace(tensors: dict[str, TensorProto], name: str, value: npt.NDArray[np.float32]) -> None:
    tensors[name] = numpy_helper.from_array(value.astype(np.float32), name)
