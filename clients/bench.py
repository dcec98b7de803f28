"""Where every millisecond goes: ``python run.py bench`` prints tables (``--json PATH`` too).

    python run.py bench                               # all five sections, about 9 minutes
    python run.py bench --only detector,pipeline      # a subset
    python run.py bench --json docs/benchmarks.json   # docs/benchmarks.md reads this run

Sections, each measured side by side in this one process (cases interleaved
round by round, so that a neighbour's load hits all of them alike):

1. ``detector``: per model tier, FP32 vs INT8 network latency at one thread and
   at all cores, the speedup, the achieved GOP/s against this CPU's peak
   (:func:`peaks`), a GEMM ceiling measured with ONNX Runtime itself, and where
   the time goes by operator type (ONNX Runtime's profiler).
2. ``pipeline``: per frame at 640x480 and 1280x720, each server stage (VP8 and
   H.264 decode, JPEG decode, colour conversion, letterbox, inference, output
   decoding, voting, JSON) in ms and as a share of the 15 fps frame interval.
3. ``capacity``: concurrent 15 fps websocket and WebRTC streams the server
   holds (``clients.loadtest`` against a local ``run.py serve``), server-side
   latency (frame arrival to result sent) and streams per core.
4. ``bitrate``: per VP8 bitrate, RTP packets a frame, decode time and the
   detector's per-frame recall on coded clips against uncoded frames
   (:mod:`clients.bitrate_bench`; what ``serve --max-video-kbps`` rests on).
5. ``ocr``: the alternative, RapidOCR (``pip install -e '.[bench]'``), on the
   same generated clips: recall, precision and time per frame, ours vs theirs.

Nothing here asserts a time: these machines are shared. Read medians, the
spread of the per-round ratios, and the load average recorded with each run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import socket
import statistics
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import uvloop
from av.packet import Packet
from onnx import TensorProto, helper, numpy_helper

from clients.bitrate_bench import FRAMES, bitrate_rows, format_bitrate
from clients.hw_bench import percentile, table
from clients.loadtest import (
    add_bitrate_argument,
    add_phases_argument,
    local_server,
    measure_load,
)
from clients.video_codec import decode_video, encode_video
from clients.ws_client import encode_jpeg
from detectors.card import ModelCard, find_card, list_cards
from detectors.core import ImageBGR
from detectors.network import InputBuffers, Network, letterbox
from detectors.onnx_detector import OnnxDetector
from stream.images import image_decoder, video_frame_decoder
from stream.session import decode_for

FPS = 15.0
FRAME_MS = 1000.0 / FPS
SIZES = ((640, 480), (1280, 720))
SECTIONS = ("detector", "pipeline", "frame", "capacity", "bitrate", "ocr")
INT8_SIZES = ((160, 120), (320, 240))
LATENCY_BOUND_MS = 100.0
"""A stream is held when its p95 server-side result latency is at most this (and see below)."""
MIN_RESULT_SHARE = 0.9
"""... and at least this share of its frames come back as results (the rest are dropped)."""
MAX_LAG_GROWTH_MS = 20.0
"""... and its median latency in the last third of the run is at most this above the first third."""
TARGET_SERVER_P50_MS = 10.0
TARGET_SERVER_P99_MS = 30.0
"""Issue #8's latency target: frame arrival to result sent, high profile, 640x480."""


# ---------------------------------------------------------------- machine


@dataclass(frozen=True, slots=True)
class Peaks:
    """This CPU's per-core compute peaks in GOP/s (1 MAC = 2 ops), and how they were derived."""

    clock_ghz: float
    fp32_per_core: float
    int8_per_core: float
    derivation: str


def cpu_info() -> dict[str, Any]:
    """Model name, logical cores, nominal clock and the SIMD flags that decide the kernels."""
    model, mhz, flags = platform.processor() or "?", 0.0, set[str]()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name":
                model = value
            elif key == "cpu MHz" and not mhz:
                mhz = float(value)
            elif key == "flags" and not flags:
                flags = set(value.split())
    simd = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni",
            "avx_vnni", "amx_int8")  # fmt: skip
    return {
        "model": model,
        "logical_cores": os.cpu_count() or 1,
        "mhz": mhz,
        "simd": {f: f in flags for f in simd},
        "flags": sorted(flags),
    }


CLOCK_PROBE = r"""
#include <stdio.h>
#include <time.h>
int main(void) {  /* 8 dependent adds per iteration: one per cycle on every x86 core */
    unsigned long x = 0, n = 500000UL;
    double best = 0;
    for (int r = 0; r < 2000; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (unsigned long i = 0; i < n; i++)
            __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                             "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(x));
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ghz = 8.0 * n / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
        if (ghz > best) best = ghz;
    }
    printf("%.3f\n", best);
    return (int)(x & 0);
}
"""


