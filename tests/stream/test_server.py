"""``serve``: its flags are checked before anything loads, and the access log hides tokens."""

import logging
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aioice.ice
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from fakes import RedSquareDetector

from stream import server
from stream.admission import ServerConfig
from stream.pipelines import Pipelines
from stream.server import RedactingAccessLogger, serve, url_host


@pytest.mark.parametrize(
    ("path", "referer", "logged"),
    [
        ("/ws?token=SECRET", "-", '"GET /ws?token=*** HTTP/1.1" 200 "-"'),
        ("/?a=1&token=SECRET&b=2", "-", '"GET /?a=1&token=***&b=2 HTTP/1.1" 200 "-"'),
        ("/static/app.js", "https://h:8080/?token=SECRET", '"GET /static/app.js HTTP/1.1" 200 '
         '"https://h:8080/?token=***"'),
        ("/?mytoken=kept&token=", "-", '"GET /?mytoken=kept&token= HTTP/1.1" 200 "-"'),
    ],
)  # fmt: skip
def test_the_access_log_shows_no_token(caplog, path, referer, logged):
    logger = RedactingAccessLogger(logging.getLogger("test.access"), '"%r" %s "%{Referer}i"')
    request = make_mocked_request("GET", path, headers={"Referer": referer})
    with caplog.at_level(logging.INFO, "test.access"):
        logger.log(request, web.Response(), 0.01)
    assert caplog.messages == [logged]
    assert "SECRET" not in repr(caplog.records[0].__dict__)  # nor in the record's extra fields


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` gets the red-square model, and its ICE patch is undone afterwards."""
    monkeypatch.setattr(
        Pipelines, "from_models", lambda *_, **__: Pipelines({"l": RedSquareDetector()}, workers=1)
    )
    monkeypatch.setattr(aioice.ice, "get_host_addresses", aioice.ice.get_host_addresses)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, fake_models: None) -> list[dict[str, Any]]:
    """Calls of ``run_server`` by ``serve``; each returns at once."""
    calls: list[dict[str, Any]] = []

    def run_server(app: web.Application, sockets: list[socket.socket], *_: Any) -> None:
        calls.append({"sockets": sockets, "ready": _[1]})

    monkeypatch.setattr(server, "run_server", run_server)
    return calls


@pytest.fixture
def reserved_port() -> Iterator[int]:
    """A port on 127.0.0.1 held for the test by a bound socket that does not listen.

    Both it and ``serve``'s sockets set ``SO_REUSEADDR``, so ``serve`` can still bind and listen
    there; meanwhile the OS hands the port to nobody asking for a free one (port 0).
    """
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize(
    ("host", "port", "profile", "tls", "error"),
    [
        ("127.0.0.1", 99999, "host", {}, "--port 99999 is outside 0..65535"),
        ("127.0.0.1", -1, "host", {}, "--port -1 is outside 0..65535"),
        ("127.0.0.1", 8080, "zz", {}, "--profile: unknown device profile 'zz'; known: ["),
        ("127.0.0.1", 8080, "host", {"cert": Path("c.pem")}, "--cert and --key go together"),
        ("127.0.0.1", 8080, "host", {"key": Path("k.pem")}, "--cert and --key go together"),
        ("127.0.0.1", 8080, "host", {"cert": Path("none.pem"), "key": Path("none.pem")},
         "--cert none.pem / --key none.pem: [Errno 2] No such file"),
        ("foo.invalid", 8080, "host", {}, "--host foo.invalid: cannot resolve it"),
    ],
)  # fmt: skip
def test_wrong_flags_end_start_up_with_one_line(
    started, capsys, tmp_path, host, port, profile, tls, error
):
    with pytest.raises(SystemExit) as exited:
        serve(host, port, ServerConfig(default_profile=profile), targets=tmp_path, **tls)
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith(f"run.py serve: error: {error}") and stderr.count("\n") == 1
    assert not started


def test_a_host_name_is_resolved_and_the_urls_are_shown_once_listening(started, capsys, tmp_path):
    serve("localhost", 0, ServerConfig(), targets=tmp_path)
    assert capsys.readouterr().out == ""  # nothing yet: run_server has not started serving
    [call] = started
    port = call["sockets"][0].getsockname()[1]  # the OS's choice for port 0
    for sock in call["sockets"]:  # every address of localhost, bound by serve on that one port
        assert sock.getsockname()[1] == port != 0
        sock.close()
    call["ready"]()  # run_server: the sockets accept
    assert capsys.readouterr().out == f"open http://localhost:{port}/\n"
    assert aioice.ice.get_host_addresses(True, False) == ["127.0.0.1"]  # loopback ICE


@pytest.mark.parametrize("pick_port", [True, False], ids=["port-0", "free-port"])
def test_the_url_shown_names_the_port_listened_on(
    monkeypatch, fake_models, capsys, tmp_path, reserved_port, pick_port
):
    real_run_server = server.run_server
    shown: list[int | None] = []

    def run_server(app: web.Application, sockets: Any, context: Any, ready: Any) -> None:
        def listening() -> None:
            ready()  # serve's own: the URL
            port = urlsplit(capsys.readouterr().out.strip().removeprefix("open ")).port
            shown.append(port)
            socket.create_connection(("127.0.0.1", port), timeout=5).close()  # it listens
            signal.raise_signal(signal.SIGTERM)  # drains and returns, instead of serving on

        real_run_server(app, sockets, context, listening)

    monkeypatch.setattr(server, "run_server", run_server)
    serve("127.0.0.1", 0 if pick_port else reserved_port, ServerConfig(), targets=tmp_path)
    [port] = shown
    assert port != 0 and (pick_port or port == reserved_port)


def test_an_address_in_use_ends_start_up_with_one_line(monkeypatch, fake_models, capsys, tmp_path):
    real_run_server = server.run_server

    def run_server(app: web.Application, sockets: Any, context: Any, ready: Any) -> None:
        def listening() -> None:  # instead of serving forever
            raise AssertionError("listened on an address already in use")

        real_run_server(app, sockets, context, listening)

    monkeypatch.setattr(server, "run_server", run_server)
    with socket.create_server(("127.0.0.1", 0)) as taken, pytest.raises(SystemExit) as exited:
        port = taken.getsockname()[1]  # listened on by another socket, bound to port 0
        serve("127.0.0.1", port, ServerConfig(), targets=tmp_path)
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        f"run.py serve: error: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


@pytest.mark.parametrize(
    ("host", "shown"),
    [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]"), ("fe80::1", "[fe80::1]"), ("box", "box")],
)
def test_url_host_brackets_ipv6_literals(host, shown):
    assert url_host(host) == shown


def test_a_file_as_targets_folder_ends_start_up_with_one_line(started, capsys, tmp_path):
    file = tmp_path / "targets.txt"
    file.write_text("not a folder")
    with pytest.raises(SystemExit) as exited:
        serve("127.0.0.1", 8080, ServerConfig(), targets=file)
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"run.py serve: error: --targets: {file} is a file, not a targets folder\n"
    )
    assert not started


NOT_AN_ICE_URL = "not stun:HOST[:PORT] or turn[s]:[USER:PASSWORD@]HOST[:PORT][?transport=udp|tcp]"


@pytest.mark.parametrize(
    ("servers", "error"),
    [
        (("stun.example.org:3478",), "--ice-server stun.example.org:3478: " + NOT_AN_ICE_URL),
        (("stun:",), "--ice-server stun:: " + NOT_AN_ICE_URL),
        (("stun:example.org:port",), "--ice-server stun:example.org:port: " + NOT_AN_ICE_URL),
        (("stun:[::1]:3478",), "--ice-server stun:[::1]:3478: " + NOT_AN_ICE_URL),
        (
            ("turn:example.org",),
            "--ice-server: turn:example.org: give USER:PASSWORD@ in the URL "
            "or --turn-secret, one of them",
        ),
        (("stun:example.org:0",), "--ice-server stun:example.org:0: port outside 1..65535"),
        (("stun:example.org:65536",), "--ice-server stun:example.org:65536: port outside 1..65535"),
        (("stun:a.example", "stun:b.example"), "--ice-server: aiortc uses one STUN server, not 2"),
    ],
)
def test_a_malformed_ice_server_ends_start_up_with_one_line(
    started, capsys, tmp_path, servers, error
):
    with pytest.raises(SystemExit) as exited:
        serve("127.0.0.1", 8080, ServerConfig(ice_servers=servers), targets=tmp_path)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"run.py serve: error: {error}\n"
    assert not started
