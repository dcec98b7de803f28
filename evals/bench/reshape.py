"""The same network at another input size: a copy of an exported graph with its sizes rewritten.

The export traces the FPN's upsampling with fixed output sizes (``F.interpolate(x,
size=...)`` becomes ``Resize`` with a constant ``sizes``), so ONNX Runtime
refuses any other input size. The convolutions do not care, so a copy with the
input shape and those sizes rewritten runs the same weights on, say, a 160x120
close-up at a quarter of the cost of 320x240, without a second file to ship.
"""

from __future__ import annotations

import onnx
from onnx import numpy_helper

MAX_HALVINGS = 12


def halved(side: int, times: int) -> int:
    """A side after ``times`` stride-2 convolutions with padding 1: each gives ``ceil(n / 2)``,
    so together ``ceil(side / 2**times)``."""
    return -(-side // (1 << times))


def _halvings(input_side: int, side: int) -> int:
    for times in range(MAX_HALVINGS):
        if halved(input_side, times) == side:
            return times
    raise ValueError(f"no stride-2 chain takes {input_side} to {side}")


def at_input_size(model: onnx.ModelProto, width: int, height: int) -> onnx.ModelProto:
    """A copy of ``model`` (one NCHW input, ``Resize`` by ``sizes``) for ``width x height``.

    Every ``Resize`` keeps its place in the stride chain: a map at 1/2**k of the
    old input is resized to 1/2**k of the new one. Works on the FP32 export
    (sizes built by ``Concat`` of the runtime shape and a constant) and on its
    INT8 builds (the quantizer folds them into one initializer).

    Raises:
        ValueError: a ``Resize`` whose sizes are not constants of that kind.
    """
    resized = onnx.ModelProto()
    resized.CopyFrom(model)
    graph = resized.graph
    dims = graph.input[0].type.tensor_type.shape.dim
    old_height, old_width = dims[2].dim_value, dims[3].dim_value
    dims[2].dim_value, dims[3].dim_value = height, width
    del graph.value_info[:]  # shapes recorded for the old size
    for output in graph.output:
        for dim in output.type.tensor_type.shape.dim[2:]:
            dim.dim_param = "spatial"  # clears the recorded value
    tensors = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            tensors.update((node.output[0], a.t) for a in node.attribute if a.name == "value")
    producers = {name: node for node in graph.node for name in node.output}
    rewritten: set[str] = set()
    for node in graph.node:
        if node.op_type != "Resize":
            continue
        sizes = node.input[3] if len(node.input) > 3 else ""
        if sizes not in tensors and sizes in producers and producers[sizes].op_type == "Concat":
            sizes = producers[sizes].input[-1]  # (N, C) from the runtime shape, then (H, W)
        if sizes not in tensors:
            raise ValueError(f"Resize {node.name!r}: sizes are not a constant")
        if sizes in rewritten:  # shared by an earlier Resize
            continue
        rewritten.add(sizes)
        values = numpy_helper.to_array(tensors[sizes]).copy()
        values[-2] = halved(height, _halvings(old_height, int(values[-2])))
        values[-1] = halved(width, _halvings(old_width, int(values[-1])))
        tensors[sizes].CopyFrom(numpy_helper.from_array(values, tensors[sizes].name))
    return resized
