"""run.py bench code paths on tiny inputs: every table builds; no timing is asserted."""

import argparse
import contextlib
import json
import math
import socket

import numpy as np
import pytest

from clients import bench
from clients.bitrate_bench import FRAMES, bitrate_rows, format_bitrate
from clients.loadtest import LoadResult, Sample, StreamStats
from detectors.card import find_card
from detectors.onnx_detector import OnnxDetector

TIERS = bench.shipped_tiers()
needs_model = pytest.mark.skipif(not TIERS, reason="no tier shipped in both FP32 and INT8")


def avx2_cpu(*extra: str) -> dict[str, object]:
    flags = {"avx2", "fma", *extra}
    return {"mhz": 2000.0, "simd": {f: True for f in flags}}


@pytest.mark.parametrize(
    ("extra", "int8_over_fp32"),
    [((), 2.0), (("avx_vnni",), 4.0), (("avx512f", "avx512_vnni"), 4.0)],
)
def test_peaks_follow_the_simd_flags(extra, int8_over_fp32):
    peak = bench.peaks(avx2_cpu(*extra))
    wide = 2 if "avx512f" in extra else 1
    assert peak.clock_ghz == 2.0
    assert peak.fp32_per_core == pytest.approx(2 * 16 * wide * 2.0)
    assert peak.int8_per_core / peak.fp32_per_core == pytest.approx(int8_over_fp32)
    assert "MAC/cycle" in peak.derivation


def test_a_given_clock_wins():
    assert bench.peaks(avx2_cpu(), clock_ghz=3.0, source="given").clock_ghz == 3.0


def test_machine_records_cpu_versions_and_threads():
    info = bench.machine()
    assert info["cpu"]["logical_cores"] >= 1
    assert {"onnxruntime", "numpy", "opencv", "av"} <= set(info["versions"])
    assert "server_detector_threads" in info["threads"]


def test_interleaved_times_every_call_of_every_case():
    calls: list[str] = []
    times = bench.interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, 2
    )
    assert {k: [len(r) for r in v] for k, v in times.items()} == {"a": [2, 2, 2], "b": [2, 2, 2]}
    assert calls.count("a") == calls.count("b") == 2 + 6  # warm-up included
    assert len(bench.round_ratios(times["a"], times["b"])) == 3


def test_lag_growth_sees_a_queue_building_up():
    arrived = list(range(30))
    assert bench.lag_growth(arrived, [0.02] * 30) == 0.0
    assert bench.lag_growth(arrived, [0.02 + 0.01 * i for i in range(30)]) > 100
    assert bench.lag_growth([0, 1], [0.5, 0.9]) == 0.0  # too few to tell


@needs_model
def test_detector_rows_profiles_and_ceilings():
    peak = bench.peaks(avx2_cpu())
    (row,) = bench.detector_rows(TIERS[:1], [1], peak, rounds=1, runs=1)
    assert row.macs > 0 and row.fp32_ms > 0 and row.int8_ms > 0
    assert math.isfinite(row.speedup) and row.int8_ideal_ms > 0
    assert "int8 x ideal" in bench.format_detector([row])
    profile = bench.profile_ops(find_card(TIERS[0], "int8"), threads=1, runs=1)
    assert profile.by_class["conv"] > 0 and "QLinearConv" in profile.by_op
    assert "QLinearConv" in bench.format_profiles([profile])
    ceilings = bench.gemm_ceilings(peak, rounds=1, size=32)
    assert len(ceilings) == 3 and all(c.gop_s > 0 for c in ceilings)
    checks = bench.conv_checks(find_card(TIERS[0], "int8"))
    assert checks and all(0 <= c.off_share <= 1 and c.max_off >= 0 for c in checks)
    assert "QLinearConv layers" in bench.format_conv_checks(checks)
    variants = bench.int8_variants(TIERS[0], rounds=1, runs=1, frames=1)  # [] for an FP32 stem
    assert len(variants) in (0, 4)
    assert all(v.frames == 3 and v.ms > 0 for v in variants)
    assert not variants or variants[0].heat_diff_max == 0.0  # FP32 against itself
    sizes = bench.speedup_by_size(TIERS[:1], [(64, 48), (128, 96)], rounds=1, runs=1)
    assert [(r.width, r.height) for r in sizes] == [(64, 48), (128, 96)]
    assert all(r.fp32_ms > 0 and r.int8_ms > 0 and not r.own_size for r in sizes)
    assert "128x96" in bench.format_sizes(sizes)


@needs_model
def test_pipeline_rows_cover_every_stage_and_both_paths():
    rows = bench.pipeline_rows([(160, 120)], TIERS[0], n_frames=3, rounds=1)
    stages = {r.stage for r in rows}
    assert {"VP8 decode", "H264 decode", "JPEG decode (imdecode)", "letterbox"} <= stages
    assert {"voting (balanced)", "JSON message", "output decode (peaks, NMS)"} <= stages
    totals = bench.pipeline_totals(rows)["160x120"]
    assert totals["webrtc"] > 0 and totals["websocket"] > 0
    assert "total, webrtc path" in bench.format_pipeline(rows)


