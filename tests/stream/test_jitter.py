"""aiortc receiver fixes: frames leave at their marker-bit packet; a bounded decoder queue."""

import asyncio
import json
import queue
from fractions import Fraction
from types import SimpleNamespace

import aiohttp
import av
import pytest
from aiortc import RTCPeerConnection, RTCRtpReceiver, RTCSessionDescription, VideoStreamTrack
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.rtp import RtpPacket
from fakes import red_square_frame

import stream.webrtc
from stream.jitter import (
    DecodeBacklog,
    MarkerJitterBuffer,
    PatientNackGenerator,
    bound_decoder_backlog,
    complete_frames_on_marker,
    is_keyframe,
    nack_lost_not_late,
)
from stream.server import loopback_host_addresses

FRAME_TICKS = 6000  # 90 kHz clock, 15 fps


def packet(seq: int, frame: int, marker: bool = False) -> RtpPacket:
    """Packet ``seq`` of frame ``frame``; its payload names both so that frames can be checked."""
    p = RtpPacket(
        payload_type=96,
        marker=int(marker),
        sequence_number=seq % 65536,
        timestamp=frame * FRAME_TICKS,
    )
    p._data = f"{frame}:{seq % 65536};".encode()
    return p


def feed(buffer: JitterBuffer, packets: list[RtpPacket]) -> list[bytes | None]:
    """What ``add`` returns for each packet: a frame's bytes, or None."""
    out: list[bytes | None] = []
    for p in packets:
        _, frame = buffer.add(p)
        out.append(None if frame is None else frame.data)
    return out


def frame_bytes(frame: int, seqs: range) -> bytes:
    return b"".join(f"{frame}:{s % 65536};".encode() for s in seqs)


def test_aiortc_holds_a_complete_frame_until_the_next_frame_begins():
    """The behaviour this module fixes (if aiortc changes it, MarkerJitterBuffer can go)."""
    buffer = JitterBuffer(capacity=128, is_video=True)
    assert feed(buffer, [packet(0, 0), packet(1, 0), packet(2, 0, True)]) == [None] * 3
    assert feed(buffer, [packet(3, 1)]) == [frame_bytes(0, range(3))]


@pytest.mark.parametrize(
    ("packets", "expected"),
    [
        # in order: out at its marker packet
        ([(0, 0, 0), (1, 0, 0), (2, 0, 1)], [None, None, (0, range(0, 3))]),
        # one-packet frames, back to back
        ([(0, 0, 1), (1, 1, 1)], [(0, range(0, 1)), (1, range(1, 2))]),
        # reordered: out when the missing middle packet fills the hole
        ([(0, 0, 0), (2, 0, 1), (1, 0, 0)], [None, None, (0, range(0, 3))]),
        # marker lost so far: nothing (the hole), then the frame when it comes
        ([(0, 0, 0), (1, 0, 0), (3, 1, 0), (2, 0, 1)], [None, None, None, (0, range(0, 3))]),
        # sequence numbers wrap
        ([(65534, 0, 0), (65535, 0, 0), (65536, 0, 1)], [None, None, (0, range(65534, 65537))]),
        # a sender without marker bits: aiortc's rule, out when the next frame begins
        ([(0, 0, 0), (1, 0, 0), (2, 1, 0)], [None, None, (0, range(0, 2))]),
    ],
)
def test_marker_buffer_releases_a_frame_when_its_last_packet_arrives(packets, expected):
    buffer = MarkerJitterBuffer(capacity=128, is_video=True)
    got = feed(buffer, [packet(seq, frame, bool(marker)) for seq, frame, marker in packets])
    assert got == [None if e is None else frame_bytes(*e) for e in expected]


def test_a_late_duplicate_of_a_released_frame_is_ignored():
    buffer = MarkerJitterBuffer(capacity=128, is_video=True)
    assert feed(buffer, [packet(0, 0), packet(1, 0, True)])[-1] == frame_bytes(0, range(2))
    assert feed(buffer, [packet(1, 0, True), packet(2, 1, True)]) == [
        None,
        frame_bytes(1, range(2, 3)),
    ]


