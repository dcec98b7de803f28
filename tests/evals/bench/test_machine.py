"""run.py bench's machine record and timing: peaks by SIMD flags, cases in turn."""

import pytest
from bench_cases import avx2_cpu

from evals.bench import machine


@pytest.mark.parametrize(
    ("extra", "int8_over_fp32"),
    [((), 2.0), (("avx_vnni",), 4.0), (("avx512f", "avx512_vnni"), 4.0)],
)
def test_peaks_follow_the_simd_flags(extra, int8_over_fp32):
    peak = machine.peaks(avx2_cpu(*extra))
    wide = 2 if "avx512f" in extra else 1
    assert peak.clock_ghz == 2.0
    assert peak.fp32_per_core == pytest.approx(2 * 16 * wide * 2.0)
    assert peak.int8_per_core / peak.fp32_per_core == pytest.approx(int8_over_fp32)
    assert "MAC/cycle" in peak.derivation


def test_a_given_clock_wins():
    assert machine.peaks(avx2_cpu(), clock_ghz=3.0, source="given").clock_ghz == 3.0


def test_machine_records_cpu_versions_and_threads():
    info = machine.machine()
    assert info["cpu"]["logical_cores"] >= 1
    assert {"onnxruntime", "numpy", "opencv", "av"} <= set(info["versions"])
    assert "server_detector_threads" in info["threads"]


def test_interleaved_times_every_call_of_every_case():
    calls: list[str] = []
    times = machine.interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, 2
    )
    assert {k: [len(r) for r in v] for k, v in times.items()} == {"a": [2, 2, 2], "b": [2, 2, 2]}
    assert calls.count("a") == calls.count("b") == 2 + 6  # warm-up included
    assert len(machine.round_ratios(times["a"], times["b"])) == 3
