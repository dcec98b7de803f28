"""The machine a bench ran on (CPU, clock, peaks, versions) and timing cases in turn."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import onnxruntime as ort

FPS = 15.0
"""The camera frame rate every section assumes."""
FRAME_MS = 1000.0 / FPS
"""The frame interval the pipeline's shares are of."""


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
