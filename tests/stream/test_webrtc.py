import asyncio
import json
from fractions import Fraction

import aiohttp
import av
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from fakes import red_square_frame

from stream.server import GATEWAY, loopback_host_addresses

pytestmark = pytest.mark.usefixtures("loopback_ice")


@pytest.fixture
def loopback_ice(monkeypatch):
    """Keep both peers' candidates on 127.0.0.1 (the test talks to this machine only)."""
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses", loopback_host_addresses)


class RedSquareTrack(VideoStreamTrack):
    async def recv(self):
        pts, time_base = await self.next_timestamp()
        frame = av.VideoFrame.from_ndarray(red_square_frame(320, 240), format="bgr24")
        frame.pts, frame.time_base = pts, time_base or Fraction(1, 90000)
        return frame


async def offer(session, url, pc, body_extra=None):
    await pc.setLocalDescription(await pc.createOffer())
    body = {"sdp": pc.localDescription.sdp, "type": "offer", **(body_extra or {})}
    async with session.post(url, json=body) as response:
        return response.status, await response.json()


async def test_a_peer_streaming_video_gets_results_on_its_data_channel(fake_server):
    url = f"http://127.0.0.1:{fake_server.port}/offer"
    pc = RTCPeerConnection()
    results: asyncio.Queue = asyncio.Queue()
    channel = pc.createDataChannel("results")
    channel.on("message", lambda data: results.put_nowait(json.loads(data)))
    pc.addTrack(RedSquareTrack())
    try:
        async with aiohttp.ClientSession() as http:
            status, answer = await offer(http, url, pc)
        assert status == 200, answer
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        seen = []
        async with asyncio.timeout(20):
            while not any(m.get("event") == "recognized" for m in seen):
                seen.append(await results.get())
        frames = [m for m in seen if m["type"] == "frame"]
        assert frames and frames[0]["width"] == 320 and frames[0]["detections"]
    finally:
        await pc.close()
    peers = fake_server.app[GATEWAY].peers
    async with asyncio.timeout(40):  # the server notices the peer is gone and cleans up
        while peers:
            await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        {"sdp": 5, "type": "offer"},
        {"sdp": "v=0", "type": "answer"},
        {"sdp": "garbage", "type": "offer"},
        {"sdp": "v=0\r\n", "type": "offer", "profile": "toaster"},
    ],
)
async def test_malformed_offers_get_400(fake_server, body):
    url = f"http://127.0.0.1:{fake_server.port}/offer"
    async with aiohttp.ClientSession() as http:
        kwargs = {"data": body} if isinstance(body, str) else {"json": body}
        async with http.post(url, **kwargs) as response:
            assert response.status == 400
            assert "error" in await response.json()
    assert not fake_server.app[GATEWAY].peers