def measure_clock_ghz() -> float | None:
    """The core clock while running, from a chain of dependent adds (1 cycle each).

    A VM's /proc/cpuinfo shows the nominal (base) clock; cores boost above it.
    The best of 2000 runs of about 1.3 ms: short enough that some run between a
    busy neighbour's time slices. Needs a C compiler (``cc``) on x86; ``None``
    without one.
    """
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = Path(tmp) / "clock.c", Path(tmp) / "clock"
        source.write_text(CLOCK_PROBE)
        try:
            subprocess.run(["cc", "-O1", "-o", str(binary), str(source)], check=True,
                           capture_output=True, timeout=60)  # fmt: skip
            out = subprocess.run([str(binary)], check=True, capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return None
    return float(out.stdout)


def peaks(cpu: dict[str, Any], clock_ghz: float | None = None, source: str = "") -> Peaks:
    """Per-core FP32 and INT8 peaks from the clock and the SIMD instructions' throughput.

    x86 cores since Haswell / Zen 2 issue two 256-bit FMAs a cycle: 2 x 8 FP32
    lanes = 16 MAC = 32 FLOP/cycle (twice that with two 512-bit FMA units).
    INT8 without VNNI (AVX2): ``vpmaddubsw`` multiplies 32 u8 x s8 pairs and adds
    neighbours into 16 s16, ``vpmaddwd`` against ones widens them to 8 s32,
    ``vpaddd`` accumulates. Both multiplies run on the same two vector-multiply
    pipes (Zen 3: FP0/FP3; Intel: p0/p1), so 32 MAC take two multiply uops: 32
    MAC = 64 op/cycle, only 2x FP32. ``vpdpbusd`` (AVX-VNNI / AVX512-VNNI) does
    the same 32 (64 on 512 bit) MAC in one uop: 4x FP32.
    """
    simd = cpu["simd"]
    ghz = clock_ghz or (cpu["mhz"] / 1000.0) or 1.0
    wide = 2 if simd.get("avx512f") else 1
    fp32_mac = 16 * wide if simd.get("fma") else 8
    vnni = simd.get("avx512_vnni") or simd.get("avx_vnni")
    int8_mac = (64 if vnni else 32) * wide if simd.get("avx2") else 8
    text = (
        f"clock {ghz:.3f} GHz ({source or ('given' if clock_ghz else 'nominal, /proc/cpuinfo')})"
        f"; FP32: {fp32_mac} MAC/cycle (2 FMA pipes x {8 * wide} lanes)"
        f" = {2 * fp32_mac * ghz:.1f} GFLOP/s per core; INT8: {int8_mac} MAC/cycle ("
        + ("vpdpbusd, 1 uop per 32 MAC" if vnni else "vpmaddubsw + vpmaddwd, 2 multiply uops")
        + f" per {32 * wide} MAC on 2 pipes) = {2 * int8_mac * ghz:.1f} GOP/s per core"
    )
    return Peaks(ghz, 2 * fp32_mac * ghz, 2 * int8_mac * ghz, text)


def versions() -> dict[str, str]:
    import aiortc

    return {
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
        "opencv": cv2.__version__,
        "av": av.__version__,
        "aiortc": aiortc.__version__,
        "ffmpeg": ".".join(map(str, av.library_versions.get("libavcodec", ()))),
    }


def thread_settings() -> dict[str, Any]:
    env = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "ORT_NUM_THREADS")
    return {
        "opencv_threads": cv2.getNumThreads(),
        "env": {k: os.environ[k] for k in env if k in os.environ},
        "server_detector_threads": 1,  # Pipelines: OnnxDetector(card) per model, one thread each
        "server_executor_workers": os.cpu_count() or 1,
    }


