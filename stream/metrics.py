"""Prometheus metrics of the service, served at ``/metrics``."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream.session import Message

SESSIONS = Gauge("fuscan_sessions", "Sessions open now", ["transport"])
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
