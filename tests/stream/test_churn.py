"""Connect/disconnect churn and slow consumers: afterwards the server holds no more file
descriptors, tasks or memory than before, and latency stays bounded."""

from __future__ import annotations

import asyncio
import json
import time
from functools import partial

import aiohttp
import psutil
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription
from fakes import RedSquareDetector, jpeg, red_square_frame
from resources import snapshot
from websockets.asyncio.client import connect

from hw_sim import DeviceProfile, DeviceSimulator
from stream.admission import ServerConfig
from stream.server import ADMISSION, GATEWAY, loopback_host_addresses
from stream.session import Session
from voting import KOfNVoter

WS_SESSIONS = 200
PEERS = 24
RSS_SLACK = 64 * 2**20  # allocator noise (40 MiB was hit twice); a per-session leak is far more


@pytest.fixture
def loopback_ice(monkeypatch):
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses", loopback_host_addresses)


async def settle(server) -> None:
    """Wait (bounded) until the server has let go of every session."""
    async with asyncio.timeout(20):
        while server.app[ADMISSION].total or server.app[GATEWAY].peers:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # let closed transports finish their callbacks


async def ws_churn(url: str, index: int) -> None:
    async with connect(url) as ws:
        if index % 3:
            await ws.send(json.dumps({"type": "start"}))
            await ws.recv()
        if index % 3 == 2:
            await ws.send(jpeg(red_square_frame()))
        ws.transport.abort()  # vanish without a close handshake


async def peer_churn(offer_url: str, index: int) -> None:
    pc = RTCPeerConnection()
    pc.createDataChannel("results")
    pc.addTransceiver("video", direction="sendonly")
    await pc.setLocalDescription(await pc.createOffer())
    body = {"sdp": pc.localDescription.sdp, "type": "offer"}
    async with aiohttp.ClientSession() as http, http.post(offer_url, json=body) as response:
        answer = await response.json()
    if index % 2:  # half complete the handshake before vanishing
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
    await pc.close()


async def one_round(server) -> None:
    ws_url = f"ws://127.0.0.1:{server.port}/ws"
    offer_url = f"http://127.0.0.1:{server.port}/offer"
    for batch in range(0, WS_SESSIONS, 50):
        await asyncio.gather(*(ws_churn(ws_url, i) for i in range(batch, batch + 50)))
    await asyncio.gather(*(peer_churn(offer_url, i) for i in range(PEERS)))
    await settle(server)


@pytest.mark.usefixtures("loopback_ice")
async def test_churn_returns_fds_tasks_and_memory_to_baseline(make_server):
    server = await make_server(
        ServerConfig(ice_timeout_s=1.0, max_sessions_per_client=1000, max_sessions=1000)
    )
    await one_round(server)  # warm-up: first-use allocations are not leaks
    fds, tasks, rss = snapshot()
    await one_round(server)
    await one_round(server)
    fds_after, tasks_after, rss_after = snapshot()
    assert fds_after <= fds
    assert tasks_after <= tasks
    assert rss_after - rss < RSS_SLACK, f"RSS grew {(rss_after - rss) / 2**20:.1f} MiB"


class SlowDetector(RedSquareDetector):
    """Inference slower than the frame rate."""

    def detect(self, image):
        time.sleep(0.05)
        return super().detect(image)


async def test_slow_inference_keeps_latency_and_memory_bounded():
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    session = Session(SlowDetector(), KOfNVoter(), DeviceSimulator(DeviceProfile("t")), send)
    runner = asyncio.create_task(session.run())
    rss = psutil.Process().memory_info().rss
    fps, seconds = 100, 3  # 100 fps offered to a 20 fps consumer
    frame = red_square_frame(640, 480)
    for i in range(fps * seconds):
        session.submit(partial(frame.copy), i / fps)
        await asyncio.sleep(1 / fps)
    await asyncio.wait_for(session.wait_idle(), 5)
    session.close()
    await runner
    frames = [m for m in sent if m["type"] == "frame"]
    assert frames[-1]["device"]["dropped"] > fps * seconds / 2  # most were dropped, not queued
    assert max(m["server_ms"] for m in frames) < 1000  # no backlog: each waited <= one inference
    assert psutil.Process().memory_info().rss - rss < RSS_SLACK
