import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from fractions import Fraction

import aiohttp
import av
import pytest
from aiohttp.test_utils import TestServer
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from fakes import red_square_frame
from prometheus_client import REGISTRY
from resources import released, snapshot

import stream.webrtc
from stream.admission import Admission, ServerConfig, Ticket
from stream.bitrate import CappedEstimator, asked_video_kbps
from stream.server import ADMISSION, GATEWAY, loopback_host_addresses
from stream.session import error_message
from stream.webrtc import MAX_CHANNEL_BACKLOG, MAX_CHANNEL_BUFFER, MAX_EARLY_MESSAGES, Peer

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


@contextlib.asynccontextmanager
async def streaming_peer(server: TestServer) -> AsyncIterator[RTCPeerConnection]:
    """A client peer connected to ``server`` and streaming red squares; ``pc.results`` is
    the queue of result messages from its data channel ``pc.channel``."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.results = asyncio.Queue()
    pc.channel = pc.createDataChannel("results")
    pc.channel.on("message", lambda data: pc.results.put_nowait(json.loads(data)))
    pc.addTrack(RedSquareTrack())
    try:
        async with aiohttp.ClientSession() as http:
            status, answer = await offer(http, f"http://127.0.0.1:{server.port}/offer", pc)
        assert status == 200, answer
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        yield pc
    finally:
        await pc.close()


async def receive_until(pc: RTCPeerConnection, done: Callable[[dict], bool]) -> list[dict]:
    """Messages from ``pc.results`` up to the first one ``done`` accepts (at most 20 s)."""
    seen: list[dict] = []
    async with asyncio.timeout(20):
        while not seen or not done(seen[-1]):
            seen.append(await pc.results.get())
    return seen


async def server_let_go(server: TestServer, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while server.app[GATEWAY].peers or server.app[ADMISSION].total:
            await asyncio.sleep(0.1)


def webrtc_sessions() -> float:
    """The ``fuscan_sessions`` gauge of WebRTC, as ``/metrics`` shows it (absent before any)."""
    return REGISTRY.get_sample_value("fuscan_sessions", {"transport": "webrtc"}) or 0.0


async def test_a_peer_streaming_video_gets_results_on_its_data_channel(fake_server):
    async with streaming_peer(fake_server) as pc:
        seen = await receive_until(pc, lambda m: m.get("event") == "recognized")
        frames = [m for m in seen if m["type"] == "frame"]
        assert frames and frames[0]["width"] == 320 and frames[0]["detections"]
    await server_let_go(fake_server, 40)  # the server notices the peer is gone


async def test_webrtc_frames_over_the_pixel_limit_get_an_error_not_a_result(
    fake_server, monkeypatch
):
    monkeypatch.setattr(stream.webrtc, "MAX_PIXELS", 320 * 240 - 1)
    async with streaming_peer(fake_server) as pc:
        seen = await receive_until(pc, lambda m: m["type"] == "error")
    assert seen[-1]["code"] == "too_many_pixels"
    assert not any(m["type"] == "frame" for m in seen)


async def test_shutdown_tells_open_peers_and_gives_their_slots_back(fake_server):
    sessions = webrtc_sessions()
    async with streaming_peer(fake_server) as pc:
        await receive_until(pc, lambda m: m["type"] == "frame")
        assert webrtc_sessions() == sessions + 1
        await fake_server.runner.shutdown()
        seen = await receive_until(pc, lambda m: m["type"] == "error")
        assert seen[-1]["code"] == "shutting_down"
    assert not fake_server.app[GATEWAY].peers and fake_server.app[ADMISSION].total == 0
    assert webrtc_sessions() == sessions


async def test_a_peer_that_closes_its_data_channel_is_closed_and_gives_its_slot_back(fake_server):
    """Results have nowhere to go once the channel is closed, though ICE and DTLS stay up."""
    sessions = webrtc_sessions()
    async with streaming_peer(fake_server) as pc:
        await receive_until(pc, lambda m: m["type"] == "frame")
        pc.channel.close()
        await server_let_go(fake_server, 10)
        assert webrtc_sessions() == sessions


async def test_a_peer_that_vanishes_is_closed_when_ice_consent_expires(fake_server, monkeypatch):
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "CONSENT_INTERVAL", 0.1)  # 5 s in production
    async with streaming_peer(fake_server) as pc:
        await receive_until(pc, lambda m: m["type"] == "frame")
        # Vanish like a phone out of coverage: its sockets go silent, no goodbye is sent.
        ice = pc.getTransceivers()[0].sender.transport.transport
        for protocol in ice._connection._protocols:
            protocol.transport.abort()
        await server_let_go(fake_server, 20)


async def client_offer(video: str | None = "sendonly", channel: bool = True) -> str:
    """A real aiortc offer's SDP (its peer closed again) for the tests to spoil; its own
    gathering asks no STUN server (aiortc's default would be Google's)."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
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


