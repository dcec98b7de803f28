"""Where every millisecond goes: ``python run.py bench`` prints tables (``--json PATH`` too).

    python run.py bench                               # every section
    python run.py bench --only detector,pipeline      # a subset
    python run.py bench --json bench.json             # every number, with the machine

Sections, each measured side by side in this one process (cases interleaved
round by round, so that a neighbour's load hits all of them alike), each its
own module of :mod:`evals.bench`:

1. ``detector``: per model tier, FP32 vs INT8 network latency at one thread and
   at all cores, the speedup, the achieved GOP/s against this CPU's peak
   (:func:`evals.bench.machine.peaks`), a GEMM ceiling measured with ONNX Runtime itself, and where
   the time goes by operator type (ONNX Runtime's profiler).
2. ``pipeline``: per frame at 640x480 and 1280x720, each server stage (VP8 and
   H.264 decode, JPEG decode, colour conversion, letterbox, inference, output
   decoding, voting, JSON) in ms and as a share of the 15 fps frame interval.
3. ``frame``: the whole frame against the first look's network (:mod:`evals.frame_cost`).
4. ``cores``: one frame's CPU in a pinned process while 1, 2, 4, ... such processes run at
   once (:mod:`evals.bench.cores`): what the host itself adds as workers are added.
5. ``capacity``: concurrent 15 fps websocket and WebRTC streams the server
   holds (``evals.loadtest`` against a local ``run.py serve``), server-side
   latency (frame arrival to result sent) and streams per core.
6. ``bitrate``: per VP8 bitrate, RTP packets a frame, decode time and the
   detector's per-frame recall on coded clips against uncoded frames
   (:mod:`evals.bench.bitrate`; what ``serve --max-video-kbps`` rests on).
7. ``ocr``: the alternative, RapidOCR (``pip install -e '.[bench]'``), on the
   same generated clips: recall, precision and time per frame, ours vs theirs.

Nothing here asserts a time: these machines are shared. Read medians, the
spread of the per-round ratios, and the load average recorded with each run.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from detectors.card import find_card, list_cards
from detectors.onnx_detector import OnnxDetector
from evals.bench.bitrate import FRAMES, bitrate_rows, format_bitrate
from evals.bench.capacity import (
    LATENCY_BOUND_MS,
    TARGET_SERVER_P50_MS,
    TARGET_SERVER_P99_MS,
    capacity_rows,
    capacity_summary,
    format_capacity,
)
from evals.bench.cores import core_counts, cores_rows, format_cores
from evals.bench.detector import (
    INT8_SIZES,
    conv_checks,
    detector_rows,
    format_ceilings,
    format_conv_checks,
    format_detector,
    format_layers,
    format_profiles,
    format_sizes,
    format_variants,
    gemm_ceilings,
    int8_variants,
    profile_ops,
    speedup_by_size,
)
from evals.bench.machine import FPS, FRAME_MS, machine, measure_clock_ghz, peaks
from evals.bench.ocr import OCR_CONFIGS, format_ocr, labelled_frames, ocr_scores, rapidocr_models
from evals.bench.pipeline import SIZES, format_pipeline, pipeline_rows, pipeline_totals
from evals.loadtest import add_bitrate_argument, add_phases_argument, clip_frames, worker_counts
from stream.prefork import usable_cores

SECTIONS = ("detector", "pipeline", "frame", "cores", "capacity", "bitrate", "ocr")


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
    parser.add_argument(
        "--cores",
        type=worker_counts,
        help="processes at once, cores section (default: 1, 2, 4, ... and every usable core)",
    )
    parser.add_argument(
        "--cores-seconds", type=float, default=5.0, help="seconds each step runs, cores section"
    )
    parser.add_argument(
        "--clip", help="video or image folder for the cores section (default: a generated one)"
    )
    parser.add_argument("--ladder", default="1,2,4,6,8,10,12,16", help="stream counts, capacity")
    parser.add_argument(
        "--transports", default="websocket,webrtc", help="capacity: transports, comma-separated"
    )
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
    if "cores" in sections:
        counts = args.cores or core_counts(usable_cores())
        core_rows = cores_rows(counts, clip_frames(FPS, args.clip), args.cores_seconds, tiers[-1])
        out(
            f"\n## Cores: one frame's CPU while other cores work ({tiers[-1]} INT8, 1 thread, "
            f"a pinned process a core, {args.cores_seconds:g} s a step)\n"
        )
        out(format_cores(core_rows))
        report["cores"] = [asdict(r) for r in core_rows]
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


def run(args: argparse.Namespace) -> int:
    run_bench(args)
    return 0
