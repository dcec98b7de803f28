"""``run.py cluster`` for real: redis-server, HAProxy and two ``serve --redis`` processes.

One cluster serves the whole module (its servers load every model: the slow part); the
``kill -9`` test runs last, as it leaves one server dead.
"""

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from fractions import Fraction
from pathlib import Path

import aiohttp
import av
import psutil
import pytest
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from fakes import jpeg
from object_scenes import PERSPECTIVE, covers, frame_with
from schema import checked, receive_until
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from stream.cluster import haproxy_config, running_cluster
from stream.local_server import ROOT
from stream.server import loopback_host_addresses

ANNOUNCED = "127.0.0.2"
FIRST, SECOND, THIRD = covers()[:3]


@pytest.fixture(scope="module")
def cluster():
    with running_cluster(2, 0, "--announce-ip", ANNOUNCED) as started:
        yield started


def ws_url(http_url: str) -> str:
    return http_url.replace("http://", "ws://") + "/ws"


async def request(url: str, message: dict, image=None) -> dict:
    """One target message (and its photo) on a new connection; the reply."""
    async with connect(url, open_timeout=10) as ws:
        await ws.send(json.dumps(message))
        if image is not None:
            await ws.send(jpeg(image))
        return checked(json.loads(await asyncio.wait_for(ws.recv(), 30)))


async def recognized(ws, image, frames: int = 30) -> list[str]:
    """Labels recognized in a session on ``ws`` streaming ``image`` (at most ``frames``)."""
    await ws.send(json.dumps({"type": "start", "preset": "fast"}))
    await receive_until(ws, lambda m: m["type"] == "ready", limit=10.0)
    frame = jpeg(frame_with(image, PERSPECTIVE))
    for i in range(frames):
        await ws.send(json.dumps({"type": "timestamp", "t": i / 10}))
        await ws.send(frame)
        seen = await receive_until(ws, lambda m: m["type"] == "frame", limit=10.0)
        labels = [m["label"] for m in seen if m.get("event") == "recognized"]
        if labels:
            return labels
    return []


async def register(url: str, name: str, image) -> dict:
    return await request(url, {"type": "register_target", "name": name, "replace": True}, image)


async def targets(url: str) -> set[str]:
    reply = await request(url, {"type": "list_targets"})
    return {t["name"] for t in reply["targets"]}


async def until_listed(url: str, names: set[str]) -> None:
    """Until the server at ``url`` lists ``names`` (at most 10 s)."""
    async with asyncio.timeout(10):
        while not names <= await targets(url):
            await asyncio.sleep(0.2)


async def test_a_target_registered_through_one_server_is_recognized_through_another(cluster):
    a, b = (ws_url(instance.url) for instance in cluster.instances)
    reply = await register(a, "first", FIRST.image)
    assert reply["type"] == "target_registered"
    async with connect(b) as ws:
        assert await recognized(ws, FIRST.image) == ["first"]


class CoverTrack(VideoStreamTrack):
    def __init__(self, image):
        super().__init__()
        self.frame = frame_with(image, PERSPECTIVE)

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        frame = av.VideoFrame.from_ndarray(self.frame, format="bgr24")
        frame.pts, frame.time_base = pts, time_base or Fraction(1, 90000)
        return frame


async def test_webrtc_signals_through_the_balancer_and_sends_media_to_the_announced_address(
    cluster, monkeypatch
):
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses", loopback_host_addresses)
    await register(ws_url(cluster.url), "second", SECOND.image)
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    results: asyncio.Queue[dict] = asyncio.Queue()
    channel = pc.createDataChannel("results")
    channel.on("message", lambda data: results.put_nowait(json.loads(data)))
    pc.addTrack(CoverTrack(SECOND.image))
    try:
        await pc.setLocalDescription(await pc.createOffer())
        body = {"sdp": pc.localDescription.sdp, "type": "offer", "preset": "fast"}
        async with (
            aiohttp.ClientSession() as http,
            http.post(cluster.url + "/offer", json=body) as response,
        ):
            assert response.status == 200
            answer = await response.json()
        candidates = re.findall(r"a=candidate:\S+ \d+ udp \d+ (\S+) \d+ typ host", answer["sdp"])
        assert candidates and set(candidates) == {ANNOUNCED}
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        async with asyncio.timeout(30):
            while (message := await results.get()).get("event") != "recognized":
                pass
        assert message["label"] == "second"
    finally:
        await pc.close()


async def test_while_redis_is_down_registration_is_refused_and_recognition_goes_on(cluster):
    a, b = (ws_url(instance.url) for instance in cluster.instances)
    await register(b, "first", FIRST.image)
    await until_listed(a, {"first"})
    cluster.stop_redis()
    try:
        refused = await register(b, "third", THIRD.image)
        assert refused["type"] == "error" and refused["code"] == "store_unavailable"
        async with connect(a) as ws:
            assert await recognized(ws, FIRST.image) == ["first"]
    finally:
        cluster.start_redis()
    # The servers find Redis again by themselves; its append-only file kept every target.
    async with asyncio.timeout(20):
        while (reply := await register(b, "third", THIRD.image))["type"] == "error":
            assert reply["code"] == "store_unavailable"
            await asyncio.sleep(0.5)
    await until_listed(a, {"first", "third"})


async def sessions_held(instance) -> int:
    async with aiohttp.ClientSession() as http, http.get(instance.url + "/readyz") as response:
        return int((await response.json())["sessions"])


async def test_a_session_whose_server_is_killed_reconnects_to_another_and_goes_on(cluster):
    url = ws_url(cluster.url)
    for name, cover in (("first", FIRST), ("third", THIRD)):
        await register(url, name, cover.image)
    before = await targets(url)
    async with connect(url) as ws:
        assert await recognized(ws, FIRST.image) == ["first"]
        holders = [i for i in cluster.instances if await sessions_held(i) == 1]
        assert len(holders) == 1
        os.kill(holders[0].process.pid, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
    async with asyncio.timeout(20):  # until HAProxy's retries land on the live server
        while True:
            with contextlib.suppress(OSError, InvalidStatus, ConnectionClosed):
                async with connect(url) as ws:
                    assert await recognized(ws, THIRD.image) == ["third"]
                    break
            await asyncio.sleep(0.5)
    assert await targets(url) == before


def test_the_generated_balancer_configuration_is_one_haproxy_accepts(tmp_path):
    config = tmp_path / "haproxy.cfg"
    servers = [("127.0.0.1", 8081), ("127.0.0.1", 8082), ("127.0.0.1", 8083)]
    config.write_text(haproxy_config("127.0.0.1:8080", servers))
    checked = subprocess.run(["haproxy", "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert config.read_text().count("    server s") == 3


def test_run_py_cluster_prints_one_url_and_sigterm_stops_all_of_it():
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "cluster", "--port", "0", "--instances", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        while not (lines and lines[-1].startswith("open ")):
            line = process.stdout.readline()
            assert line, f"run.py cluster ended: {lines}"
            lines.append(line)
        url = lines[-1].split()[1]
        assert urllib.request.urlopen(url + "readyz", timeout=10).status == 200
        children = psutil.Process(process.pid).children(recursive=True)
        names = {child.name() for child in children}
        assert {"redis-server", "haproxy"} <= names
        folder = Path(re.search(r"append-only file in (\S+)\)", "".join(lines))[1])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        _, alive = psutil.wait_procs(children, timeout=10)
        assert not alive and not folder.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
