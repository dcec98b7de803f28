"""run.py bench, capacity section: how streams are judged held, and a real one-second run."""

import contextlib

from bench_cases import needs_model

from evals.bench import capacity
from evals.loadtest import LoadResult, Sample, StreamStats


def test_lag_growth_sees_a_queue_building_up():
    arrived = list(range(30))
    assert capacity.lag_growth(arrived, [0.02] * 30) == 0.0
    assert capacity.lag_growth(arrived, [0.02 + 0.01 * i for i in range(30)]) > 100
    assert capacity.lag_growth([0, 1], [0.5, 0.9]) == 0.0  # too few to tell


def stream_stats(transport: str, latency: float, server_ms: float, n: int = 30) -> StreamStats:
    stats = StreamStats(transport, sent=n, results=n)
    stats.latencies = [latency] * n
    stats.server_ms = [server_ms] * n
    stats.arrived = [float(i) for i in range(n)]
    return stats


def test_capacity_rows_judge_server_and_client_latency():
    result = LoadResult(
        [stream_stats("websocket", 0.03, 8.0), stream_stats("webrtc", 0.12, 9.0)],
        [Sample(1.0, 50.0, 100.0, 20, busiest=30.0)],
        duration=2.0,
        client_cpu=10.0,
    )
    ws, rtc = capacity.capacity_row(result, "websocket"), capacity.capacity_row(result, "webrtc")
    assert (ws.server_cpu, ws.busiest_cpu) == (50.0, 30.0)
    assert ws.held and ws.e2e_held and ws.in_target
    assert rtc.held and not rtc.e2e_held and rtc.in_target  # 120 ms at the client
    slow = capacity.capacity_row(
        LoadResult([stream_stats("websocket", 0.2, 150.0)], [], 2.0, 0.0), "websocket"
    )
    assert not slow.held and not slow.in_target
    summary = capacity.capacity_summary([ws, rtc, slow])
    assert summary["websocket"]["max_streams"] == 1
    assert summary["webrtc"]["max_streams_e2e"] == 0
    assert "in target" in capacity.format_capacity([ws, rtc, slow])


@needs_model
def test_capacity_against_a_real_server_for_one_second():
    (row,) = capacity.capacity_rows([1], ["websocket"], duration=1.0, profile="host")
    assert row.streams == 1 and row.errors == 0


@needs_model
def test_capacity_asks_the_server_for_the_given_bitrate_limit(monkeypatch):
    asked: list[tuple[str, int | None]] = []

    @contextlib.contextmanager
    def fake_server(profile, max_video_kbps=None):
        asked.append((profile, max_video_kbps))
        yield "http://127.0.0.1:9", None

    monkeypatch.setattr(capacity, "local_server", fake_server)
    assert capacity.capacity_rows([], ["webrtc"], 1.0, "high", max_video_kbps=0) == []
    assert asked == [("high", 0)]
