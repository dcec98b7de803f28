import asyncio
import json
from typing import Any

import pytest
from fakes import jpeg, png_header, red_square_frame
from schema import checked, receive_until
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

import stream.session
import stream.ws_api
from stream.images import MAX_FRAME_BYTES
from stream.server import ADMISSION, WEBSOCKETS
from stream.ws_api import TokenBucket


@pytest.fixture
def ws_url(fake_server):
    return f"ws://127.0.0.1:{fake_server.port}/ws"


async def test_start_then_frames_give_frame_and_recognized_messages(ws_url):
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        ready = checked(json.loads(await ws.recv()))
        assert ready["type"] == "ready" and ready["tier"] == "l"
        assert ready["limits"]["max_frame_bytes"] > 0
        seen = []
        for k in range(8):  # 0.5 s of a 15 fps camera: voting weighs evidence by media time
            await ws.send(json.dumps({"type": "timestamp", "t": k / 15}))
            await ws.send(jpeg(red_square_frame()))
            seen += await receive_until(ws, lambda m: m["type"] == "frame")
        assert any(m.get("event") == "recognized" and m["label"] == "fu" for m in seen)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("not json", "bad_json"),
        ("[1, 2]", "bad_json"),
        (json.dumps({"type": "dance"}), "unknown_type"),
        (json.dumps({"type": ["start"]}), "unknown_type"),  # unhashable: was a dropped socket
        (json.dumps({"type": {}}), "unknown_type"),
        pytest.param("[" * 100_000, "bad_json", id="nested-past-the-recursion-limit"),
        ('{"type": "timestamp", "t": Infinity}', "bad_field"),
        ('{"type": "start", "voting": {"hold": NaN}}', "bad_field"),
        (json.dumps({"type": "start", "profile": 3}), "bad_option"),
        (json.dumps({"type": "start", "profile": "toaster"}), "unknown_profile"),
        (b"\xff\xd8 not really a jpeg", "not_started"),
    ],
)
async def test_bad_messages_get_a_coded_error_and_the_session_stays_usable(ws_url, message, code):
    async with connect(ws_url) as ws:
        await ws.send(message)
        error = checked(json.loads(await ws.recv()))
        assert error["type"] == "error" and error["code"] == code
        await ws.send(json.dumps({"type": "start"}))
        assert checked(json.loads(await ws.recv()))["type"] == "ready"


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"garbage", "bad_image"),
        (jpeg(red_square_frame())[:300], "bad_image"),
        (png_header(100_000, 100_000), "too_many_pixels"),  # a pixel bomb's header
        (png_header(0, 0), "bad_image"),  # a header with no pixels: malformed, not too big
        (b"\xff\xd8" + bytes(MAX_FRAME_BYTES), "frame_too_large"),  # within max_size, over bytes
    ],
)
async def test_bad_frames_after_start_get_errors_and_later_frames_still_work(ws_url, payload, code):
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        await ws.send(payload)
        error = checked(json.loads(await ws.recv()))
        assert error["code"] == code
        await ws.send(jpeg(red_square_frame()))
        seen = await receive_until(ws, lambda m: m["type"] == "frame")
        assert seen[-1]["detections"]


@pytest.mark.parametrize(
    ("times", "granted"),
    [
        ([0.0] * 3, [True, True, False]),  # burst of two, then empty
        ([0.0, 0.0, 0.5], [True, True, True]),  # refilled at 2 per second
        ([0.0, 0.0, 0.1, 10.0, 10.0, 10.0], [True, True, False, True, True, False]),  # capped
    ],
)
def test_token_bucket(times, granted):
    bucket = TokenBucket(rate=2, burst=2)
    assert [bucket.take(t) for t in times] == granted


async def test_client_timestamps_set_media_time_and_must_not_go_back(ws_url):
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "timestamp", "t": 5.0}))
        await ws.send(jpeg(red_square_frame()))
        frame = (await receive_until(ws, lambda m: m["type"] == "frame"))[-1]
        assert frame["t"] == 5.0
        await ws.send(json.dumps({"type": "timestamp", "t": 4.0}))
        await ws.send(jpeg(red_square_frame()))
        assert checked(json.loads(await ws.recv()))["code"] == "bad_field"
        await ws.send(json.dumps({"type": "timestamp", "t": "soon"}))
        assert checked(json.loads(await ws.recv()))["code"] == "bad_field"


