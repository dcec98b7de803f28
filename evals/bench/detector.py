"""Bench section ``detector``: per model tier, FP32 vs INT8 network latency.

At one thread and at all cores, the speedup, the achieved GOP/s against this
CPU's peak (:func:`evals.bench.machine.peaks`), a GEMM ceiling measured with
ONNX Runtime itself, and where the time goes by operator type (ONNX Runtime's
profiler).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from detectors.card import ModelCard, find_card
from detectors.onnx_detector import OnnxDetector, letterbox
from evals.bench.machine import FPS, Peaks, flat, interleaved, round_ratios
from evals.bench.ocr import labelled_frames
from evals.tables import percentile, table

INT8_SIZES = ((160, 120), (320, 240))


@dataclass(frozen=True, slots=True)
class DetectorRow:
    tier: str
    threads: int
    macs: int
    fp32_ms: float
    fp32_p90_ms: float
    int8_ms: float
    int8_p90_ms: float
    speedup: float  # median over rounds of the per-round ratio
    speedup_min: float
    speedup_max: float
    fp32_gop_s: float
    int8_gop_s: float
    fp32_of_peak: float  # achieved / peak of the cores used
    int8_of_peak: float
    int8_ideal_ms: float  # 2 * MACs / INT8 peak of the cores used
    fp32_best_ms: float  # the quietest round's median: the least disturbed by neighbours
    int8_best_ms: float


def sample_tensor(card: ModelCard, seed: int = 3) -> npt.NDArray[np.float32]:
    """A real camera-like input: a generated 640x480 frame with 福, letterboxed."""
    from detectors.synth.scenes import make_clip

    return letterbox(make_clip(seed, 1, FPS, 640, 480, content="fu").frames[0], card.input)[0]


def detector_rows(
    tiers: Sequence[str], thread_counts: Sequence[int], peak: Peaks, rounds: int, runs: int
) -> list[DetectorRow]:
    rows = []
    for threads in thread_counts:
        for tier in tiers:
            fp32, int8 = find_card(tier, "fp32"), find_card(tier, "int8")
            tensor = sample_tensor(int8)
            nets = {"fp32": OnnxDetector(fp32, threads), "int8": OnnxDetector(int8, threads)}
            times = interleaved(
                {k: partial(d.infer, tensor) for k, d in nets.items()}, rounds, runs
            )
            f, i = flat(times["fp32"]), flat(times["int8"])
            ratios = round_ratios(times["fp32"], times["int8"])
            ops = 2 * int8.macs
            f_gops, i_gops = ops / statistics.median(f) / 1e6, ops / statistics.median(i) / 1e6
            cores = min(threads, os.cpu_count() or 1)
            rows.append(
                DetectorRow(
                    tier=tier,
                    threads=threads,
                    macs=int8.macs,
                    fp32_ms=statistics.median(f),
                    fp32_p90_ms=percentile(f, 90),
                    int8_ms=statistics.median(i),
                    int8_p90_ms=percentile(i, 90),
                    speedup=statistics.median(ratios),
                    speedup_min=min(ratios),
                    speedup_max=max(ratios),
                    fp32_gop_s=f_gops,
                    int8_gop_s=i_gops,
                    fp32_of_peak=f_gops / (peak.fp32_per_core * cores),
                    int8_of_peak=i_gops / (peak.int8_per_core * cores),
                    int8_ideal_ms=ops / (peak.int8_per_core * cores) / 1e6,
                    fp32_best_ms=min(statistics.median(r) for r in times["fp32"]),
                    int8_best_ms=min(statistics.median(r) for r in times["int8"]),
                )
            )
    return rows


def format_detector(rows: Sequence[DetectorRow]) -> str:
    """Medians over every call; ``best`` is the quietest round's median, for the peak ratios too."""
    header = ["tier", "threads", "MMAC", "fp32 ms p50", "p90", "best", "int8 ms p50", "p90",
              "best", "speedup [min-max]", "best/best", "fp32 % peak", "int8 GOP/s",
              "int8 % peak", "best", "int8 x ideal", "best"]  # fmt: skip
    body = [
        [r.tier, str(r.threads), f"{r.macs / 1e6:.0f}",
         f"{r.fp32_ms:.2f}", f"{r.fp32_p90_ms:.2f}", f"{r.fp32_best_ms:.2f}",
         f"{r.int8_ms:.2f}", f"{r.int8_p90_ms:.2f}", f"{r.int8_best_ms:.2f}",
         f"{r.speedup:.2f} [{r.speedup_min:.2f}-{r.speedup_max:.2f}]",
         f"{r.fp32_best_ms / r.int8_best_ms:.2f}",
         f"{100 * r.fp32_of_peak:.0f}", f"{r.int8_gop_s:.1f}", f"{100 * r.int8_of_peak:.0f}",
         f"{100 * r.int8_ideal_ms / r.int8_best_ms:.0f}",
         f"{r.int8_ms / r.int8_ideal_ms:.1f}", f"{r.int8_best_ms / r.int8_ideal_ms:.1f}"]
        for r in rows
    ]  # fmt: skip
    return table(header, body)


