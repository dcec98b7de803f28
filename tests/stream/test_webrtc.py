import asyncio
import json
import re
from collections.abc import Callable
from fractions import Fraction

import aiohttp
import av
import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from fakes import red_square_frame
from resources import released, snapshot

from stream.server import ADMISSION, GATEWAY, loopback_host_addresses

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


async def client_offer(video: str | None = "sendonly", channel: bool = True) -> str:
    """A real aiortc offer's SDP (its peer closed again) for the tests to spoil."""
    pc = RTCPeerConnection()
    if channel:
        pc.createDataChannel("results")
    if video:
        pc.addTransceiver("video", direction=video)
    await pc.setLocalDescription(await pc.createOffer())
    await pc.close()
    return pc.localDescription.sdp


def without(*attributes: str) -> Callable[[str], str]:
    """Removes every ``a=NAME:...`` line of ``attributes`` from an SDP."""
    pattern = re.compile(rf"^a=(?:{'|'.join(attributes)})(?::.*)?\r\n", re.MULTILINE)
    return lambda sdp: pattern.sub("", sdp)


def unchanged(sdp: str) -> str:
    return sdp


@pytest.mark.parametrize(
    ("offer_kwargs", "spoil", "reason"),
    [
        pytest.param({}, lambda _: "garbage", "no media sections", id="garbage"),
        pytest.param(
            {},
            lambda sdp: re.sub(r"^m=video \d+", "m=video x", sdp, flags=re.MULTILINE),
            "not a valid SDP offer",
            id="bad-m-line",
        ),
        pytest.param({}, without("ice-ufrag", "ice-pwd"), "no ICE credentials", id="no-ice"),
        pytest.param({}, without("ice-pwd"), "no ICE credentials", id="no-ice-pwd"),
        pytest.param({}, without("fingerprint"), "no DTLS fingerprint", id="no-fingerprint"),
        pytest.param({"video": None}, unchanged, "no video", id="no-video"),
        pytest.param({"video": "recvonly"}, unchanged, "no video", id="video-not-sent"),
        pytest.param({"channel": False}, unchanged, "no data channel", id="no-data-channel"),
        # aiortc's own check, after the peer connection exists: it must be closed again
        pytest.param({}, without("rtcp-mux"), "RTCP mux", id="no-rtcp-mux"),
    ],
)
async def test_malformed_sdp_gets_400_and_leaves_nothing_behind(
    fake_server, offer_kwargs, spoil, reason
):
    sdp = spoil(await client_offer(**offer_kwargs))
    fds, tasks, _ = snapshot()
    url = f"http://127.0.0.1:{fake_server.port}/offer"
    body = {"sdp": sdp, "type": "offer"}
    async with asyncio.timeout(10), aiohttp.ClientSession() as http, http.post(url, json=body) as r:
        assert r.status == 400
        assert reason in (await r.json())["error"]
    assert not fake_server.app[GATEWAY].peers
    assert fake_server.app[ADMISSION].total == 0
    await released(fds, tasks)  # no peer connection, ICE socket or task is left over


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        {"sdp": 5, "type": "offer"},
        {"sdp": "v=0", "type": "answer"},
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
