"""run.py bench, detector section on tiny inputs: every table builds; no timing is asserted."""

import math

from bench_cases import TIERS, avx2_cpu, needs_model

from detectors.card import find_card
from evals.bench import detector, machine


@needs_model
def test_detector_rows_profiles_and_ceilings():
    peak = machine.peaks(avx2_cpu())
    (row,) = detector.detector_rows(TIERS[:1], [1], peak, rounds=1, runs=1)
    assert row.macs > 0 and row.fp32_ms > 0 and row.int8_ms > 0
    assert math.isfinite(row.speedup) and row.int8_ideal_ms > 0
    assert "int8 x ideal" in detector.format_detector([row])
    profile = detector.profile_ops(find_card(TIERS[0], "int8"), threads=1, runs=1)
    assert profile.by_class["conv"] > 0 and "QLinearConv" in profile.by_op
    assert "QLinearConv" in detector.format_profiles([profile])
    ceilings = detector.gemm_ceilings(peak, rounds=1, size=32)
    assert len(ceilings) == 3 and all(c.gop_s > 0 for c in ceilings)
    checks = detector.conv_checks(find_card(TIERS[0], "int8"))
    assert checks and all(0 <= c.off_share <= 1 and c.max_off >= 0 for c in checks)
    assert "QLinearConv layers" in detector.format_conv_checks(checks)
    variants = detector.int8_variants(TIERS[0], rounds=1, runs=1, frames=1)  # [] for an FP32 stem
    assert len(variants) in (0, 4)
    assert all(v.frames == 3 and v.ms > 0 for v in variants)
    assert not variants or variants[0].heat_diff_max == 0.0  # FP32 against itself
    sizes = detector.speedup_by_size(TIERS[:1], [(64, 48), (128, 96)], rounds=1, runs=1)
    assert [(r.width, r.height) for r in sizes] == [(64, 48), (128, 96)]
    assert all(r.fp32_ms > 0 and r.int8_ms > 0 and not r.own_size for r in sizes)
    assert "128x96" in detector.format_sizes(sizes)