OP_CLASSES = {
    "conv": {"Conv", "QLinearConv", "ConvInteger", "FusedConv", "NchwcConv", "DepthwiseConv"},
    "quant/dequant": {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"},
    "layout": {"ReorderInput", "ReorderOutput", "Transpose"},
}


def op_class(op: str) -> str:
    return next((name for name, ops in OP_CLASSES.items() if op in ops), "other")


@dataclass(frozen=True, slots=True)
class OpProfile:
    tier: str
    precision: str
    threads: int
    run_ms: float  # median model_run duration as the profiler saw it
    by_class: dict[str, float]  # ms per run
    by_op: dict[str, float]  # ms per run, by op type (after ORT's graph fusions)
    by_node: dict[str, tuple[str, float]]  # node -> (op type, median ms per run)


def profile_ops(card: ModelCard, threads: int, runs: int) -> OpProfile:
    """Run ``card``'s model ``runs`` times under ONNX Runtime's profiler; ms per run by op type."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(
            str(card.model_path), options, providers=["CPUExecutionProvider"]
        )
        tensor = sample_tensor(card)
        for _ in range(runs + 3):
            session.run(None, {card.input.name: tensor})
        events = json.loads(Path(session.end_profiling()).read_text())
    model_runs = [e["dur"] for e in events if e.get("name") == "model_run"][3:]
    kernels = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    # The first runs are warm-up: keep the last ``runs`` runs' kernels. Per node the median,
    # so that a run preempted by a neighbour's process does not count.
    per_run = len(kernels) // (runs + 3) if kernels else 0
    times: defaultdict[str, list[float]] = defaultdict(list)
    ops: dict[str, str] = {}
    for e in kernels[3 * per_run :]:
        node = e["name"].removesuffix("_kernel_time")
        times[node].append(e["dur"] / 1000)
        ops[node] = e["args"].get("op_name", "?")
    by_node = {node: (ops[node], statistics.median(t)) for node, t in times.items()}
    by_op: defaultdict[str, float] = defaultdict(float)
    by_class: defaultdict[str, float] = defaultdict(float)
    for op, ms in by_node.values():
        by_op[op] += ms
        by_class[op_class(op)] += ms
    return OpProfile(
        card.tier,
        card.precision,
        threads,
        statistics.median(model_runs) / 1000 if model_runs else 0.0,
        dict(by_class),
        dict(sorted(by_op.items(), key=lambda kv: -kv[1])),
        by_node,
    )


def layer_of(node: str) -> str:
    """The model's layer a node came from, across ORT's renaming after fusions.

    ``/conv4/conv4.1/Relu_output_0_nchwc`` (FP32, fused into an NCHWc Conv) and
    ``/conv4/conv4.0/Conv_quant_token_7`` (INT8) are both layer ``conv4``.
    """
    parts = node.split("/")
    return parts[1] if node.startswith("/") and len(parts) > 2 else node


def layer_times(profile: OpProfile) -> dict[str, float]:
    """Median ms per run of each layer's convolution."""
    out: defaultdict[str, float] = defaultdict(float)
    for node, (op, ms) in profile.by_node.items():
        if op_class(op) == "conv":
            out[layer_of(node)] += ms
    return dict(out)


def format_layers(fp32: OpProfile, int8: OpProfile) -> str:
    """Convolution time per layer, FP32 (fused with its ReLU) vs INT8, in INT8 graph order."""
    f, i = layer_times(fp32), layer_times(int8)
    body = [
        [layer, f"{f[layer]:.3f}" if layer in f else "-", f"{ms:.3f}",
         f"{f[layer] / ms:.2f}" if layer in f and ms else "-"]
        for layer, ms in i.items()
    ]  # fmt: skip
    return table([f"layer ({int8.tier})", "fp32 ms", "int8 ms", "fp32/int8"], body)


def format_profiles(profiles: Sequence[OpProfile]) -> str:
    classes = [*OP_CLASSES, "other"]
    header = ["tier", "build", "run ms", *(f"{c} ms" for c in classes), "top ops (ms)"]
    body = []
    for p in profiles:
        kernel = sum(p.by_class.values()) or 1.0
        cells = [f"{p.by_class.get(c, 0.0):.2f} ({100 * p.by_class.get(c, 0.0) / kernel:.0f}%)"
                 for c in classes]  # fmt: skip
        top = ", ".join(f"{op} {ms:.2f}" for op, ms in list(p.by_op.items())[:4])
        body.append([p.tier, p.precision, f"{p.run_ms:.2f}", *cells, top])
    return table(header, body)


@dataclass(frozen=True, slots=True)
class Ceiling:
    name: str
    ms: float
    gop_s: float
    of_peak: float


def gemm_ceilings(peak: Peaks, rounds: int, size: int = 768) -> list[Ceiling]:
    """What ONNX Runtime's own GEMM kernels reach here at one thread: FP32, U8S8, U8U8.

    U8S8 is the ``vpmaddubsw`` kernel (the format our INT8 models use); U8U8
    falls back to widening to 16 bit first.
    """
    m = k = n = size
    rng = np.random.default_rng(0)
    cases = {
        "MatMul fp32": (TensorProto.FLOAT, TensorProto.FLOAT, np.float32),
        "MatMulInteger u8s8": (TensorProto.UINT8, TensorProto.INT8, np.uint8),
        "MatMulInteger u8u8": (TensorProto.UINT8, TensorProto.UINT8, np.uint8),
    }
    runs: dict[str, Callable[[], object]] = {}
    for name, (a_type, b_type, a_np) in cases.items():
        b = helper.make_tensor("b", b_type, [k, n], rng.integers(0, 100, k * n).tolist())
        op = "MatMul" if a_np is np.float32 else "MatMulInteger"
        out_type = TensorProto.FLOAT if op == "MatMul" else TensorProto.INT32
        graph = helper.make_graph(
            [helper.make_node(op, ["a", "b"], ["y"])],
            name.replace(" ", "_"),
            [helper.make_tensor_value_info("a", a_type, [m, k])],
            [helper.make_tensor_value_info("y", out_type, [m, n])],
            [b],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        a = rng.integers(0, 100, (m, k)).astype(a_np)
        runs[name] = partial(session.run, None, {"a": a})
    times = interleaved(runs, rounds, 3)
    out = []
    for name, t in times.items():
        ms = statistics.median(flat(t))
        gops = 2 * m * k * n / ms / 1e6
        per_core = peak.fp32_per_core if "fp32" in name else peak.int8_per_core
        out.append(Ceiling(name, ms, gops, gops / per_core))
    return out


@dataclass(frozen=True, slots=True)
class ConvCheck:
    """One QLinearConv of ORT against an exact int32 reference (``vpmaddubsw`` saturation)."""

    tier: str
    layer: str
    off_share: float  # share of outputs more than one quantization step off
    max_off: int  # steps
    weights_over_64: float  # share of s8 weights with |w| > 64 (pairs can overflow 16 bit)


def conv_checks(card: ModelCard) -> list[ConvCheck]:
    """Recompute every dense QLinearConv of an INT8 model exactly; compare ORT's outputs.

    AVX2 without VNNI multiplies u8 x s8 with ``vpmaddubsw``, which adds each
    pair of products into a saturating 16-bit lane; a correct kernel is within
    one step of the exact result. Each conv gets ORT's own input (so errors do
    not add up from layer to layer).
    """
    model = onnx.load(str(card.model_path))
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    convs = [
        n for n in model.graph.node
        if n.op_type == "QLinearConv"
        and all(a.i == 1 for a in n.attribute if a.name == "group")
    ]  # fmt: skip
    names = list(dict.fromkeys(t for n in convs for t in (n.input[0], n.output[0])))
    for name in names:
        model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.UINT8, None))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    values = dict(
        zip(names, session.run(names, {card.input.name: sample_tensor(card)}), strict=True)
    )
    out = []
    for conv in convs:
        x_zero, w_zero = int(init[conv.input[2]]), init[conv.input[5]].astype(np.int64)
        w = init[conv.input[3]].astype(np.int64)  # out x in x kh x kw
        attrs = {a.name: list(a.ints) for a in conv.attribute if a.ints}
        (sy, sx), pads = attrs.get("strides", [1, 1]), attrs.get("pads", [0, 0, 0, 0])
        x = values[conv.input[0]][0].astype(np.int64) - x_zero
        x = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
        got = values[conv.output[0]][0].astype(np.int64)
        out_h, out_w = got.shape[1:]
        kh, kw = w.shape[2:]
        cols = np.stack([x[:, ky : ky + sy * out_h : sy, kx : kx + sx * out_w : sx]
                         for ky in range(kh) for kx in range(kw)], 1)  # fmt: skip
        wq = (w - w_zero.reshape(-1, 1, 1, 1)).reshape(len(w), -1)
        acc = np.einsum("ok,khw->ohw", wq, cols.reshape(-1, out_h, out_w))
        if len(conv.input) > 8:
            acc += init[conv.input[8]].astype(np.int64)[:, None, None]
        w_scale = init[conv.input[4]].astype(np.float64).reshape(-1, 1, 1)
        x_scale, y_scale = float(init[conv.input[1]]), float(init[conv.input[6]])
        ref = np.clip(
            np.round(acc * x_scale * w_scale / y_scale) + int(init[conv.input[7]]), 0, 255
        )
        off = np.abs(ref - got)
        out.append(ConvCheck(card.tier, layer_of(conv.name), float((off > 1).mean()),
                             int(off.max()), float((np.abs(wq) > 64).mean())))  # fmt: skip
    return out


