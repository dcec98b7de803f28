"""``run.py profiles``: each device profile, the model tier it gets and its emulated latency.

Pure computation from the profiles and the model cards; ``--bench`` adds this
host's real inference time of each chosen model.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from detectors.card import list_cards
from evals.tables import fmt, percentile, table
from hw_sim import PROFILES, DeviceProfile, EmulatedDevice, ModelSpec, choose_model
from stream.cli_types import add_profiles_option

if TYPE_CHECKING:  # the detectors are loaded for --bench only
    from stream.pipelines import Pipelines

SUSTAINED_S = 300.0
"""Back-to-back frames for this long (media time) give the sustained (thermal) latency."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bench", action="store_true", help="also time each model here")
    add_profiles_option(parser)


@dataclass(frozen=True, slots=True)
class ProfileRow:
    profile: DeviceProfile
    spec: ModelSpec | None
    reason: str
    cold_ms: float | None  # nominal, no jitter
    close_up_ms: float | None  # nominal, a frame whose one candidate gets a close-up (two runs)
    p50_ms: float | None  # first 300 frames back to back, jitter and heat
    p95_ms: float | None
    sustained_ms: float | None  # p50 after SUSTAINED_S of back-to-back frames
    host_ms: float | None = None


def back_to_back(
    profile: DeviceProfile, spec: ModelSpec, seconds: float, seed: int = 0
) -> list[tuple[float, float]]:
    """``(start, latency)`` of frames run back to back from cold for ``seconds`` (media time)."""
    device = EmulatedDevice(profile, spec, seed)
    t, index, out = 0.0, 0, []
    while t < seconds:
        latency = device.run(index, t)
        out.append((t, latency))
        t += latency
        index += 1
    return out


def profile_rows(specs: Sequence[ModelSpec], precision: str = "int8") -> list[ProfileRow]:
    rows = []
    for profile in PROFILES.values():
        if not specs:
            rows.append(ProfileRow(profile, None, "no model cards", None, None, None, None, None))
            continue
        choice = choose_model(profile, specs, host_precision=precision)
        if not profile.emulated:
            rows.append(
                ProfileRow(profile, choice.spec, choice.reason, None, None, None, None, None)
            )
            continue
        runs = back_to_back(profile, choice.spec, SUSTAINED_S + 10.0)
        first = [lat * 1000 for _, lat in runs[:300]]
        # A frame slower than the window (a profile at its slowest limits) may leave no start
        # in it: the last frame then stands for the sustained speed.
        late = [lat * 1000 for t, lat in runs if t >= SUSTAINED_S] or [runs[-1][1] * 1000]
        rows.append(
            ProfileRow(
                profile,
                choice.spec,
                choice.reason + ("" if choice.fits else " (over budget)"),
                (choice.latency or 0.0) * 1000,
                choice.spec.nominal_latency(profile, runs=2.0) * 1000,
                statistics.median(first),
                percentile(first, 95),
                statistics.median(late),
            )
        )
    return rows


def measure_host_ms(pipelines: Pipelines, spec: ModelSpec, runs: int = 20) -> float:
    """Median real inference time of ``spec``'s detector here, on a 640x480 frame."""
    detector = pipelines.models[spec]
    image = np.random.default_rng(0).integers(0, 255, (480, 640, 3), dtype=np.uint8)
    detector.detect(image)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        detector.detect(image)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def format_profiles(rows: Sequence[ProfileRow]) -> str:
    header = [
        "profile", "camera", "build", "GOP/s", "budget ms", "tier",
        "cold ms", "1 close-up ms", "p50 ms", "p95 ms", f"after {SUSTAINED_S / 60:.0f} min",
        "host ms", "why",
    ]  # fmt: skip
    body = []
    for r in rows:
        p = r.profile
        camera = f"{p.camera_width}x{p.camera_height}@{p.camera_fps:g}" if p.emulated else "as sent"
        body.append(
            [
                p.name,
                camera,
                r.spec.precision if r.spec else (p.precision if p.emulated else "host"),
                f"{p.gop_s(p.int8):g}" if p.emulated else "-",
                f"{p.budget_ms:.1f}" if p.budget_ms else "-",
                r.spec.tier if r.spec else "-",
                fmt(r.cold_ms),
                fmt(r.close_up_ms),
                fmt(r.p50_ms),
                fmt(r.p95_ms),
                fmt(r.sustained_ms),
                fmt(r.host_ms),
                r.reason,
            ]
        )
    notes = [f"  {p.name}: {p.description}" for p in PROFILES.values()]
    return table(header, body) + "\n" + "\n".join(notes)


def run(args: argparse.Namespace) -> int:
    cards = list_cards()
    specs = [ModelSpec.from_card(card) for card in cards]
    rows = profile_rows(specs)
    if args.bench and specs:
        from stream.pipelines import Pipelines

        pipelines = Pipelines.from_models()
        try:
            rows = [
                row
                if row.spec is None
                else replace(row, host_ms=measure_host_ms(pipelines, row.spec))
                for row in rows
            ]
        finally:
            pipelines.shutdown()
    print(format_profiles(rows))
    if not specs:
        print("\nno model cards in detectors/models: tiers and latencies are unknown")
    return 0
