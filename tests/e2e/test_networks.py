"""The demo page through a real TURN relay (Debian's coturn on loopback, time-limited
credentials from a shared secret), in a real Chromium forced to relay-only."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.pages import (
    clip_file,
    demo_page,
    frames,
    own_server,
    recognized,
    wait_for,
    wait_for_status,
)
from playwright.sync_api import Page, Request

from evals import network
from evals.turn import free_port, local_turn_server

pytestmark = pytest.mark.browser

SECRET = "loopback-test-secret"


@pytest.fixture
def turn_server(tmp_path: Path) -> Iterator[int]:
    """coturn on a loopback port with ``use-auth-secret`` and :data:`SECRET`; its port."""
    with local_turn_server(tmp_path, SECRET) as port:
        yield port


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


def test_an_unreachable_turn_server_is_explained_on_the_page(tmp_path):
    """Nothing answers on the TURN server's port: gathering candidates would wait for it
    for a long time; the page gives up on it and says why."""
    clip = clip_file(tmp_path, "fu", seed=7)
    with (
        serve_through(tmp_path, free_port(), SECRET) as server,
        demo_page(server.url + "/?autostart&relay=1", clip) as page,
    ):
        status = wait_for_status(page, "TURN relay", timeout_ms=20_000)
        assert "no answer from the TURN server" in status and "--ice-server" in status
        assert page.is_enabled("#start")
        assert page.text_content("#stat-transport") == "–"


def test_eval_network_measures_both_paths(capsys):
    """``run.py eval-network`` on one 福 clip and one look-alike clip: both paths report
    recognition and what the page's sender counted; the impaired one lost and resent."""
    parser = argparse.ArgumentParser()
    network.add_arguments(parser)
    args = parser.parse_args(["--clips", "1", "--negatives", "1", "--watch", "2"])
    assert network.run(args) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    clean, impaired = summary["clean"], summary["impaired"]
    assert clean["recognized"] == 1 and clean["false"] == impaired["false"] == 0
    assert clean["frames"] > 0 and impaired["frames"] > 0
    assert summary["dropped_packets"] > 0 and impaired["nackCount"] > 0
    assert impaired["retransmittedBytesSent"] > 0