def format_conv_checks(checks: Sequence[ConvCheck]) -> str:
    """Per tier: how many QLinearConvs disagree with exact int32 arithmetic, and the worst."""
    lines = []
    for tier in dict.fromkeys(c.tier for c in checks):
        mine = [c for c in checks if c.tier == tier]
        bad = [c for c in mine if c.off_share > 0]
        worst = max(mine, key=lambda c: (c.off_share, c.max_off))
        lines.append(
            f"int8 {tier}: {len(bad)} of {len(mine)} QLinearConv layers differ from exact int32 "
            f"by more than one step; worst {worst.layer}: {100 * worst.off_share:.2f} % of its "
            f"outputs, up to {worst.max_off} steps ({100 * worst.weights_over_64:.0f} % of its "
            f"weights |w| > 64)"
        )
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class VariantRow:
    """One build of a tier: its time beside FP32, and how far its heat maps are from FP32's."""

    name: str
    ms: float
    best_ms: float
    speedup: float  # FP32 over this, median of the per-round ratios
    heat_diff_median: float  # per frame the largest |heat map - FP32 heat map|; median over frames
    heat_diff_max: float
    same_decision: int  # frames where this and FP32 agree on "fires" (peak >= threshold)
    frames: int


def int8_variants(tier: str, rounds: int, runs: int, frames: int = 8) -> list[VariantRow]:
    """The shipped INT8 model beside two edits of it that the detector engineer could ship.

    ``uint8 input``: the input QuantizeLinear removed, letterboxed pixels fed as
    uint8 (exact when the input scale is 1/255 and its zero point 0). ``FP32
    stem``: the first QLinearConv replaced by the FP32 model's Conv + ReLU and a
    QuantizeLinear to the same output scale (no ``vpmaddubsw`` saturation there).
    Built in memory from the shipped files; ``[]`` for a model that does not start with
    QuantizeLinear -> QLinearConv at input scale 1/255.
    """
    fp32_card, int8_card = find_card(tier, "fp32"), find_card(tier, "int8")
    model = onnx.load(str(int8_card.model_path))
    quant, stem = model.graph.node[0], model.graph.node[1]
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    if (quant.op_type, stem.op_type) != ("QuantizeLinear", "QLinearConv") or not np.isclose(
        float(init[quant.input[1]]) * 255, 1.0
    ):
        return []
    uint8_input = onnx.load(str(int8_card.model_path))
    uint8_input.graph.node.remove(uint8_input.graph.node[0])
    for node in uint8_input.graph.node:
        node.input[:] = [quant.input[0] if n == quant.output[0] else n for n in node.input]
    uint8_input.graph.input[0].type.tensor_type.elem_type = TensorProto.UINT8
    fp32 = onnx.load(str(fp32_card.model_path))
    fp32_conv = next(n for n in fp32.graph.node if n.op_type == "Conv")
    fp32_weights = [i for i in fp32.graph.initializer if i.name in fp32_conv.input[1:]]
    conv = helper.make_node("Conv", [quant.input[0], *fp32_conv.input[1:]], ["stem_fp32"])
    conv.attribute.extend(stem.attribute)
    fp32_stem = onnx.load(str(int8_card.model_path))
    rest = list(fp32_stem.graph.node)[2:]
    del fp32_stem.graph.node[:]
    fp32_stem.graph.node.extend([
        conv,
        helper.make_node("Relu", ["stem_fp32"], ["stem_relu"]),
        helper.make_node("QuantizeLinear", ["stem_relu", *stem.input[6:8]], [stem.output[0]]),
        *rest,
    ])  # fmt: skip
    fp32_stem.graph.initializer.extend(fp32_weights)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # the unused stem initializers are reported otherwise
    sessions = {
        name: ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        for name, source in (
            ("fp32", str(fp32_card.model_path)),
            ("int8 as shipped", str(int8_card.model_path)),
            ("int8, uint8 input", uint8_input.SerializeToString()),
            ("int8, FP32 stem", fp32_stem.SerializeToString()),
        )
    }
    name_in = int8_card.input.name

    def feed(name: str, tensor: npt.NDArray[np.float32]) -> dict[str, Any]:
        if name == "int8, uint8 input":
            return {name_in: np.round(tensor * 255).astype(np.uint8)}
        return {name_in: tensor}

    tensor = sample_tensor(int8_card)
    times = interleaved(
        {n: partial(sess.run, None, feed(n, tensor)) for n, sess in sessions.items()}, rounds, runs
    )
    labelled = labelled_frames(frames, 1)
    heat: dict[str, list[npt.NDArray[np.float32]]] = {n: [] for n in sessions}
    for frame in labelled:
        tensor = letterbox(frame.image, int8_card.input)[0]
        for n, sess in sessions.items():
            heat[n].append(sess.run(None, feed(n, tensor))[0])
    rows = []
    for n in sessions:
        diffs = [float(np.abs(a - b).max()) for a, b in zip(heat[n], heat["fp32"], strict=True)]
        fires = [(a.max() >= int8_card.threshold) == (b.max() >= int8_card.threshold)
                 for a, b in zip(heat[n], heat["fp32"], strict=True)]  # fmt: skip
        rows.append(
            VariantRow(
                name=n,
                ms=statistics.median(flat(times[n])),
                best_ms=min(statistics.median(r) for r in times[n]),
                speedup=statistics.median(round_ratios(times["fp32"], times[n])),
                heat_diff_median=statistics.median(diffs),
                heat_diff_max=max(diffs),
                same_decision=sum(fires),
                frames=len(labelled),
            )
        )
    return rows


