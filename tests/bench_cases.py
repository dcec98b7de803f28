"""Shared by the bench sections' tests: the tiers shipped in both builds, and a CPU."""

import pytest

from evals.bench.cli import shipped_tiers

TIERS = shipped_tiers()
needs_model = pytest.mark.skipif(not TIERS, reason="no tier shipped in both FP32 and INT8")


def avx2_cpu(*extra: str) -> dict[str, object]:
    flags = {"avx2", "fma", *extra}
    return {"mhz": 2000.0, "simd": {f: True for f in flags}}