def stream_stats(transport: str, latency: float, server_ms: float, n: int = 30) -> StreamStats:
    stats = StreamStats(transport, sent=n, results=n)
    stats.latencies = [latency] * n
    stats.server_ms = [server_ms] * n
    stats.arrived = [float(i) for i in range(n)]
    return stats


def test_capacity_rows_judge_server_and_client_latency():
    result = LoadResult(
        [stream_stats("websocket", 0.03, 8.0), stream_stats("webrtc", 0.12, 9.0)],
        [Sample(1.0, 50.0, 100.0, 20)],
        duration=2.0,
        client_cpu=10.0,
    )
    ws, rtc = bench.capacity_row(result, "websocket"), bench.capacity_row(result, "webrtc")
    assert ws.held and ws.e2e_held and ws.in_target
    assert rtc.held and not rtc.e2e_held and rtc.in_target  # 120 ms at the client
    slow = bench.capacity_row(
        LoadResult([stream_stats("websocket", 0.2, 150.0)], [], 2.0, 0.0), "websocket"
    )
    assert not slow.held and not slow.in_target
    summary = bench.capacity_summary([ws, rtc, slow])
    assert summary["websocket"]["max_streams"] == 1
    assert summary["webrtc"]["max_streams_e2e"] == 0
    assert "in target" in bench.format_capacity([ws, rtc, slow])


@needs_model
def test_capacity_against_a_real_server_for_one_second():
    (row,) = bench.capacity_rows([1], ["websocket"], duration=1.0, profile="host")
    assert row.streams == 1 and row.errors == 0


@needs_model
def test_capacity_asks_the_server_for_the_given_bitrate_limit(monkeypatch):
    asked: list[tuple[str, int | None]] = []

    @contextlib.contextmanager
    def fake_server(profile, max_video_kbps=None):
        asked.append((profile, max_video_kbps))
        yield "http://127.0.0.1:9", None

    monkeypatch.setattr(bench, "local_server", fake_server)
    assert bench.capacity_rows([], ["webrtc"], 1.0, "high", max_video_kbps=0) == []
    assert asked == [("high", 0)]


@needs_model
def test_bitrate_rows_code_the_clips_and_keep_the_detections():
    detector = OnnxDetector(find_card("l", "int8"))
    rows = bitrate_rows(detector, fu_clips=1, negative_clips=1, rates=(1500, 300))
    uncoded, high, low = rows
    assert [r.asked_kbps for r in rows] == [None, 1500, 300]
    assert all(r.frames == 2 * FRAMES and r.fu == uncoded.fu > 0 for r in rows)
    assert uncoded.packets_per_frame == 0 and uncoded.coded_kbps == 0
    # Fewer bits, fewer packets; the encoder lands near what it was asked for.
    assert high.packets_per_frame > low.packets_per_frame >= 1
    assert 0.5 * 300 < low.coded_kbps < 2 * 300
    assert all(0 <= r.recall <= 1 and r.found <= r.fu for r in rows)
    table = format_bitrate(rows)
    assert "| uncoded |" in table and "| 300 |" in table


def test_no_network_refuses_and_records_connections():
    with bench.no_network() as attempts, pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert attempts
    assert socket.getaddrinfo is not None and "benchmark" not in repr(socket.socket.connect)


@needs_model
def test_ocr_scores_ours_without_rapidocr():
    frames = bench.labelled_frames(clips=1, per_clip=1, width=160, height=120)
    assert [f.content for f in frames] == ["fu", "negative", "empty"]
    scores, attempts = bench.ocr_scores(frames, TIERS[:1], threads=1, ocr_configs={})
    (ours,) = scores
    assert ours.frames == 3 and ours.tp + ours.fn == sum(f.has_fu for f in frames)
    assert attempts == []
    assert "recall" in bench.format_ocr(scores)


def test_rapidocr_reads_a_frame_offline():
    pytest.importorskip("rapidocr_onnxruntime")
    assert bench.rapidocr_models()
    with bench.no_network() as attempts:
        engine = bench.rapidocr_engine(threads=1)
        assert engine is not None
        assert isinstance(engine(np.full((120, 160, 3), 255, np.uint8)), str)
    assert attempts == []


@needs_model
def test_run_bench_writes_json(tmp_path):
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    out = tmp_path / "bench.json"
    args = parser.parse_args(
        [
            "--only",
            "detector",
            "--tiers",
            TIERS[0],
            "--rounds",
            "1",
            "--runs",
            "1",
            "--clock-ghz",
            "3.0",
            "--json",
            str(out),
        ]
    )
    lines: list[str] = []
    report = bench.run_bench(args, lines.append)
    assert json.loads(out.read_text())["detector"]["rows"] == json.loads(
        json.dumps(report["detector"]["rows"])
    )
    assert any("FP32 vs INT8" in line for line in lines)
    with pytest.raises(SystemExit):
        bench.run_bench(parser.parse_args(["--only", "nonsense"]), lines.append)