def format_variants(tier: str, rows: Sequence[VariantRow]) -> str:
    body = [[r.name, f"{r.ms:.2f}", f"{r.best_ms:.2f}", f"{r.speedup:.2f}",
             f"{r.heat_diff_median:.3f}", f"{r.heat_diff_max:.3f}",
             f"{r.same_decision}/{r.frames}"] for r in rows]  # fmt: skip
    header = [f"{tier} build (1 thread)", "ms p50", "best", "fp32/this", "heat diff p50",
              "max", "same decision as fp32"]  # fmt: skip
    return table(header, body)


@dataclass(frozen=True, slots=True)
class SizeRow:
    """One tier's FP32 and INT8 files run at another input size: what INT8 buys follows width."""

    tier: str
    width: int
    height: int
    own_size: bool  # the size the tier ships at
    fp32_ms: float
    int8_ms: float
    speedup: float  # median of the per-round ratios


def speedup_by_size(
    tiers: Sequence[str], sizes: Sequence[tuple[int, int]], rounds: int, runs: int
) -> list[SizeRow]:
    """Every tier at every size (``detectors.reshape.at_input_size``), 1 thread, interleaved.

    Keeps a tier's channel widths and changes only how many pixels each layer
    sees, so the table separates the two: whether a tier's INT8 gain is bound
    by its width or by its input size.
    """
    from detectors.reshape import at_input_size

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    runners: dict[tuple[str, int, int, str], Callable[[], object]] = {}
    own: dict[str, tuple[int, int]] = {}
    for tier in tiers:
        for precision in ("fp32", "int8"):
            card = find_card(tier, precision)
            own[tier] = (card.input.width, card.input.height)
            model = onnx.load(str(card.model_path))
            for width, height in sizes:
                session = ort.InferenceSession(
                    at_input_size(model, width, height).SerializeToString(),
                    options,
                    providers=["CPUExecutionProvider"],
                )
                tensor = np.random.default_rng(0).random((1, 3, height, width), np.float32)
                runners[(tier, width, height, precision)] = partial(
                    session.run, None, {card.input.name: tensor}
                )
    times = interleaved({"/".join(map(str, k)): fn for k, fn in runners.items()}, rounds, runs)
    rows = []
    for tier in tiers:
        for width, height in sizes:
            f, i = (times[f"{tier}/{width}/{height}/{p}"] for p in ("fp32", "int8"))
            rows.append(
                SizeRow(
                    tier, width, height, own[tier] == (width, height),
                    statistics.median(flat(f)), statistics.median(flat(i)),
                    statistics.median(round_ratios(f, i)),
                )
            )  # fmt: skip
    return rows


def format_sizes(rows: Sequence[SizeRow]) -> str:
    body = [[r.tier, f"{r.width}x{r.height}" + (" (shipped)" if r.own_size else ""),
             f"{r.fp32_ms:.3f}", f"{r.int8_ms:.3f}", f"{r.speedup:.2f}"] for r in rows]  # fmt: skip
    return table(["tier", "input (1 thread)", "fp32 ms", "int8 ms", "speedup"], body)


def format_ceilings(ceilings: Sequence[Ceiling]) -> str:
    body = [[c.name, f"{c.ms:.2f}", f"{c.gop_s:.1f}", f"{100 * c.of_peak:.0f}"] for c in ceilings]
    return table(["GEMM 768^3, 1 thread", "ms", "GOP/s", "% of peak"], body)
