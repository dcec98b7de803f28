"""``run.py serve --workers 2`` as real processes: one host, its limits, targets and metrics."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator

import aiohttp
import psutil
import pytest
from fakes import jpeg
from object_scenes import PERSPECTIVE, covers, frame_with
from schema import receive_until
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from stream.local_server import LocalServer, start_server, stop_server
from stream.prefork import usable_cores

MAX_SESSIONS = 6
PER_CLIENT = 4
WAIT_S = 60.0
PINNED = usable_cores() >= 2
"""The server pins its workers (``--pin-workers``) where each can have a core of its own."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """Two workers, each on a core of its own where there are two; the last test of this
    module stops it with SIGTERM."""
    targets = tmp_path_factory.mktemp("targets")
    running = start_server(
        "--workers", "2",
        *(["--pin-workers"] if PINNED else []),
        "--targets", str(targets),
        "--max-sessions", str(MAX_SESSIONS),
        "--max-sessions-per-client", str(PER_CLIENT),
        quiet=True,
    )  # fmt: skip
    yield running
    stop_server(running)


def workers(server: LocalServer) -> list[int]:
    children = psutil.Process(server.process.pid).children()
    return sorted(c.pid for c in children if "spawn_main" in " ".join(c.cmdline()))


def worker_of(server: LocalServer, ws: ClientConnection) -> int:
    """The worker process that holds ``ws``'s connection."""
    port = ws.local_address[1]
    for pid in workers(server):
        for conn in psutil.Process(pid).net_connections("tcp"):
            if conn.raddr and conn.raddr.port == port and conn.laddr.port == server.port:
                return pid
    raise AssertionError(f"no worker holds the connection from port {port}")


async def until(check: Callable[[], object], limit: float = WAIT_S) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, "gave up waiting"
        await asyncio.sleep(0.1)


async def until_ready(server: LocalServer) -> None:
    """Wait until ``/readyz`` says ready (the sessions just closed are given back)."""
    deadline = time.monotonic() + WAIT_S
    while (await get_json(server, "/readyz"))[0] != 200:
        assert time.monotonic() < deadline, "never ready"
        await asyncio.sleep(0.1)


async def get_json(server: LocalServer, path: str) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as http, http.get(server.url + path) as response:
        return response.status, await response.json()


async def metric(server: LocalServer, line_start: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(server.url + "/metrics") as response:
        text = await response.text()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(line_start))


@contextlib.asynccontextmanager
async def session(server: LocalServer, client: str) -> AsyncIterator[ClientConnection]:
    """A started websocket session from source address ``client`` (a 127.x.y.z)."""
    async with connect(
        f"ws://127.0.0.1:{server.port}/ws", local_addr=(client, 0), open_timeout=WAIT_S
    ) as ws:
        await ws.send(json.dumps({"type": "start", "preset": "fast"}))
        assert json.loads(await ws.recv())["type"] == "ready"
        yield ws


@contextlib.asynccontextmanager
async def on_another_worker(
    server: LocalServer, other: ClientConnection
) -> AsyncIterator[ClientConnection]:
    """A session on a worker other than ``other``'s."""
    for _ in range(40):
        async with session(server, "127.0.2.2") as ws:
            if worker_of(server, ws) != worker_of(server, other):
                yield ws
                return
    raise AssertionError("every connection went to the same worker")


async def open_sessions(server: LocalServer, clients: list[str]) -> contextlib.AsyncExitStack:
    stack = contextlib.AsyncExitStack()
    for client in clients:
        await stack.enter_async_context(session(server, client))
    return stack


async def refusal(server: LocalServer, client: str) -> str:
    """The close reason of a session that is refused."""
    async with connect(f"ws://127.0.0.1:{server.port}/ws", local_addr=(client, 0)) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
    return closed.value.rcvd.reason


async def test_health_and_readiness(server):
    assert await get_json(server, "/healthz") == (200, {"alive": True})
    status, body = await get_json(server, "/readyz")
    assert (status, body["ready"], body["max_sessions"]) == (200, True, MAX_SESSIONS)


async def test_limits_hold_for_the_host_across_workers(server):
    clients = [f"127.0.0.{2 + i // 3}" for i in range(MAX_SESSIONS)]  # 3 addresses, 2 each
    sessions = await open_sessions(server, clients)
    async with sessions:
        # Each worker holds fewer than the limit, yet the host is full.
        assert await refusal(server, "127.0.0.9") == f"server full ({MAX_SESSIONS} sessions)"
        status, body = await get_json(server, "/readyz")
        assert (status, body["ready"], body["sessions"]) == (503, False, MAX_SESSIONS)
        assert await metric(server, "fuscan_sessions{") == MAX_SESSIONS
    await until_ready(server)
    async with await open_sessions(server, ["127.0.0.5"] * PER_CLIENT):
        reason = await refusal(server, "127.0.0.5")
    assert reason == f"too many sessions from 127.0.0.5 ({PER_CLIENT})"