def machine() -> dict[str, Any]:
    return {
        "cpu": cpu_info(),
        "versions": versions(),
        "threads": thread_settings(),
        "loadavg": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


# ---------------------------------------------------------------- timing


def interleaved(
    cases: dict[str, Callable[[], object]], rounds: int, runs: int, warmup: int = 2
) -> dict[str, list[list[float]]]:
    """Milliseconds of every call of every case: ``out[case][round]`` is a list of ``runs`` times.

    Each round runs every case ``runs`` times, in an order that rotates from
    round to round, so slow spells of a shared machine spread over all cases.
    """
    for fn in cases.values():
        for _ in range(warmup):
            fn()
    names = list(cases)
    out: dict[str, list[list[float]]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, times = cases[name], []
            for _ in range(runs):
                started = time.perf_counter()
                fn()
                times.append((time.perf_counter() - started) * 1000)
            out[name].append(times)
    return out


def flat(rounds: list[list[float]]) -> list[float]:
    return [x for r in rounds for x in r]


def round_ratios(slow: list[list[float]], fast: list[list[float]]) -> list[float]:
    """Per round, median of ``slow`` over median of ``fast``: the spread shows the noise."""
    return [statistics.median(a) / statistics.median(b) for a, b in zip(slow, fast, strict=True)]


def spread(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


# ---------------------------------------------------------------- 1. detector


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
            nets = {"fp32": Network(fp32, threads), "int8": Network(int8, threads)}
            times = interleaved({k: partial(d.run, tensor) for k, d in nets.items()}, rounds, runs)
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
    """Every tier at every size (``clients.reshape.at_input_size``), 1 thread, interleaved.

    Keeps a tier's channel widths and changes only how many pixels each layer
    sees, so the table separates the two: whether a tier's INT8 gain is bound
    by its width or by its input size.
    """
    from clients.reshape import at_input_size

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


# ---------------------------------------------------------------- 2. pipeline


@dataclass(frozen=True, slots=True)
class StageRow:
    size: str
    stage: str
    path: str  # "webrtc", "websocket" or "both"
    ms: float
    p90_ms: float

    @property
    def share(self) -> float:
        return self.ms / FRAME_MS


def frame_message(detections: list[dict[str, object]], index: int) -> dict[str, object]:
    """A result message shaped like :class:`stream.session.Session`'s ``frame`` messages."""
    return {
        "type": "frame", "frame": index, "t": round(index / FPS, 3), "width": 640, "height": 480,
        "detections": detections,
        "device": {"profile": "high", "tier": "l", "latency_ms": 4.8, "dropped": 0,
                   "camera_skipped": 0, "start_t": 1.0, "done_t": 1.0048},
        "server_ms": 12.3,
    }  # fmt: skip


STAGE_PATHS = {
    "VP8 decode": "webrtc",
    "H264 decode": "webrtc (H.264)",
    "YUV->BGR": "webrtc",
    "JPEG decode (imdecode)": "websocket",
}
"""Stages only one transport has; every other stage is on both paths."""


@dataclass(frozen=True, slots=True)
class EncodedClip:
    size: tuple[int, int]
    video: dict[str, list[Packet[Any]]]  # decoder name -> packets
    jpegs: list[bytes]


def encoded_clip(width: int, height: int, n_frames: int) -> EncodedClip:
    """A generated 福 clip, encoded once as VP8, H.264 and JPEG."""
    from detectors.synth.scenes import make_clip

    images = make_clip(7, n_frames, FPS, width, height, content="fu").frames
    video = {
        "vp8": encode_video(images, "libvpx", FPS),
        "h264": encode_video(images, "libx264", FPS),
    }
    return EncodedClip((width, height), video, [encode_jpeg(image) for image in images])


def pipeline_rows(
    sizes: Sequence[tuple[int, int]], tier: str, n_frames: int, rounds: int
) -> list[StageRow]:
    """Per-frame cost of each server stage, one frame after another as a session runs them.

    Rounds alternate between the frame sizes, so that both see the same neighbours.
    """
    from stream.focus import Focus
    from voting import make_voter

    detector = OnnxDetector(find_card(tier, "int8"), threads=1)
    model = detector.model
    buffers = InputBuffers(detector.card.input)  # reused frame after frame, as the server does
    side = max(detector.card.input.width, detector.card.input.height)
    clips = [encoded_clip(w, h, n_frames) for w, h in sizes]
    times: dict[tuple[int, int], defaultdict[str, list[float]]] = {
        clip.size: defaultdict(list) for clip in clips
    }
    for r in range(rounds):
        for clip in clips[r % len(clips) :] + clips[: r % len(clips)]:
            stages = times[clip.size]
            voter = make_voter("balanced", model.threshold, model.classes, model.vote)
            focus = Focus()  # what the vote settled, as a session tells its detector
            yuv: list[av.VideoFrame] = []
            for codec, packets in clip.video.items():
                frames, ms = decode_video(codec, packets)
                stages[f"{codec.upper()} decode"].append(ms)
                yuv = frames if codec == "vp8" else yuv
            for i, (frame, jpeg) in enumerate(zip(yuv, clip.jpegs, strict=False)):
                laps = Laps(stages)
                decode_for(video_frame_decoder(frame), side)
                laps.lap("YUV->BGR")
                # the websocket path: header check, imdecode (both at half size where the
                # session decodes so)
                image = decode_for(image_decoder(jpeg), side)[0]
                laps.lap("JPEG decode (imdecode)")
                tensor, box_map = letterbox(image, detector.card.input, buffers)
                laps.lap("letterbox")
                heatmap, boxes = detector.network.run(tensor)
                laps.lap(f"inference int8 {tier} (1 thread)")
                candidates = detector.network.detections(
                    heatmap, boxes, box_map, image.shape[1], image.shape[0],
                    detector.candidate_threshold,
                )  # fmt: skip
                laps.lap("output decode (peaks, NMS)")
                detections = detector.second_looks(image, candidates, focus.context(i / FPS))
                laps.lap("second look (zoom)")
                update = voter.update(detections, i / FPS, detector.confirmer(image))
                focus.update(detections, update)
                laps.lap("voting (balanced)")
                json.dumps(frame_message([d.to_json() for d in update.detections], i))
                laps.lap("JSON message")
    return [
        StageRow(f"{w}x{h}", stage, STAGE_PATHS.get(stage, "both"),
                 statistics.median(values), percentile(values, 90))
        for (w, h), stages in times.items()
        for stage, values in stages.items()
    ]  # fmt: skip


class Laps:
    """Times consecutive stages of one frame: each :meth:`lap` ends the stage begun by the last."""

    def __init__(self, times: defaultdict[str, list[float]]) -> None:
        self.times = times
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.times[stage].append((now - self.last) * 1000)
        self.last = now


def pipeline_totals(rows: Sequence[StageRow]) -> dict[str, dict[str, float]]:
    """Per size, the sum of the stages of the WebRTC (VP8) and of the websocket path."""
    out: dict[str, dict[str, float]] = {}
    for size in dict.fromkeys(r.size for r in rows):
        mine = [r for r in rows if r.size == size]
        out[size] = {
            path: sum(r.ms for r in mine if r.path in ("both", path))
            for path in ("webrtc", "websocket")
        }
    return out


def format_pipeline(rows: Sequence[StageRow]) -> str:
    body = [[r.size, r.stage, r.path, f"{r.ms:.3f}", f"{r.p90_ms:.3f}", f"{100 * r.share:.1f}"]
            for r in rows]  # fmt: skip
    for size, totals in pipeline_totals(rows).items():
        for path, ms in totals.items():
            body.append([size, f"total, {path} path", path, f"{ms:.3f}", "",
                         f"{100 * ms / FRAME_MS:.1f}"])  # fmt: skip
    return table(["frame", "stage", "path", "ms p50", "ms p90", f"% of {FRAME_MS:.1f} ms"], body)


# ---------------------------------------------------------------- 3. capacity


@dataclass(frozen=True, slots=True)
class CapacityRow:
    transport: str
    streams: int
    fps_per_stream: float
    result_share: float  # results / frames sent
    e2e_p50: float  # capture -> result received at the client, ms
    e2e_p95: float
    e2e_p99: float
    server_p50: float  # frame arrival at the server -> result sent, ms
    server_p95: float
    server_p99: float
    lag_growth_ms: float  # median e2e latency, last third minus first third of the run
    errors: int
    server_cpu: float  # median % of one core
    client_cpu: float  # % of one core used by this process (the load generator)
    loadavg: float  # 1-minute load average after the step, everyone's processes included

    @property
    def server_cpu_ms_per_frame(self) -> float:
        """Server CPU time per processed frame: what a stream costs, whoever else runs here."""
        per_second = self.fps_per_stream * self.streams
        return self.server_cpu * 10 / per_second if per_second else float("nan")

    @property
    def held(self) -> bool:
        """Server-side p95 within the bound, no growing lag, (almost) every frame answered."""
        return (
            self.server_p95 <= LATENCY_BOUND_MS
            and self.result_share >= MIN_RESULT_SHARE
            and self.lag_growth_ms <= MAX_LAG_GROWTH_MS
            and self.errors == 0
        )

    @property
    def e2e_held(self) -> bool:
        """As :attr:`held`, with the client's capture-to-result latency instead."""
        return self.held and self.e2e_p95 <= LATENCY_BOUND_MS

    @property
    def in_target(self) -> bool:
        """Server-side p50 and p99 within the latency target, frames answered, no growing lag."""
        return (
            self.server_p50 <= TARGET_SERVER_P50_MS
            and self.server_p99 <= TARGET_SERVER_P99_MS
            and self.result_share >= MIN_RESULT_SHARE
            and self.lag_growth_ms <= MAX_LAG_GROWTH_MS
        )


def lag_growth(arrived: Sequence[float], latencies: Sequence[float]) -> float:
    """Median latency (ms) of the last third of the results minus that of the first third."""
    if len(latencies) < 6:
        return 0.0
    order = np.argsort(np.asarray(arrived))
    third = len(order) // 3
    lat = np.asarray(latencies)[order] * 1000
    return float(np.median(lat[-third:]) - np.median(lat[:third]))


def capacity_row(result: Any, transport: str) -> CapacityRow:
    """Summarise the ``transport`` streams of a :class:`clients.loadtest.LoadResult`."""
    streams = [s for s in result.streams if s.transport == transport]
    lat = [x for s in streams for x in s.latencies] or [float("nan")]
    server = [x for s in streams for x in s.server_ms] or [float("nan")]
    sent = sum(s.sent for s in streams)
    results = sum(s.results for s in streams)
    e2e = np.percentile(np.asarray(lat) * 1000, [50, 95, 99])
    srv = np.percentile(np.asarray(server), [50, 95, 99])
    cpu = [s.cpu for s in result.samples]
    return CapacityRow(
        transport=transport,
        streams=len(streams),
        fps_per_stream=results / result.duration / max(1, len(streams)),
        result_share=results / max(1, sent),
        e2e_p50=float(e2e[0]),
        e2e_p95=float(e2e[1]),
        e2e_p99=float(e2e[2]),
        server_p50=float(srv[0]),
        server_p95=float(srv[1]),
        server_p99=float(srv[2]),
        lag_growth_ms=max((lag_growth(s.arrived, s.latencies) for s in streams), default=0.0),
        errors=sum(s.errors for s in streams),
        server_cpu=float(np.median(cpu)) if cpu else 0.0,
        client_cpu=result.client_cpu,
        loadavg=os.getloadavg()[0],
    )


def capacity_rows(
    ladder: Sequence[int],
    transports: Sequence[str],
    duration: float,
    profile: str,
    phases: str = "independent",
    max_video_kbps: int | None = None,
) -> list[CapacityRow]:
    """Step up the streams of each transport (one local server) until a step is not held."""
    logging.getLogger("aioice").setLevel(logging.WARNING)  # one line per ICE check otherwise
    rows = []
    with local_server(profile, max_video_kbps) as (url, pid):
        for transport in transports:
            for n in ladder:
                ws, rtc = (n, 0) if transport == "websocket" else (0, n)
                result = uvloop.run(measure_load(url, pid, ws, rtc, FPS, duration, 1.0, phases))
                row = capacity_row(result, transport)
                rows.append(row)
                time.sleep(1.0)  # let the sessions close
                if not row.held:
                    break
    return rows


def format_capacity(rows: Sequence[CapacityRow]) -> str:
    header = ["transport", "streams", "fps/stream", "results %", "e2e p50", "p95", "p99",
              "server p50", "p95", "p99", "lag growth ms", "server cpu %", "client cpu %",
              "server cpu ms/frame", "load avg", "held", "e2e held", "in target"]  # fmt: skip
    body = [[r.transport, str(r.streams), f"{r.fps_per_stream:.1f}",
             f"{100 * r.result_share:.0f}", f"{r.e2e_p50:.1f}", f"{r.e2e_p95:.1f}",
             f"{r.e2e_p99:.1f}", f"{r.server_p50:.1f}", f"{r.server_p95:.1f}",
             f"{r.server_p99:.1f}", f"{r.lag_growth_ms:+.1f}", f"{r.server_cpu:.0f}",
             f"{r.client_cpu:.0f}", f"{r.server_cpu_ms_per_frame:.1f}", f"{r.loadavg:.1f}",
             yes(r.held), yes(r.e2e_held),
             yes(r.in_target)] for r in rows]  # fmt: skip
    return table(header, body)


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


def cpu_cost(rows: Sequence[CapacityRow]) -> float:
    """Median server CPU ms per processed frame over ``rows`` (0 when unknown)."""
    costs = [r.server_cpu_ms_per_frame for r in rows if r.server_cpu > 0]
    return statistics.median(costs) if costs else 0.0


def capacity_summary(rows: Sequence[CapacityRow]) -> dict[str, dict[str, float]]:
    """Per transport: most streams held (each criterion), streams per core and per server core."""
    cores = os.cpu_count() or 1
    out = {}
    for transport in dict.fromkeys(r.transport for r in rows):
        mine = [r for r in rows if r.transport == transport]
        best = max((r for r in mine if r.held), key=lambda r: r.streams, default=None)
        out[transport] = {
            "max_streams": best.streams if best else 0,
            "max_streams_e2e": max((r.streams for r in mine if r.e2e_held), default=0),
            "max_streams_in_target": max((r.streams for r in mine if r.in_target), default=0),
            "streams_per_core": (best.streams / cores) if best else 0.0,
            "streams_per_server_core": (best.streams * 100 / best.server_cpu)
            if best and best.server_cpu
            else 0.0,
            # From the CPU a processed frame costs the server (median over the steps):
            # streams of FPS one core could serve if nothing else ran on it.
            "streams_per_core_by_cpu": 1000 / (FPS * cost) if (cost := cpu_cost(mine)) else 0.0,
        }
    return out


# ---------------------------------------------------------------- 4. OCR alternative


@dataclass(frozen=True, slots=True)
class LabelledFrame:
    content: str
    image: ImageBGR
    has_fu: bool


def labelled_frames(
    clips: int, per_clip: int, width: int = 640, height: int = 480
) -> list[LabelledFrame]:
    """``per_clip`` frames from each of ``clips`` clips per content: fu, negative, empty."""
    from detectors.synth.scenes import make_clip

    out = []
    for content in ("fu", "negative", "empty"):
        for c in range(clips):
            seed = 500 + c + {"fu": 0, "negative": 1000, "empty": 2000}[content]
            clip = make_clip(seed, max(per_clip, 2) * 5, FPS, width, height, content=content)
            for i in np.linspace(0, len(clip.frames) - 1, per_clip).astype(int):
                out.append(LabelledFrame(content, clip.frames[i], len(clip.boxes[i]) > 0))
    return out


@dataclass(frozen=True, slots=True)
class Score:
    name: str
    frames: int
    tp: int
    fp: int
    fn: int
    ms: float  # median per frame
    p90_ms: float

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")


def score(name: str, truth: Sequence[bool], said: Sequence[bool], ms: Sequence[float]) -> Score:
    pairs = list(zip(truth, said, strict=True))
    return Score(
        name, len(pairs),
        sum(t and s for t, s in pairs), sum(s and not t for t, s in pairs),
        sum(t and not s for t, s in pairs),
        statistics.median(ms), percentile(ms, 90),
    )  # fmt: skip


@contextlib.contextmanager
def no_network() -> Iterator[list[str]]:
    """Refuse (and record) every socket connection or name lookup made inside the block."""
    attempts: list[str] = []
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        attempts.append(f"connect {address!r}")
        raise OSError("network disabled by the benchmark")

    def lookup(*args: Any, **kwargs: Any) -> Any:
        attempts.append(f"getaddrinfo {args[:2]!r}")
        raise OSError("network disabled by the benchmark")

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = lookup
    try:
        yield attempts
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.getaddrinfo = real_lookup


def rapidocr_engine(threads: int, **config: Any) -> Callable[[ImageBGR], str] | None:
    """RapidOCR's whole pipeline (det, cls, rec) as ``image -> text``; ``None`` if not installed."""
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError:
        return None
    engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1, **config)

    def read(image: ImageBGR) -> str:
        found, _ = engine(image)
        return "".join(str(line[1]) for line in found or [])

    return read


def rapidocr_models() -> dict[str, int]:
    """The model files inside the installed wheel, with their sizes (no download at run time)."""
    try:
        import rapidocr_onnxruntime  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return {}
    folder = Path(rapidocr_onnxruntime.__file__).parent / "models"
    return {p.name: p.stat().st_size for p in sorted(folder.glob("*.onnx"))}


def fires(detector: OnnxDetector) -> Callable[[ImageBGR], bool]:
    return lambda image: any(d.label == "fu" for d in detector.detect(image))


def reads_fu(engine: Callable[[ImageBGR], str]) -> Callable[[ImageBGR], bool]:
    return lambda image: "福" in engine(image)


def ocr_scores(
    frames: Sequence[LabelledFrame], tiers: Sequence[str], threads: int, ocr_configs: dict[str, Any]
) -> tuple[list[Score], list[str]]:
    """Ours (each tier, INT8) vs RapidOCR configs, frame by frame, alternating on each frame."""
    readers: dict[str, Callable[[ImageBGR], bool]] = {}
    for tier in tiers:
        readers[f"ours int8 {tier}"] = fires(OnnxDetector(find_card(tier, "int8"), threads))
    with no_network() as attempts:
        for name, config in ocr_configs.items():
            engine = rapidocr_engine(threads, **config)
            if engine is not None:
                readers[name] = reads_fu(engine)
        said: dict[str, list[bool]] = {name: [] for name in readers}
        ms: dict[str, list[float]] = {name: [] for name in readers}
        for fn in readers.values():  # warm-up
            fn(frames[0].image)
        for frame in frames:
            for name, fn in readers.items():
                started = time.perf_counter()
                said[name].append(fn(frame.image))
                ms[name].append((time.perf_counter() - started) * 1000)
    truth = [f.has_fu for f in frames]
    return [score(name, truth, said[name], ms[name]) for name in readers], attempts


def format_ocr(scores: Sequence[Score]) -> str:
    ours = next((s for s in scores if s.name.startswith("ours")), None)
    body = [[s.name, str(s.frames), str(s.tp), str(s.fp), str(s.fn), f"{s.recall:.3f}",
             f"{s.precision:.3f}", f"{s.ms:.1f}", f"{s.p90_ms:.1f}",
             f"{s.ms / ours.ms:.1f}" if ours else "-"] for s in scores]  # fmt: skip
    return table(["method", "frames", "TP", "FP", "FN", "recall", "precision", "ms p50", "ms p90",
                  "x ours (first row)"], body)  # fmt: skip


OCR_CONFIGS: dict[str, dict[str, Any]] = {
    "RapidOCR 1.4.4 default": {},
    "RapidOCR, det at 480 px": {"det_limit_side_len": 480},
}


# ---------------------------------------------------------------- command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument(
        "--tiers", help="comma-separated (default: every tier shipped in both builds)"
    )
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per timing")
    parser.add_argument("--runs", type=int, default=10, help="calls per case and round")
    parser.add_argument("--frames", type=int, default=30, help="frames per clip, pipeline, frame")
    parser.add_argument("--frame-clips", type=int, default=4, help="clips per size/content, frame")
    parser.add_argument(
        "--clock-ghz", type=float, help="core clock for the peaks (default: measured, else nominal)"
    )
    parser.add_argument("--ladder", default="1,2,4,6,8,10,12,16", help="stream counts, capacity")
    parser.add_argument("--transports", default="websocket,webrtc")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per capacity step")
    parser.add_argument("--profile", default="high", help="device profile of the server sessions")
    add_phases_argument(parser)
    add_bitrate_argument(parser)
    parser.add_argument(
        "--bitrate-clips", type=int, default=40, help="clips with 福 (and half as many without)"
    )
    parser.add_argument("--ocr-clips", type=int, default=40, help="clips per content, OCR")
    parser.add_argument("--ocr-per-clip", type=int, default=2, help="frames per clip, OCR")
    parser.add_argument("--ocr-threads", type=int, default=1, help="threads, ours and OCR alike")


def shipped_tiers() -> list[str]:
    """Tiers with both an FP32 and an INT8 model, smallest first (by MACs)."""
    cards = list_cards()
    both = {c.tier for c in cards if c.precision == "fp32"} & {
        c.tier for c in cards if c.precision == "int8"
    }
    return sorted(both, key=lambda t: min(c.macs for c in cards if c.tier == t))


def run_bench(args: argparse.Namespace, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the chosen sections, printing each table as it is done; every number, as a dict."""
    sections = [s for s in args.only.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; have {list(SECTIONS)}")
    tiers = [t for t in (args.tiers or "").split(",") if t] or shipped_tiers()
    info = machine()
    measured = None if args.clock_ghz else measure_clock_ghz()
    info["clock_measured_ghz"] = measured
    if args.clock_ghz:
        peak = peaks(info["cpu"], args.clock_ghz, "given with --clock-ghz")
    elif measured and measured * 1000 >= info["cpu"]["mhz"]:
        peak = peaks(info["cpu"], measured, "measured: dependent-add chain, best of 2000 x ~1.3 ms")
    else:
        peak = peaks(info["cpu"])
    report: dict[str, Any] = {"machine": info, "peaks": asdict(peak), "args": vars(args).copy()}
    report["args"]["json"] = str(args.json) if args.json else None
    cpu = info["cpu"]
    flags = " ".join(f for f, on in cpu["simd"].items() if on)
    out(f"# run.py bench, {info['date']}")
    out(f"CPU: {cpu['model']}, {cpu['logical_cores']} logical cores, {cpu['mhz']:.0f} MHz; {flags}")
    out("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    out(f"threads: {json.dumps(info['threads'])}; load average {info['loadavg']}")
    out(f"peaks: {peak.derivation}")
    if "detector" in sections:
        counts = sorted({1, os.cpu_count() or 1})
        rows = detector_rows(tiers, counts, peak, args.rounds, args.runs)
        out("\n## Detector: network only (ONNX Runtime run), FP32 vs INT8\n")
        out(format_detector(rows))
        ceilings = gemm_ceilings(peak, max(3, args.rounds // 2))
        if ceilings:
            out("\n" + format_ceilings(ceilings))
        profiles = [
            profile_ops(find_card(tier, precision), 1, args.runs * 2)
            for tier in tiers
            for precision in ("fp32", "int8")
        ]
        out("\n## Where the time goes (ORT profiler, 1 thread, ms per run)\n")
        out(format_profiles(profiles))
        out("\n" + format_layers(profiles[-2], profiles[-1]))
        checks = [c for tier in tiers for c in conv_checks(find_card(tier, "int8"))]
        if checks:
            out("\n" + format_conv_checks(checks))
        variants = int8_variants(tiers[-1], args.rounds, args.runs)
        if variants:
            out("\n" + format_variants(tiers[-1], variants))
        else:
            out(
                f"\n(no INT8 variants of {tiers[-1]}: needs an INT8 model that starts "
                "with QuantizeLinear -> QLinearConv; an FP32 stem is already the second one)"
            )
        sizes = speedup_by_size(tiers, INT8_SIZES, args.rounds, args.runs)
        out("\n## INT8 speedup by input size: the same weights at other sizes\n")
        out(format_sizes(sizes))
        report["detector"] = {
            "rows": [asdict(r) for r in rows],
            "speedup_by_size": [asdict(r) for r in sizes],
            "gemm_ceilings": [asdict(c) for c in ceilings],
            "profiles": [asdict(p) for p in profiles],
            "conv_checks": [asdict(c) for c in checks],
            "int8_variants": [asdict(v) for v in variants],
        }
    if "pipeline" in sections:
        high_tier = tiers[-1]
        rows_p = pipeline_rows(SIZES, high_tier, args.frames, args.rounds)
        out(f"\n## Pipeline per frame (share of the {FRAME_MS:.1f} ms interval at {FPS:g} fps)\n")
        out(format_pipeline(rows_p))
        report["pipeline"] = {
            "rows": [asdict(r) | {"share": r.share} for r in rows_p],
            "totals": pipeline_totals(rows_p),
        }
    if "frame" in sections:
        from evals.frame_cost import cost_rows, format_rows

        detector = OnnxDetector(find_card(tiers[-1], "int8"), threads=1)
        rows_f = cost_rows(detector, clips=args.frame_clips, seconds=args.frames / FPS)
        out(f"\n## Whole frame vs the first look's network ({tiers[-1]} INT8, 1 thread)\n")
        out(format_rows(rows_f))
        report["frame"] = [asdict(r) | {"ratio": r.ratio, "ratio_p90": r.ratio_p90} for r in rows_f]
    if "capacity" in sections:
        ladder = [int(n) for n in args.ladder.split(",") if n]
        transports = [t for t in args.transports.split(",") if t]
        rows_c = capacity_rows(
            ladder, transports, args.duration, args.profile, args.phases, args.max_video_kbps
        )
        limit = "server default" if args.max_video_kbps is None else args.max_video_kbps
        out(
            f"\n## Capacity: {FPS:g} fps 640x480 streams, profile {args.profile!r}, "
            f"{args.phases} camera phases, --max-video-kbps {limit}, {args.duration:g} s per step, "
            "load generator on the same machine\n"
        )
        out(format_capacity(rows_c))
        summary = capacity_summary(rows_c)
        for transport, s in summary.items():
            out(
                f"{transport}: {s['max_streams']:.0f} streams held "
                f"({s['streams_per_core']:.1f} per core of this machine, "
                f"{s['streams_per_server_core']:.1f} per core of server CPU; "
                f"{s['streams_per_core_by_cpu']:.1f} per core from CPU ms per frame); "
                f"{s['max_streams_e2e']:.0f} with e2e p95 <= {LATENCY_BOUND_MS:g} ms; "
                f"{s['max_streams_in_target']:.0f} within server p50 <= "
                f"{TARGET_SERVER_P50_MS:g} ms, p99 <= {TARGET_SERVER_P99_MS:g} ms"
            )
        report["capacity"] = {
            "rows": [
                asdict(r)
                | {"held": r.held, "e2e_held": r.e2e_held, "in_target": r.in_target}
                | {"server_cpu_ms_per_frame": r.server_cpu_ms_per_frame}
                for r in rows_c
            ],
            "summary": summary,
        }
    if "bitrate" in sections:
        detector = OnnxDetector(find_card("l", "int8"))
        rows_b = bitrate_rows(detector, args.bitrate_clips, args.bitrate_clips // 2)
        out(
            f"\n## Bitrate: {args.bitrate_clips} clips with 福 and {args.bitrate_clips // 2} "
            f"without, {FRAMES} frames 640x480 at {FPS:g} fps, VP8, l INT8 at "
            f"{detector.threshold:g}\n"
        )
        out(format_bitrate(rows_b))
        report["bitrate"] = [asdict(r) for r in rows_b]
    if "ocr" in sections:
        frames = labelled_frames(args.ocr_clips, args.ocr_per_clip)
        ours = list(dict.fromkeys([tiers[-1], tiers[0]]))  # the largest and the smallest
        scores, attempts = ocr_scores(frames, ours, args.ocr_threads, OCR_CONFIGS)
        out(f"\n## The alternative: OCR every frame ({len(frames)} frames 640x480, "
            f"{args.ocr_threads} thread(s) each)\n")  # fmt: skip
        if not any(s.name.startswith("RapidOCR") for s in scores):
            out("(rapidocr-onnxruntime not installed: pip install -e '.[bench]')")
        out(format_ocr(scores))
        models = rapidocr_models()
        if models:
            out(f"RapidOCR models from the wheel: {models}; network attempts: {len(attempts)}")
        report["ocr"] = {
            "scores": [asdict(s) | {"recall": s.recall, "precision": s.precision} for s in scores],
            "rapidocr_models": models,
            "network_attempts": attempts,
            "content_counts": dict(Counter(f.content for f in frames)),
        }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    return report


def bench_main(args: argparse.Namespace) -> int:
    run_bench(args)
    return 0