async def test_a_client_that_leaves_while_its_answer_is_made_leaves_nothing_behind(
    fake_server, monkeypatch
):
    """With handler_cancellation (as in TestServer), hanging up during ICE gathering cancels
    the handler: the peer admitted for it used to keep its slot, ports, session and tasks."""
    import aioice

    sdp = await client_offer()
    gathering = asyncio.Event()
    real_gather = aioice.Connection.gather_candidates

    async def gather_then_wait_for_stun(self):
        await real_gather(self)  # host candidates: the ICE sockets are bound
        gathering.set()
        await asyncio.Event().wait()  # a STUN server that never answers

    monkeypatch.setattr(aioice.Connection, "gather_candidates", gather_then_wait_for_stun)
    fds, tasks, _ = snapshot()
    sessions = webrtc_sessions()
    url = f"http://127.0.0.1:{fake_server.port}/offer"
    async with aiohttp.ClientSession() as http:
        post = asyncio.create_task(http.post(url, json={"sdp": sdp, "type": "offer"}))
        async with asyncio.timeout(10):
            await gathering.wait()
        assert fake_server.app[ADMISSION].total == 1
        post.cancel()  # the client hangs up before the answer
        with contextlib.suppress(asyncio.CancelledError):
            await post
    await server_let_go(fake_server, 10)
    assert webrtc_sessions() == sessions
    await released(fds, tasks)  # no peer connection, ICE socket, session or task is left over


async def post_offer(server: TestServer, sdp: str) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{server.port}/offer"
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, json={"sdp": sdp, "type": "offer"}) as r,
    ):
        return r.status, await r.json()


async def test_an_offer_after_shutdown_began_is_refused_and_makes_no_peer(fake_server):
    await fake_server.runner.shutdown()  # on_shutdown has closed every peer; the site still listens
    sdp = await client_offer()
    fds, tasks, _ = snapshot()
    async with asyncio.timeout(10):
        status, body = await post_offer(fake_server, sdp)
    assert (status, body) == (503, {"error": "the server is shutting down"})
    assert not fake_server.app[GATEWAY].peers and fake_server.app[ADMISSION].total == 0
    await released(fds, tasks)


@pytest.fixture
def held_candidates(monkeypatch) -> tuple[asyncio.Event, asyncio.Event]:
    """``(adding, go_on)``: the server's setRemoteDescription sets ``adding`` when it starts
    adding the offer's ICE candidates, and waits for ``go_on`` (an mDNS candidate can take
    seconds to resolve: shutdown may close the peer meanwhile)."""
    import aiortc.rtcpeerconnection

    adding, go_on = asyncio.Event(), asyncio.Event()
    add = aiortc.rtcpeerconnection.add_remote_candidates

    async def add_when_told(transport, media):
        adding.set()
        await go_on.wait()
        await add(transport, media)

    monkeypatch.setattr(aiortc.rtcpeerconnection, "add_remote_candidates", add_when_told)
    return adding, go_on


async def test_an_offer_under_way_when_shutdown_begins_is_refused(fake_server, held_candidates):
    adding, go_on = held_candidates
    sdp = await client_offer()
    fds, tasks, _ = snapshot()
    async with asyncio.timeout(10):
        post = asyncio.create_task(post_offer(fake_server, sdp))
        await adding.wait()
        await fake_server.runner.shutdown()
        go_on.set()
        status, body = await post
    assert (status, body) == (503, {"error": "the server is shutting down"})
    assert not fake_server.app[GATEWAY].peers and fake_server.app[ADMISSION].total == 0
    await released(fds, tasks)