async def test_sessions_opened_at_once_spread_evenly_over_the_workers(server):
    async with contextlib.AsyncExitStack() as stack:
        opened = await asyncio.gather(
            *(
                stack.enter_async_context(session(server, f"127.0.1.{i}"))
                for i in range(MAX_SESSIONS)
            )
        )
        held = collections.Counter(worker_of(server, ws) for ws in opened)
        # /metrics tells the same, worker by worker
        async with aiohttp.ClientSession() as http, http.get(server.url + "/metrics") as page:
            lines = (await page.text()).splitlines()
        for pid in workers(server):
            per_worker = [
                float(line.split()[-1])
                for line in lines
                if line.startswith("fuscan_worker_sessions{") and f'pid="{pid}"' in line
            ]
            assert per_worker == [held[pid]]
    assert sorted(held) == workers(server)
    assert sorted(held.values()) == [MAX_SESSIONS // 2] * 2


async def test_a_target_registered_through_one_worker_is_recognized_through_the_other(server):
    cover = covers()[0]
    async with contextlib.AsyncExitStack() as stack:
        admin = await stack.enter_async_context(session(server, "127.0.2.1"))
        scanner = await stack.enter_async_context(on_another_worker(server, admin))
        await admin.send(json.dumps({"type": "register_target", "name": "novel"}))
        await admin.send(jpeg(cover.image))
        reply = json.loads(await admin.recv())
        assert reply["type"] == "target_registered", reply
        frame = jpeg(frame_with(cover.image, PERSPECTIVE))
        for i in range(3):  # every frame, from the first on, sees the target
            await scanner.send(json.dumps({"type": "timestamp", "t": i / 10}))
            await scanner.send(frame)
            (*_, message) = await receive_until(scanner, lambda m: m["type"] != "event", WAIT_S)
            assert message["type"] == "frame", message
            assert "novel" in {d["label"] for d in message["detections"]}
        frames_seen = await metric(server, "fuscan_frames_processed_total{")
        assert frames_seen >= 3


def cores_of(pid: int) -> list[int]:
    return sorted(psutil.Process(pid).cpu_affinity() or [])


@pytest.mark.skipif(not PINNED, reason="one core: the workers cannot be pinned apart")
async def test_pinned_workers_each_run_on_a_core_of_their_own(server):
    pinned = [cores_of(pid) for pid in workers(server)]
    assert all(len(cores) == 1 for cores in pinned)
    assert len({cores[0] for cores in pinned}) == 2


async def test_a_killed_worker_is_replaced_and_its_slots_freed(server):
    async with contextlib.AsyncExitStack() as stack:
        opened = [
            await stack.enter_async_context(session(server, f"127.0.3.{i}")) for i in range(4)
        ]
        holders = [worker_of(server, ws) for ws in opened]
        before, victim = set(workers(server)), holders[0]
        victim_cores = cores_of(victim)
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):  # its clients see the connection end
            await asyncio.wait_for(opened[0].recv(), WAIT_S)
        await until(lambda: len(workers(server)) == 2 and victim not in workers(server))
        kept = len([h for h in holders if h != victim])
        assert (await get_json(server, "/readyz"))[1][
            "sessions"
        ] == kept  # the dead worker's slots are free again
    await until_ready(server)
    # The replacement takes sessions of its own once it is ready: of two sessions held at
    # once, the least-loaded choice gives it one at least.
    (replacement,) = set(workers(server)) - before
    assert cores_of(replacement) == victim_cores  # a pinned worker's slot keeps its cores
    deadline = time.monotonic() + WAIT_S
    while True:
        async with contextlib.AsyncExitStack() as stack:
            held = [
                await stack.enter_async_context(session(server, f"127.0.4.{i}")) for i in (1, 2)
            ]
            if replacement in {worker_of(server, ws) for ws in held}:
                break
        assert time.monotonic() < deadline, "the replacement never took a session"


async def test_sigterm_drains_every_worker(server):
    running = workers(server)
    async with contextlib.AsyncExitStack() as stack:
        opened = [
            await stack.enter_async_context(session(server, f"127.0.5.{i}")) for i in range(4)
        ]
        server.process.send_signal(signal.SIGTERM)
        for ws in opened:
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), WAIT_S)
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
                1001,
                "the server is shutting down",
            )
    assert await asyncio.to_thread(server.process.wait, WAIT_S) == 0
    assert not any(psutil.pid_exists(pid) for pid in running)
