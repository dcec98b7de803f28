import asyncio
import json

import aiohttp
import pytest
from aiortc import RTCPeerConnection
from fakes import jpeg, red_square_frame
from prometheus_client import REGISTRY
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from stream.admission import Admission, ServerConfig
from stream.server import ADMISSION, GATEWAY, WEBSOCKETS, loopback_host_addresses


@pytest.mark.parametrize(
    ("max_total", "max_per_client", "clients", "granted"),
    [
        (2, 2, ["a", "a", "a"], [True, True, False]),
        (3, 1, ["a", "a", "b", "c", "d"], [True, False, True, True, False]),
        (0, 5, ["a"], [False]),
    ],
)
def test_admission_limits_total_and_per_client(max_total, max_per_client, clients, granted):
    admission = Admission(max_total, max_per_client)
    results = [admission.admit(c) for c in clients]
    assert [not isinstance(r, str) for r in results] == granted


def test_released_tickets_free_their_slot_once():
    admission = Admission(1, 1)
    ticket = admission.admit("a")
    assert not isinstance(ticket, str)
    ticket.release()
    ticket.release()
    assert admission.total == 0
    assert not isinstance(admission.admit("b"), str)


def ws_url(server, query=""):
    return f"ws://127.0.0.1:{server.port}/ws{query}"


async def start_session(ws):
    await ws.send(json.dumps({"type": "start"}))
    assert json.loads(await ws.recv())["type"] == "ready"


@pytest.mark.parametrize("requests", [1, 3])
async def test_a_plain_request_to_the_websocket_gets_400_and_takes_no_slot(make_server, requests):
    """curl or a crawler on /ws used to fail the upgrade, leak its slot and fill the server."""
    server = await make_server(ServerConfig(max_sessions=1))
    async with aiohttp.ClientSession() as http:
        for _ in range(requests):
            async with http.get(f"http://127.0.0.1:{server.port}/ws") as response:
                assert response.status == 400
                assert "websocket" in (await response.json())["error"]
    assert server.app[ADMISSION].total == 0
    async with connect(ws_url(server)) as ws:
        await start_session(ws)


async def test_a_session_whose_close_fails_still_gives_its_slot_back(make_server, monkeypatch):
    server = await make_server(ServerConfig(max_sessions=1))
    real_close = aiohttp.web.WebSocketResponse.close

    async def failing_close(self, **kwargs):
        await real_close(self, **kwargs)
        raise RuntimeError("close failed")

    monkeypatch.setattr(aiohttp.web.WebSocketResponse, "close", failing_close)
    async with connect(ws_url(server)) as ws:
        await start_session(ws)
    for _ in range(100):
        if server.app[ADMISSION].total == 0:
            break
        await asyncio.sleep(0.02)
    assert server.app[ADMISSION].total == 0


def refusals() -> float:
    return REGISTRY.get_sample_value("fuscan_sessions_refused_total") or 0.0


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (ServerConfig(max_sessions=2), "server full (2 sessions)"),
        (ServerConfig(max_sessions_per_client=2), "too many sessions from 127.0.0.1 (2)"),
    ],
)
async def test_a_websocket_over_the_limit_is_closed_with_1013_and_the_others_keep_working(
    make_server, config, reason
):
    """A browser cannot read the status of a refused upgrade, but it can read a close code."""
    server = await make_server(config)
    async with connect(ws_url(server)) as first, connect(ws_url(server)) as second:
        await start_session(first)
        await start_session(second)
        counted = refusals()
        async with connect(ws_url(server)) as third:  # the upgrade itself succeeds
            with pytest.raises(ConnectionClosed) as refused:
                async with asyncio.timeout(5):
                    await third.recv()
        assert (refused.value.rcvd.code, refused.value.rcvd.reason) == (1013, reason)
        assert server.app[ADMISSION].total == 2  # the refused socket never held a slot
        assert refusals() == counted + 1
        url = f"http://127.0.0.1:{server.port}/offer"
        async with aiohttp.ClientSession() as http, http.post(url, json={}) as response:
            assert response.status == 400  # validation comes first, then admission
        await first.send(jpeg(red_square_frame()))
        assert json.loads(await first.recv())["type"] == "frame"
    async with asyncio.timeout(5):
        while server.app[ADMISSION].total:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    ("headers", "query", "allowed"),
    [
        ({}, "", False),
        ({"Authorization": "Bearer wrong"}, "", False),
        ({"Authorization": "Bearer s3cret"}, "", True),
        ({}, "?token=s3cret", True),
        ({}, "?token=s3cre", False),
    ],
)
async def test_token_is_required_when_configured(make_server, headers, query, allowed):
    server = await make_server(ServerConfig(token="s3cret"))
    try:
        async with connect(ws_url(server, query), additional_headers=headers) as ws:
            await start_session(ws)
        assert allowed
    except InvalidStatus as refused:
        assert not allowed
        assert refused.response.status_code == 401


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [("https://scan.example", True), ("https://evil.example", False)],
)
async def test_origin_allow_list(make_server, origin, allowed):
    server = await make_server(ServerConfig(allowed_origins=frozenset({"https://scan.example"})))
    try:
        async with connect(ws_url(server), origin=origin) as ws:
            await start_session(ws)
        assert allowed
    except InvalidStatus as refused:
        assert not allowed
        assert refused.response.status_code == 403


async def test_shutdown_closes_websockets_with_going_away(make_server):
    server = await make_server(ServerConfig())
    async with connect(ws_url(server)) as ws:
        await start_session(ws)
        await server.runner.shutdown()
        with pytest.raises(ConnectionClosed) as closed:
            async with asyncio.timeout(5):
                await ws.recv()
        assert closed.value.rcvd.code == 1001


async def test_a_peer_that_never_connects_is_closed_after_the_ice_timeout(make_server, monkeypatch):
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses", loopback_host_addresses)
    server = await make_server(ServerConfig(ice_timeout_s=0.3))
    pc = RTCPeerConnection()
    pc.createDataChannel("results")
    pc.addTransceiver("video", direction="sendonly")
    await pc.setLocalDescription(await pc.createOffer())
    body = {"sdp": pc.localDescription.sdp, "type": "offer"}
    url = f"http://127.0.0.1:{server.port}/offer"
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as response:
        assert response.status == 200
    assert server.app[GATEWAY].peers and server.app[ADMISSION].total == 1
    # we never apply the answer, so ICE cannot complete
    async with asyncio.timeout(5):
        while server.app[GATEWAY].peers:
            await asyncio.sleep(0.05)
    assert server.app[ADMISSION].total == 0
    await pc.close()


async def readiness(server):
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{server.port}/readyz") as response,
    ):
        return response.status, await response.json()


async def test_readyz_is_false_at_the_limit_and_while_draining_and_healthz_stays_true(make_server):
    server = await make_server(ServerConfig(max_sessions=1, token="secret"))  # probes need none
    assert await readiness(server) == (200, {"ready": True, "sessions": 0, "max_sessions": 1})
    async with connect(ws_url(server, "?token=secret")) as ws:
        await start_session(ws)
        status, body = await readiness(server)
        assert (status, body["ready"], body["reason"]) == (503, False, "server full (1 sessions)")
    for _ in range(100):
        if server.app[ADMISSION].total == 0:
            break
        await asyncio.sleep(0.02)
    assert (await readiness(server))[0] == 200
    await server.app[WEBSOCKETS].close_all()  # what shutdown does first
    status, body = await readiness(server)
    assert (status, body["reason"]) == (503, "the server is shutting down")
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{server.port}/healthz") as response,
    ):
        assert (response.status, await response.json()) == (200, {"alive": True})