async def test_a_track_announced_while_its_peer_closes_starts_no_session(
    fake_server, held_candidates, monkeypatch
):
    """aiortc announces the offer's track once the candidates are added. Shutdown may close the
    peer meanwhile, and aiortc's close awaits (giving up the shared mDNS socket) before it drops
    the peer's listeners: a track announced then must start no session, as close() has already
    cancelled the peer's tasks and the session's would run on."""
    import aioice.ice

    adding, go_on = held_candidates
    gateway = fake_server.app[GATEWAY]
    opened = []
    open_session = gateway.pipelines.open

    def open_and_count(*args):
        opened.append(args)
        return open_session(*args)

    monkeypatch.setattr(gateway.pipelines, "open", open_and_count)
    sdp = await client_offer()
    fds, tasks, _ = snapshot()
    async with asyncio.timeout(10):
        post = asyncio.create_task(post_offer(fake_server, sdp))
        await adding.wait()
        (pc,) = [peer.pc for peer in gateway.peers.values()]
        announced = asyncio.Event()
        pc.on("track", lambda _: announced.set())  # runs after the gateway's own listener
        unref = aioice.ice.unref_mdns_protocol

        async def unref_once_the_track_is_announced(subscriber):
            go_on.set()  # the offer goes on while its peer is closing
            await announced.wait()
            await unref(subscriber)

        monkeypatch.setattr(aioice.ice, "unref_mdns_protocol", unref_once_the_track_is_announced)
        await gateway.close_all()
        status, _ = await post
    assert opened == []
    assert status == 503
    await released(fds, tasks)


@pytest.fixture
def stun_queries(monkeypatch) -> list[tuple[str, int]]:
    """The STUN servers asked for a server-reflexive candidate while ICE gathers; none answers
    (the query would otherwise leave this machine)."""
    import aioice.ice

    asked: list[tuple[str, int]] = []

    async def unanswered(protocol, stun_server):
        asked.append(stun_server)
        raise ConnectionError("no STUN server here")

    monkeypatch.setattr(aioice.ice, "server_reflexive_candidate", unanswered)
    return asked


async def answer_to_an_offer(server: TestServer) -> str:
    sdp = await client_offer()
    async with asyncio.timeout(10):
        status, body = await post_offer(server, sdp)
    assert status == 200
    return body["sdp"]


async def test_by_default_the_server_asks_no_stun_server(fake_server, stun_queries):
    """aiortc's default ICE servers are Google's STUN server: every offer would query it."""
    answer = await answer_to_an_offer(fake_server)
    assert stun_queries == []
    assert "typ host" in answer and "typ srflx" not in answer


async def test_the_server_asks_the_stun_server_it_is_given(make_server, stun_queries):
    server = await make_server(ServerConfig(ice_servers=("stun:example.org:3478",)))
    await answer_to_an_offer(server)
    assert stun_queries and set(stun_queries) == {("example.org", 3478)}


SHAPE = "need {'sdp': str, 'type': 'offer'}"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param({"data": "not json"}, SHAPE, id="not-json"),
        pytest.param({"data": {"sdp": "v=0", "type": "offer"}}, SHAPE, id="form"),
        pytest.param({"data": b'{"sdp": "\xff"}'}, "not UTF-8", id="not-utf8"),
        pytest.param({"data": "[" * 100_000}, "too deeply", id="nested-past-the-recursion-limit"),
        pytest.param({"data": '{"sdp": "v=0", "type": "offer", "seed": NaN}'}, "NaN", id="nan"),
        pytest.param({"json": [1, 2]}, SHAPE, id="not-an-object"),
        pytest.param({"json": {"sdp": 5, "type": "offer"}}, SHAPE, id="sdp-not-text"),
        pytest.param({"json": {"sdp": "v=0", "type": "answer"}}, SHAPE, id="an-answer"),
        pytest.param(
            {"json": {"sdp": "v=0\r\n", "type": "offer", "profile": "toaster"}},
            "unknown device profile",
            id="bad-option",
        ),
    ],
)
async def test_malformed_offers_get_400_with_the_reason(fake_server, body, reason):
    url = f"http://127.0.0.1:{fake_server.port}/offer"
    async with aiohttp.ClientSession() as http, http.post(url, **body) as response:
        assert response.status == 400
        assert reason in (await response.json())["error"]
    assert not fake_server.app[GATEWAY].peers