def finite_json(text: str) -> dict[str, Any]:
    """A server message parsed as browsers do: NaN and Infinity are not JSON."""
    return checked(json.loads(text, parse_constant=lambda name: pytest.fail(f"sent {name}")))


@pytest.mark.parametrize("profile", ["host", "low"])  # low: the emulated device's timeline
@pytest.mark.parametrize(
    "t", ["Infinity", "-Infinity", "NaN", "1e999", "1e308", "-1", str(10**400), '"soon"', "true"]
)
async def test_a_bad_timestamp_is_refused_and_the_next_frame_still_works(ws_url, profile, t):
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start", "profile": profile}))
        await ws.recv()
        await ws.send(f'{{"type": "timestamp", "t": {t}}}')
        assert finite_json(await ws.recv())["code"] == "bad_field"
        await ws.send(jpeg(red_square_frame()))  # not stamped: seconds since start
        frame = finite_json(await ws.recv())
        assert frame["type"] == "frame" and 0 <= frame["t"] < 60


async def test_a_client_that_stops_answering_pings_is_dropped(fake_server, monkeypatch):
    monkeypatch.setattr(stream.ws_api, "HEARTBEAT_S", 0.4)  # 20 s in production
    admission = fake_server.app[ADMISSION]
    url = f"ws://127.0.0.1:{fake_server.port}/ws"
    # close_timeout: a client that reads nothing would wait 10 s for the close handshake
    async with connect(url, ping_interval=None, close_timeout=0.1) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        assert admission.total == 1
        ws.transport.pause_reading()  # alive, but reads (and so answers) nothing any more
        async with asyncio.timeout(10):  # ping after 0.4 s of silence, pong due 0.2 s later
            while admission.total:
                await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("payload", "text", "code"),
    [
        (bytes(MAX_FRAME_BYTES + 2048), False, 1009),  # over max_size
        (b'{"type": "start", "profile": "\xff"}', True, 1007),  # a text message, not UTF-8
    ],
    ids=["too-large", "not-utf8"],
)
async def test_a_transport_violation_closes_the_socket_with_its_code(ws_url, payload, text, code):
    async with connect(ws_url, max_size=None) as ws:
        with pytest.raises(ConnectionClosed) as closed:  # the send itself may see the close
            async with asyncio.timeout(10):
                await ws.send(payload, text=text)
                await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == code


async def test_a_failing_session_tells_the_client_and_closes_with_1011(ws_url, monkeypatch):
    def broken(*_):
        raise RuntimeError("a bug in processing")

    monkeypatch.setattr(stream.session.Session, "_process", broken)
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        await ws.send(jpeg(red_square_frame()))
        error = checked(json.loads(await ws.recv()))
        assert (error["type"], error["code"]) == ("error", "internal")
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
        assert closed.value.rcvd.code == 1011


async def test_a_frame_racing_a_failed_sessions_close_still_gets_1011(ws_url, monkeypatch):
    def broken(*_):
        raise RuntimeError("a bug in processing")

    original = stream.ws_api.WebsocketConnection.close_failed

    async def slow_close(self):  # the session's task is still closing when the next frame comes
        await asyncio.sleep(0.5)
        await original(self)

    monkeypatch.setattr(stream.session.Session, "_process", broken)
    monkeypatch.setattr(stream.ws_api.WebsocketConnection, "close_failed", slow_close)
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        await ws.send(jpeg(red_square_frame()))
        assert json.loads(await ws.recv())["code"] == "internal"
        await ws.send(jpeg(red_square_frame()))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
        assert closed.value.rcvd.code == 1011


async def test_an_untimed_frame_continues_the_clients_clock(ws_url):
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        seen = []
        for timestamp in (100.0, None):  # the second has none: not "before the previous"
            if timestamp is not None:
                await ws.send(json.dumps({"type": "timestamp", "t": timestamp}))
            await ws.send(jpeg(red_square_frame()))
            seen += await receive_until(ws, lambda m: m["type"] in ("frame", "error"))
        first, second = (m for m in seen if m["type"] in ("frame", "error"))
        assert (first["type"], second["type"]) == ("frame", "frame")
        assert 100.0 <= first["t"] <= second["t"] < 101.0


async def test_a_websocket_opened_after_shutdown_began_is_closed_going_away(fake_server, ws_url):
    await fake_server.app[WEBSOCKETS].close_all()
    async with connect(ws_url) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10.0)  # before the fix: admitted, no close
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        1001,
        "the server is shutting down",
    )
    assert fake_server.app[ADMISSION].total == 0