async def test_a_video_receiver_gets_the_marker_buffer_once():
    pc = RTCPeerConnection()
    try:
        receiver = pc.addTransceiver("video").receiver
        assert complete_frames_on_marker(receiver)
        assert complete_frames_on_marker(receiver)  # idempotent
        assert isinstance(receiver._RTCRtpReceiver__jitter_buffer, MarkerJitterBuffer)
        audio = pc.addTransceiver("audio").receiver
        assert not complete_frames_on_marker(audio)  # audio buffers prefetch; left alone
        assert type(audio._RTCRtpReceiver__jitter_buffer) is JitterBuffer
    finally:
        await pc.close()


def test_an_unknown_receiver_is_left_untouched(caplog):
    receiver = object.__new__(RTCRtpReceiver)  # no buffer attribute: a different aiortc
    assert not complete_frames_on_marker(receiver)
    assert "lag one" in caplog.text


class LockstepTrack(VideoStreamTrack):
    """Sends frame n+1 only after the results of frames 0..n are back.

    With aiortc's own buffer the server would decode frame n only once frame n+1's
    packets arrive, so this camera would wait forever.
    """

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self.results = 0
        self.result = asyncio.Event()

    def on_result(self) -> None:
        self.results += 1
        self.result.set()

    async def wait_results(self, n: int) -> None:
        while self.results < n:
            self.result.clear()
            await self.result.wait()

    async def recv(self) -> av.VideoFrame:
        await self.wait_results(self.sent)
        frame = av.VideoFrame.from_ndarray(red_square_frame(320, 240), format="bgr24")
        frame.pts, frame.time_base = self.sent * FRAME_TICKS, Fraction(1, 90000)
        self.sent += 1
        return frame


@pytest.mark.parametrize("marker", [True, False], ids=["marker", "aiortc"])
async def test_the_server_answers_a_frame_before_the_next_one_is_sent(
    fake_server, monkeypatch, marker
):
    import aioice.ice

    monkeypatch.setattr(aioice.ice, "get_host_addresses", loopback_host_addresses)
    if not marker:  # the control: aiortc's buffer, which holds every frame
        monkeypatch.setattr(stream.webrtc, "complete_frames_on_marker", lambda receiver: False)
    pc = RTCPeerConnection()
    track = LockstepTrack()
    channel = pc.createDataChannel("results")

    @channel.on("message")
    def on_message(data: str) -> None:
        if json.loads(data)["type"] == "frame":
            track.on_result()

    pc.addTrack(track)
    try:
        await pc.setLocalDescription(await pc.createOffer())
        body = {"sdp": pc.localDescription.sdp, "type": "offer"}
        url = f"http://127.0.0.1:{fake_server.port}/offer"
        async with aiohttp.ClientSession() as http, http.post(url, json=body) as response:
            answer = await response.json()
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        # Bounded: the control waits out its bound, then shows aiortc held frame 0.
        answered = True
        try:
            async with asyncio.timeout(20 if marker else 3):
                await track.wait_results(5)
        except TimeoutError:
            answered = False
        assert answered == marker
        assert track.sent >= 5 if marker else track.sent == 1
    finally:
        await pc.close()


@pytest.mark.parametrize(
    ("codec", "data", "expected"),
    [
        ("VP8", b"\x10\x02\x00\x9d\x01\x2a", True),  # frame tag bit 0 clear: key frame
        ("VP8", b"\x31\x02\x00", False),
        ("VP8", b"", False),
        ("H264", b"\x00\x00\x00\x01\x67\x42\x00\x00\x00\x01\x68\xce\x00\x00\x01\x65\x88", True),
        ("H264", b"\x00\x00\x00\x01\x41\x9a", False),
        ("opus", b"\x00", None),
    ],
)
def test_keyframes_are_recognised(codec, data, expected):
    assert is_keyframe(codec, data) is expected