class StuckChannel:
    """A data channel whose peer stopped reading: ``bufferedAmount`` bytes are queued."""

    readyState = "open"

    def __init__(self, buffered: int) -> None:
        self.bufferedAmount = buffered
        self.sent: list[str] = []

    def send(self, data: str) -> None:
        self.sent.append(data)


FRAME = {"type": "frame", "frame": 1, "t": 0.1, "detections": []}
EVENT = {"type": "event", "event": "recognized", "label": "fu", "track": 1, "t": 0.1}
ERROR = error_message("too_many_pixels", "image is 9000x9000")


@pytest.mark.parametrize(
    ("message", "buffered", "sent"),
    [
        (FRAME, MAX_CHANNEL_BUFFER, True),
        (FRAME, MAX_CHANNEL_BUFFER + 1, False),  # results are dropped first
        (EVENT, MAX_CHANNEL_BUFFER + 1, True),  # events and errors still get through
        (ERROR, MAX_CHANNEL_BACKLOG, True),
        (EVENT, MAX_CHANNEL_BACKLOG + 1, False),  # ... until the hard bound
        (ERROR, MAX_CHANNEL_BACKLOG + 1, False),
    ],
)
async def test_data_channel_backlog_is_bounded_for_every_message(message, buffered, sent):
    channel = StuckChannel(buffered)
    peer = Peer(
        RTCPeerConnection(RTCConfiguration(iceServers=[])),
        Ticket(Admission(1, 1), "client"),
        channel=channel,
    )
    try:
        await peer.send(message)
    finally:
        await peer.pc.close()
    assert bool(channel.sent) == sent


async def test_events_before_the_data_channel_opens_are_sent_when_it_does():
    """On a slow path the channel opens round trips after the media: a session that
    recognizes before would otherwise lose its one recognized event."""
    peer = Peer(RTCPeerConnection(RTCConfiguration(iceServers=[])), Ticket(Admission(1, 1), "c"))
    channel = StuckChannel(0)
    try:
        for message in (FRAME, EVENT, FRAME, ERROR):
            await peer.send(message)
        await peer.attach(channel)
        await peer.send(FRAME)
    finally:
        await peer.pc.close()
    assert [json.loads(m)["type"] for m in channel.sent] == ["event", "error", "frame"]


async def test_events_waiting_for_the_data_channel_are_bounded():
    peer = Peer(RTCPeerConnection(RTCConfiguration(iceServers=[])), Ticket(Admission(1, 1), "c"))
    try:
        for _ in range(MAX_EARLY_MESSAGES + 5):
            await peer.send(EVENT)
    finally:
        await peer.pc.close()
    assert len(peer.early) == MAX_EARLY_MESSAGES


@pytest.mark.parametrize(("kbps", "asked"), [(None, 500), (800, 800), (0, None)])
async def test_the_answer_asks_for_the_configured_video_bitrate(make_server, kbps, asked):
    config = ServerConfig() if kbps is None else ServerConfig(max_video_kbps=kbps)
    server = await make_server(config)
    answer = await answer_to_an_offer(server)
    assert asked_video_kbps(answer) == asked
    (peer,) = server.app[GATEWAY].peers.values()
    (transceiver,) = [t for t in peer.pc.getTransceivers() if t.kind == "video"]
    estimator = transceiver.receiver._RTCRtpReceiver__remote_bitrate_estimator
    assert isinstance(estimator, CappedEstimator) == (asked is not None)
    if asked is not None:
        assert estimator.limit_bps == asked * 1000


async def test_the_page_gets_the_servers_ice_servers_with_fresh_turn_credentials(make_server):
    config = ServerConfig(
        ice_servers=("stun:example.org", "turn:127.0.0.1:3478"),
        turn_secret="s3cret",
        turn_ttl_s=600,
        token="t",
    )
    server = await make_server(config)
    async with aiohttp.ClientSession() as client:
        async with client.get(server.make_url("/ice-servers")) as refused:
            assert refused.status == 401  # TURN credentials only with the token
        async with client.get(server.make_url("/ice-servers?token=t")) as response:
            assert response.headers["Cache-Control"] == "no-store"
            body = await response.json()
    stun, turn = body["iceServers"]
    assert stun == {"urls": "stun:example.org"}
    assert turn["urls"] == "turn:127.0.0.1:3478" and "s3cret" not in json.dumps(body)
    expiry, user = turn["username"].split(":")
    assert user == "fuscan" and 0 < int(expiry) - time.time() <= 600
