"""The video bitrate the server asks for: SDP bandwidth lines and the REMB cap."""

import pytest
from aiortc import RTCPeerConnection, RTCRtpReceiver
from aiortc.rate import RemoteBitrateEstimator

from stream.bitrate import CappedEstimator, asked_video_kbps, cap_remb, limit_video_bitrate

VIDEO = "m=video 9 UDP/TLS/RTP/SAVPF 97\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"
DATA = "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n"
SESSION = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
LIMIT = "b=AS:500\r\nb=TIAS:500000\r\n"


@pytest.mark.parametrize(
    ("sdp", "expected"),
    [
        pytest.param(
            SESSION + VIDEO + DATA,
            SESSION + VIDEO.replace("a=mid:0", LIMIT + "a=mid:0", 1) + DATA,
            id="after-the-c-line-of-the-video-section-only",
        ),
        pytest.param(
            SESSION + VIDEO.replace("c=", "i=camera\r\nc=") + DATA,
            SESSION
            + VIDEO.replace("c=", "i=camera\r\nc=").replace("a=mid:0", LIMIT + "a=mid:0")
            + DATA,
            id="after-the-i-line-too",
        ),
        pytest.param(
            SESSION + VIDEO.replace("a=mid:0", "b=AS:2000\r\nb=CT:3000\r\na=mid:0") + DATA,
            SESSION + VIDEO.replace("a=mid:0", LIMIT + "a=mid:0") + DATA,
            id="the-section's-own-limits-replaced",
        ),
        pytest.param(
            SESSION + DATA.replace("a=mid:1", "b=AS:30\r\na=mid:1") + VIDEO,
            SESSION
            + DATA.replace("a=mid:1", "b=AS:30\r\na=mid:1")
            + VIDEO.replace("a=mid:0", LIMIT + "a=mid:0"),
            id="other-sections-kept",
        ),
        pytest.param(
            SESSION + "m=video 9 UDP/TLS/RTP/SAVPF 97\r\nc=IN IP4 0.0.0.0\r\n",
            SESSION + "m=video 9 UDP/TLS/RTP/SAVPF 97\r\nc=IN IP4 0.0.0.0\r\n" + LIMIT,
            id="a-video-section-that-ends-the-sdp",
        ),
        pytest.param(
            (SESSION + VIDEO).replace("\r\n", "\n"),
            (SESSION + VIDEO.replace("a=mid:0", LIMIT + "a=mid:0")).replace("\r\n", "\n"),
            id="bare-newlines",
        ),
        pytest.param(SESSION + DATA, SESSION + DATA, id="no-video"),
    ],
)
def test_video_sections_ask_for_the_limit(sdp: str, expected: str) -> None:
    assert limit_video_bitrate(sdp, 500) == expected


@pytest.mark.parametrize("kbps", [0, -1])
def test_a_limit_must_be_positive(kbps: int) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        limit_video_bitrate(SESSION + VIDEO, kbps)


@pytest.mark.parametrize(
    ("sdp", "expected"),
    [
        (limit_video_bitrate(SESSION + VIDEO + DATA, 640), 640),
        (SESSION + VIDEO + DATA, None),
        (SESSION + DATA.replace("a=mid:1", "b=AS:30\r\na=mid:1") + VIDEO, None),  # not video's
        (SESSION + limit_video_bitrate(VIDEO, 300) + limit_video_bitrate(VIDEO, 900), 300),
    ],
)
def test_the_asked_rate_is_read_from_the_first_video_section(sdp: str, expected: int | None):
    assert asked_video_kbps(sdp) == expected


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        ((2_000_000, [7]), (500_000, [7])),  # the path could carry more: ask for the limit
        ((300_000, [7]), (300_000, [7])),  # a congested path's estimate stands
        (None, None),  # no new estimate, no REMB
    ],
)
def test_the_remb_estimate_never_exceeds_the_limit(monkeypatch, estimate, expected) -> None:
    monkeypatch.setattr(RemoteBitrateEstimator, "add", lambda *args, **kwargs: estimate)
    capped = CappedEstimator(500_000)
    arrival = {"arrival_time_ms": 0, "abs_send_time": 0, "payload_size": 1000, "ssrc": 7}
    assert capped.add(**arrival) == expected


async def test_a_video_receiver_gets_the_capped_estimator_once() -> None:
    pc = RTCPeerConnection()
    try:
        receiver = pc.addTransceiver("video").receiver
        assert cap_remb(receiver, 500)
        assert cap_remb(receiver, 400)  # again: the new limit, same estimator
        estimator = receiver._RTCRtpReceiver__remote_bitrate_estimator
        assert isinstance(estimator, CappedEstimator) and estimator.limit_bps == 400_000
        audio = pc.addTransceiver("audio").receiver
        assert not cap_remb(audio, 500)  # audio has no estimator: left alone
    finally:
        await pc.close()


def test_an_unknown_receiver_is_left_untouched(caplog: pytest.LogCaptureFixture) -> None:
    receiver = object.__new__(RTCRtpReceiver)  # no estimator attribute: a different aiortc
    assert not cap_remb(receiver, 500)
    assert "REMB not capped" in caplog.text
