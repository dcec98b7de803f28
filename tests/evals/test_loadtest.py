"""The load generator survives a server that drops one of its streams, answers a keyframe
request and sends the bitrate the server asks for as a browser does, starts its cameras
at independent phases unless told not to, and plays a clip it saved or was given."""

import argparse
import asyncio
import contextlib
import json
import time
import types
from collections.abc import Iterator

import cv2
import numpy as np
import pytest
from aiortc import RTCPeerConnection
from aiortc.rtp import RTCP_PSFB_PLI, RtcpPsfbPacket
from websockets.asyncio.server import ServerConnection, serve

import evals.loadtest
from evals.loadtest import (
    ClipTrack,
    StreamStats,
    VideoClips,
    clip_frames,
    send_clip,
    stream_phases,
    websocket_stream,
)
from evals.video_codec import CAMERA_BITRATE
from stream.bitrate import limit_video_bitrate

ANSWER = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 97\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"


@pytest.mark.parametrize(
    ("answers", "encoded"),
    [
        pytest.param([ANSWER], [CAMERA_BITRATE], id="no-limit-the-camera's-own-rate"),
        pytest.param([limit_video_bitrate(ANSWER, 500)], [500_000], id="the-asked-rate"),
        pytest.param(
            [limit_video_bitrate(ANSWER, 5000)], [CAMERA_BITRATE], id="never-above-the-camera's"
        ),
        pytest.param(
            [limit_video_bitrate(ANSWER, 500)] * 3 + [ANSWER],
            [500_000, CAMERA_BITRATE],
            id="once-per-rate",
        ),
    ],
)
async def test_webrtc_clips_are_encoded_at_the_rate_the_answer_asks_for(
    monkeypatch: pytest.MonkeyPatch, answers: list[str], encoded: list[int]
) -> None:
    rates: list[int] = []

    def vp8_clip(images: list, fps: float, bitrate: int) -> list[bytes]:
        rates.append(bitrate)
        return [f"{bitrate}".encode()]

    monkeypatch.setattr(evals.loadtest, "vp8_clip", vp8_clip)
    clips = VideoClips([], 15.0)
    sent = [await clips.for_answer(sdp) for sdp in answers]
    assert rates == encoded
    assert sent[0] == [f"{encoded[0]}".encode()]