def test_a_decoder_that_falls_behind_skips_to_the_next_keyframe():
    requests = []
    backlog = DecodeBacklog(2, lambda: requests.append(True))
    vp8 = SimpleNamespace(name="VP8")

    def put(key: bool, ts: int) -> None:
        backlog.put((vp8, JitterFrame(b"\x10" if key else b"\x11", ts)))

    put(True, 0)
    put(False, 1)  # the decoder thread is stuck: nothing is taken off
    assert backlog.qsize() == 2 and not requests
    put(False, 2)  # behind: the waiting frames go, and frames up to a keyframe
    put(False, 3)
    assert backlog.qsize() == 0 and requests == [True] and backlog.dropped == 4
    put(True, 4)  # a keyframe decodes on its own; what follows it does too
    put(False, 5)
    assert [backlog.get_nowait()[1].timestamp for _ in range(2)] == [4, 5]
    backlog.put(None)  # the stop sentinel always gets through
    assert backlog.get_nowait() is None


def test_frames_of_unknown_codecs_and_a_keeping_up_decoder_are_never_dropped():
    backlog = DecodeBacklog(1, lambda: None)
    for ts in range(3):
        backlog.put((SimpleNamespace(name="AV1"), JitterFrame(b"\x11", ts)))
    assert backlog.qsize() == 3 and backlog.dropped == 0


async def test_a_video_receiver_gets_a_bounded_decoder_queue():
    pc = RTCPeerConnection()
    try:
        receiver = pc.addTransceiver("video").receiver
        assert type(receiver._RTCRtpReceiver__decoder_queue) is queue.Queue
        assert bound_decoder_backlog(receiver) and bound_decoder_backlog(receiver)
        assert isinstance(receiver._RTCRtpReceiver__decoder_queue, DecodeBacklog)
    finally:
        await pc.close()


def nacks(arrivals: list[int], reorder: int = 3) -> list[list[int]]:
    """What a receiver NACKs after each arrival (sequence numbers), with ``reorder``."""
    generator = PatientNackGenerator(reorder)
    return [sorted(generator.missing) if generator.add(packet(seq, 0)) else [] for seq in arrivals]


@pytest.mark.parametrize(
    ("arrivals", "expected"),
    [
        # in order: nothing
        ([0, 1, 2, 3], [[], [], [], []]),
        # 1 only reordered, within 3 packets: never asked for
        ([0, 2, 3, 1, 4, 5], [[], [], [], [], [], []]),
        # 1 lost: asked for once 3 later packets came (2, 3, 4)
        ([0, 2, 3, 4, 5], [[], [], [], [1], []]),
        # its retransmission arrives: no longer missing; a later loss asks for 6 alone
        ([0, 2, 3, 4, 1, 5, 7, 8, 9], [[], [], [], [1], [], [], [], [], [6]]),
        # still missing when another becomes due: asked for again, with it
        ([0, 2, 3, 4, 6, 7, 8], [[], [], [], [1], [], [], [1, 5]]),
        # a burst of three lost: due one by one as later packets arrive
        ([0, 4, 5, 6, 7], [[], [1], [1, 2], [1, 2, 3], []]),
        # sequence numbers wrap
        ([65534, 0, 1, 2], [[], [], [], [65535]]),
    ],
)
def test_a_packet_is_nacked_once_later_ones_show_it_lost_not_late(arrivals, expected):
    assert nacks(arrivals) == expected


async def test_a_video_receiver_nacks_lost_packets_not_late_ones():
    pc = RTCPeerConnection()
    try:
        receiver = pc.addTransceiver("video").receiver
        assert nack_lost_not_late(receiver) and nack_lost_not_late(receiver)
        assert isinstance(receiver._RTCRtpReceiver__nack_generator, PatientNackGenerator)
        assert not nack_lost_not_late(pc.addTransceiver("audio").receiver)  # audio: no NACKs
    finally:
        await pc.close()
