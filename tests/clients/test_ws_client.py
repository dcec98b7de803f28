"""``run.py client``: one line and exit 2 for every way a source, URL, token or server is wrong."""

import argparse
import asyncio
import gc
import io
import json
import logging
import socket

import cv2
import pytest
from fakes import red_square_frame
from websockets.asyncio.client import connect

from clients.sources import SourceError
from clients.ws_client import DEFAULT_URL, add_arguments, client_main, stream_source
from stream.admission import ServerConfig

TOKEN = "s3cret"


@pytest.fixture
def folder(tmp_path):
    images = tmp_path / "imgs"
    images.mkdir()
    for i in range(2):
        cv2.imwrite(str(images / f"{i}.png"), red_square_frame())
    return images


@pytest.fixture
async def server(make_server):
    return await make_server(ServerConfig(token=TOKEN))


@pytest.fixture
def refused_port():
    """A port on 127.0.0.1 that nobody listens on: bound but not listening for the whole test,
    so connecting is refused and no other process can take it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


async def run_client(url, source, capsys, token=None):
    """``client_main`` in a thread (it runs its own event loop): exit status, stdout, stderr."""
    status = await asyncio.to_thread(client_main, url, str(source), 15.0, {}, token)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("url", "token", "message"),
    [
        ("http://127.0.0.1:{port}/ws", TOKEN, "is not a websocket URL"),
        ("ws://127.0.0.1:{port}/nope", TOKEN, "HTTP 404 (no websocket API at this path"),
        ("ws://127.0.0.1:{port}/", TOKEN, "HTTP 200 (not a websocket endpoint"),
        ("ws://127.0.0.1:{port}/ws", None, "HTTP 401 (missing or wrong token: pass --token)"),
        ("ws://127.0.0.1:{port}/ws", "wrong", "HTTP 401"),
        ("ws://127.0.0.1:{port}/ws?token=wrong", None, "HTTP 401"),
        ("ws://127.0.0.1:{free}/ws", TOKEN, "cannot connect to"),
    ],
)
async def test_a_wrong_url_token_or_server_is_one_line_and_exit_2(
    server, folder, capsys, refused_port, url, token, message
):
    url = url.format(port=server.port, free=refused_port)
    status, out, err = await run_client(url, folder, capsys, token)
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("client: ") and message in line


async def test_a_full_server_is_reported_busy_with_its_reason(make_server, folder, capsys):
    server = await make_server(ServerConfig(max_sessions=1))
    url = f"ws://127.0.0.1:{server.port}/ws"
    async with connect(url):  # holds the only session
        status, out, err = await run_client(url, folder, capsys)
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line == f"client: server busy at {url}: server full (1 sessions); try again later"


@pytest.mark.parametrize(
    "url", ["ws://127.0.0.1:{port}/ws?token=" + TOKEN, "ws://127.0.0.1:{port}/ws"]
)
async def test_the_token_opens_the_session_as_option_or_in_the_url(server, folder, capsys, url):
    url = url.format(port=server.port)
    status, out, err = await run_client(url, folder, capsys, None if "token=" in url else TOKEN)
    assert status == 0, err
    frames = [m for m in map(json.loads, out.splitlines()) if m["type"] == "frame"]
    assert len(frames) == 2


@pytest.mark.parametrize(
    ("source", "message"),
    [("missing.mp4", "no such file"), ("empty", "holds no images"), ("broken", "cannot read any")],
)
async def test_a_bad_source_is_reported_before_connecting(
    tmp_path, capsys, refused_port, source, message
):
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "a.png").write_bytes(b"x")
    url = f"ws://127.0.0.1:{refused_port}/ws"  # nobody listens: connecting first would say so
    status, _, err = await run_client(url, tmp_path / source, capsys)
    assert status == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("client: ") and message in line


async def test_a_source_failing_mid_stream_leaves_no_orphaned_reader(server, caplog):
    def frames():
        yield 0.0, red_square_frame()
        raise SourceError("clip.mp4: video data is corrupt")

    url = f"ws://127.0.0.1:{server.port}/ws"
    with pytest.raises(SourceError, match="corrupt"):
        await stream_source(url + "?token=" + TOKEN, frames(), io.StringIO(), {})
    await asyncio.sleep(0.1)  # the server closes its side
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()  # an unretrieved task exception is logged when the task is collected
    assert "never retrieved" not in caplog.text


def test_every_option_has_help_and_the_default_url_is_shown():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for action in parser._actions:
        assert action.help, action.dest
    assert f"(default: {DEFAULT_URL})" in " ".join(parser.format_help().split())