async def test_a_websocket_stream_closed_by_the_server_is_counted_lost_not_raised() -> None:
    async def close_after_three_frames(ws: ServerConnection) -> None:
        await ws.recv()  # start
        await ws.send(json.dumps({"type": "ready"}))
        for _ in range(6):  # three timestamp + frame pairs
            await ws.recv()
        await ws.close(1011, "test: server gives up")

    async with serve(close_after_three_frames, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        stats = StreamStats("websocket")
        stop = time.monotonic() + 3.0
        await asyncio.wait_for(
            websocket_stream(f"ws://127.0.0.1:{port}", [b"jpeg"], 50.0, stop, stats, 0.0), 5.0
        )
    assert stats.lost
    assert 3 <= stats.sent < 50


async def test_a_keyframe_request_starts_the_clip_over_at_its_keyframe() -> None:
    track = ClipTrack([b"key", b"inter1", b"inter2"], fps=1000.0)
    pc = RTCPeerConnection()
    try:
        sender = send_clip(pc, track)
        sent = [bytes(await track.recv()) for _ in range(2)]
        await sender._handle_rtcp_packet(RtcpPsfbPacket(fmt=RTCP_PSFB_PLI, ssrc=1, media_ssrc=2))
        after = [await track.recv() for _ in range(2)]
    finally:
        await pc.close()
    assert sent == [b"key", b"inter1"]
    assert [bytes(p) for p in after] == [b"key", b"inter1"]
    assert [p.pts for p in after] == [2 * 90, 3 * 90]  # the stream's clock goes on


@pytest.mark.parametrize(
    ("n", "fps", "phases", "seed"),
    [(8, 15.0, "independent", 0), (3, 30.0, "independent", 7), (8, 15.0, "aligned", 0)],
)
def test_stream_phases_fall_within_one_frame_interval_and_repeat(
    n: int, fps: float, phases: str, seed: int
) -> None:
    offsets = stream_phases(n, fps, phases, seed)
    assert len(offsets) == n
    assert all(0.0 <= phase < 1.0 / fps for phase in offsets)
    assert offsets == stream_phases(n, fps, phases, seed)
    if phases == "aligned":
        assert set(offsets) == {0.0}
    else:  # no two cameras tick together
        assert len(set(offsets)) == n


def test_an_unknown_phase_model_is_refused() -> None:
    with pytest.raises(ValueError, match="independent, aligned"):
        stream_phases(2, 15.0, "random")


async def test_a_camera_with_a_phase_starts_its_clock_that_much_later() -> None:
    track = ClipTrack([b"key", b"inter"], fps=1000.0, phase=0.02)
    before = time.monotonic()
    first = await track.recv()
    assert track.origin is not None
    assert before + 0.02 <= track.origin <= time.monotonic()
    assert (bytes(first), first.pts) == (b"key", 0)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--url", "http://127.0.0.1:9", "--max-video-kbps", "300"], "not with --url"),
        (["--cores-per-worker", "1"], "--cores-per-worker is for --find-capacity"),
        (["--pin-workers"], "--pin-workers is for --find-capacity"),
        (
            ["--find-capacity", "--workers", "1,4096", "--cores-per-worker", "1"],
            "--cores-per-worker: 4096 workers of 1 cores and 1 client processes need 4097",
        ),
    ],
)
def test_options_that_do_not_fit_together_are_refused(argv, error, capsys) -> None:
    assert evals.loadtest.run(loadtest_args(*argv)) == 2
    assert error in capsys.readouterr().err


def loadtest_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    evals.loadtest.add_arguments(parser)
    return parser.parse_args(argv)


def test_a_saved_clip_plays_back_frame_for_frame(tmp_path, capsys) -> None:
    images = tmp_path / "images"
    images.mkdir()
    for i in range(3):
        cv2.imwrite(str(images / f"{i}.png"), np.full((96, 128, 3), 60 * i, np.uint8))
    saved = tmp_path / "clip.mp4"
    args = loadtest_args("--clip", str(images), "--save-clip", str(saved), "--fps", "15")
    assert evals.loadtest.run(args) == 0
    assert f"wrote {saved}" in capsys.readouterr().out
    frames = clip_frames(15.0, str(saved))
    assert [frame.shape for frame in frames] == [(96, 128, 3)] * 3
    assert [round(float(frame.mean()) / 60) for frame in frames] == [0, 1, 2]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(["--clip", "no-such-clip.mp4"], "no such file", id="a-missing-clip"),
        pytest.param(["--save-clip", "clip.nosuchcontainer"], "cannot write", id="no-container"),
    ],
)
def test_a_clip_it_cannot_read_or_write_is_refused_before_any_server(
    argv: list[str], said: str, capsys
) -> None:
    assert evals.loadtest.run(loadtest_args(*argv)) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pin_workers", "flags"),
    [(False, ["--workers", "2"]), (True, ["--workers", "2", "--pin-workers"])],
)
def test_the_local_server_gets_the_worker_flags(monkeypatch, pin_workers, flags) -> None:
    started = []

    @contextlib.contextmanager
    def running_server(*argv: str, quiet: bool, cores: object) -> Iterator[object]:
        started.append(list(argv))
        yield types.SimpleNamespace(url="http://127.0.0.1:9", process=types.SimpleNamespace(pid=1))

    monkeypatch.setattr(evals.loadtest, "running_server", running_server)
    with evals.loadtest.local_server("host", workers=2, pin_workers=pin_workers) as (url, pid):
        assert (url, pid) == ("http://127.0.0.1:9", 1)
    assert started[0][-len(flags) :] == flags
