"""The capacity search: the most streams held, found in few steps."""

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evals.bench.capacity import CapacityRow
from evals.find_capacity import (
    Capacity,
    Pinning,
    format_capacity,
    most_held,
    sessions_open,
    wait_drained,
)

HELD = CapacityRow("websocket", 1, 15.0, 1.0, 20, 40, 60, 10, 30, 50, 0.0, 0, 50.0, 20.0, 1.0)


def holds_up_to(capacity, seen):
    def measure(n):
        seen.append(n)
        return dataclasses.replace(HELD, streams=n, server_p95=50 if n <= capacity else 500)

    return measure


@pytest.mark.parametrize(
    ("capacity", "guess", "found"),
    [(0, 4, 0), (1, 4, 1), (17, 4, 17), (17, 40, 17), (100, 8, None), (2000, 900, 1024)],
)
def test_the_search_finds_the_most_streams_held_within_a_tenth(capacity, guess, found):
    seen = []
    held, row, steps = most_held(holds_up_to(capacity, seen), guess, limit=1024)
    if found is not None:
        assert held == found
    assert (row is None) == (held == 0)
    assert steps == len(seen) <= 14
    assert 0 <= min(capacity, 1024) - held <= max(1, capacity // 10)


def test_the_table_compares_each_count_with_one_worker():
    one = Capacity(1, 10, dataclasses.replace(HELD, streams=10, server_cpu=100.0), 3)
    eight = Capacity(8, 72, dataclasses.replace(HELD, streams=72, server_cpu=720.0), 4)
    lines = format_capacity([one, eight]).splitlines()
    assert "7.20" in lines[-1] and "6.4" in lines[-1]  # x 1 worker, and the 0.8 x 8 target
    assert " 10.0 " in lines[-1]  # CPU % of a core per stream, unchanged


@pytest.mark.parametrize(
    ("per_worker", "client_procs", "counts", "usable", "server_of_largest", "clients"),
    [
        (1, 2, [1, 4, 8, 14], range(16), tuple(range(14)), (14, 15)),
        (2, 1, [1, 2], [3, 5, 7, 9, 11], (3, 5, 7, 9), (11,)),
        (1, 1, [1], [6, 2], (2,), (6,)),  # sorted: the clients get the last
    ],
)
def test_pinning_gives_each_server_the_first_cores_and_the_clients_the_last(
    per_worker, client_procs, counts, usable, server_of_largest, clients
):
    pinning = Pinning.split(per_worker, client_procs, counts, list(usable))
    assert pinning.server(max(counts)) == server_of_largest
    assert pinning.server(1) == server_of_largest[:per_worker]
    assert pinning.client_cores == clients
    assert not set(pinning.server_cores) & set(pinning.client_cores)


def test_pinning_more_workers_than_cores_left_for_them_is_an_error():
    with pytest.raises(ValueError, match="need 17 cores; this process may use 16"):
        Pinning.split(1, 2, [1, 15], list(range(16)))


@pytest.fixture(params=[200, 503])
def ready_url(request):
    """A loopback ``/readyz`` as ``serve`` answers it, 5 sessions held (503: at the limit)."""
    page = json.dumps({"ready": request.param == 200, "sessions": 5, "max_sessions": 5}).encode()

    class Ready(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(request.param if self.path == "/readyz" else 404)
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *_):
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Ready) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()


def test_a_step_waits_for_the_sessions_before_it_and_says_how_many_stayed(ready_url):
    assert sessions_open(ready_url) == 5
    started = time.monotonic()
    assert wait_drained(ready_url, timeout=0.3) == 5
    assert time.monotonic() - started >= 0.3
