"""Prometheus metrics of the service, served at ``/metrics``.

Under ``serve --workers N`` every worker writes its values to files in
``$PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode, which the parent
sets up before it starts them), and :func:`exposition` sums them: any worker's
``/metrics`` reports the host.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from stream.session import Message

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# livesum: the sessions of the workers alive now (a dead worker's files are dropped).
SESSIONS = Gauge("fuscan_sessions", "Sessions open now", ["transport"], multiprocess_mode="livesum")
# liveall: the same, one sample per live worker (its pid), to see how evenly they are spread.
WORKER_SESSIONS = Gauge(
    "fuscan_worker_sessions",
    "Sessions open now in this worker",
    ["transport"],
    multiprocess_mode="liveall",
)
REFUSED = Counter("fuscan_sessions_refused_total", "Sessions refused by admission control")
FRAMES = Counter("fuscan_frames_processed_total", "Frames processed", ["transport"])
DROPPED = Counter("fuscan_frames_dropped_total", "Frames dropped by busy sessions", ["transport"])
EVENTS = Counter("fuscan_events_total", "Voting events sent", ["event"])
ERRORS = Counter("fuscan_errors_total", "Error messages sent to clients", ["code"])
LATENCY = Histogram(
    "fuscan_server_latency_seconds",
    "Frame arrival to result sent",
    buckets=(0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)


def session_opened(transport: str) -> None:
    SESSIONS.labels(transport).inc()
    WORKER_SESSIONS.labels(transport).inc()


def session_closed(transport: str) -> None:
    SESSIONS.labels(transport).dec()
    WORKER_SESSIONS.labels(transport).dec()


def observe(transport: str, message: Message) -> None:
    """Count one outgoing result message."""
    kind = message["type"]
    if kind == "frame":
        FRAMES.labels(transport).inc()
        server_ms = message.get("server_ms")
        if isinstance(server_ms, int | float):
            LATENCY.observe(server_ms / 1000.0)
    elif kind == "event":
        EVENTS.labels(str(message["event"])).inc()
    elif kind == "error":
        ERRORS.labels(str(message["code"])).inc()


def exposition() -> bytes:
    """The metrics page: this process's, or the host's when workers share a metrics folder."""
    if not os.environ.get(MULTIPROC_ENV):
        return generate_latest()
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
