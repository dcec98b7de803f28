"""The demo page through a real TURN relay (Debian's coturn on loopback, time-limited
credentials from a shared secret), in a real Chromium forced to relay-only."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.test_browser import clip_file, demo_page, frames, own_server, recognized, wait_for
from playwright.sync_api import Page, Request

pytestmark = pytest.mark.browser

SECRET = "loopback-test-secret"
START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port free for both UDP and TCP (coturn listens on both)."""
    while True:
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        ):
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            try:
                tcp.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


@pytest.fixture
def turn_server(tmp_path: Path) -> Iterator[int]:
    """coturn on a loopback port with ``use-auth-secret`` and :data:`SECRET`; its port."""
    port = free_port()
    process = subprocess.Popen(
        [
            "turnserver",
            "-n",  # no configuration file: only these flags
            "--listening-ip=127.0.0.1",
            f"--listening-port={port}",
            "--relay-ip=127.0.0.1",
            "--use-auth-secret",
            f"--static-auth-secret={SECRET}",
            "--realm=fuscan.test",
            "--allow-loopback-peers",  # the server and Chromium are on loopback too
            "--no-tls",
            "--no-dtls",
            "--no-cli",
            f"--db={tmp_path / 'turndb'}",
            f"--pidfile={tmp_path / 'turnserver.pid'}",
            f"--log-file={tmp_path / 'turnserver.log'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # it listens on TCP as on UDP: accepting means it is up
            assert process.poll() is None, "turnserver exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "turnserver did not listen"
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def candidate_types(sdp: str) -> set[str]:
    return {line.split(" typ ")[1].split()[0] for line in sdp.splitlines() if " typ " in line}


def serve_through(tmp_path: Path, port: int, secret: str):  # type: ignore[no-untyped-def]
    return own_server(
        tmp_path,
        "--ice-server",
        f"turn:127.0.0.1:{port}",
        "--turn-secret",
        secret,
        "--ice-relay-only",
    )


def test_a_clip_is_recognized_through_the_turn_relay_only(turn_server, tmp_path):
    offers: list[Request] = []

    def record_offers(page: Page) -> None:
        page.on("request", lambda r: offers.append(r) if r.url.endswith("/offer") else None)

    clip = clip_file(tmp_path, "fu", seed=7)
    with (
        serve_through(tmp_path, turn_server, SECRET) as server,
        demo_page(server.url + "/?autostart&relay=1", clip, record_offers) as page,
    ):
        results = wait_for(page, recognized)
        assert page.text_content("#stat-transport") == "WebRTC"
        offer, answer = offers[0].post_data_json["sdp"], offers[0].response().json()["sdp"]
    assert recognized(results)[0]["label"] == "fu" and frames(results)
    assert candidate_types(offer) == {"relay"}  # the page's candidates
    assert candidate_types(answer) == {"relay"}  # the server's


def test_a_wrong_turn_secret_is_explained_on_the_page(turn_server, tmp_path):
    clip = clip_file(tmp_path, "fu", seed=7)
    with (
        serve_through(tmp_path, turn_server, "not-" + SECRET) as server,
        demo_page(server.url + "/?autostart&relay=1", clip) as page,
    ):
        page.wait_for_function(
            "document.querySelector('#status').textContent.includes('TURN relay')",
            timeout=30_000,
        )
        status = page.text_content("#status") or ""
        assert "401" in status and "--turn-secret" in status
        assert page.is_enabled("#start")  # the user can try again
        assert page.text_content("#stat-transport") == "–"  # no silent websocket fallback
