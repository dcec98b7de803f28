"""Bench section ``capacity``: concurrent 15 fps streams a local ``run.py serve`` holds.

Websocket and WebRTC streams from :mod:`evals.loadtest`, server-side latency
(frame arrival to result sent) and streams per core.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import uvloop

from evals.bench.machine import FPS
from evals.loadtest import local_server, measure_load
from evals.tables import table

LATENCY_BOUND_MS = 100.0
"""A stream is held when its p95 server-side result latency is at most this (and see below)."""
MIN_RESULT_SHARE = 0.9
"""... and at least this share of its frames come back as results (the rest are dropped)."""
MAX_LAG_GROWTH_MS = 20.0
"""... and its median latency in the last third of the run is at most this above the first third."""
TARGET_SERVER_P50_MS = 10.0
TARGET_SERVER_P99_MS = 30.0
"""Issue #8's latency target: frame arrival to result sent, high profile, 640x480."""


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
    busiest_cpu: float = 0.0  # median % of one core of the server's busiest process

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
    """Summarise the ``transport`` streams of a :class:`evals.loadtest.LoadResult`."""
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
        busiest_cpu=float(np.median([s.busiest for s in result.samples])) if cpu else 0.0,
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
