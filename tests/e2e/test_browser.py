"""The demo page in a real headless Chromium, its fake camera playing a generated clip."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import psutil
import pytest
from e2e.pages import (
    CLIP_FPS,
    clip_file,
    demo_page,
    frames,
    own_server,
    recognized,
    wait_for,
    wait_for_status,
)
from object_scenes import covers, frame_with
from playwright.sync_api import Page

from clients.clips import write_y4m
from detectors.synth.scenes import make_clip
from evals.browser import RECORD_PEERS, sender_stats
from stream.local_server import LocalServer, start_server, stop_server

pytestmark = pytest.mark.browser


def test_a_clip_with_fu_is_recognized_in_the_browser(live_server, tmp_path):
    with demo_page(live_server + "/?autostart", clip_file(tmp_path, "fu", seed=7)) as page:
        results = wait_for(page, recognized)
        assert page.is_visible("#banner")
        assert page.text_content("#stat-transport") == "WebRTC"
    event = recognized(results)[0]
    assert event["label"] == "fu"
    assert any(d["track"] == event["track"] for m in frames(results) for d in m["detections"])


def test_the_page_asks_the_camera_for_at_most_30_frames_a_second(live_server, tmp_path):
    fast = tmp_path / "fast.y4m"
    write_y4m(make_clip(7, n_frames=60, fps=60, content="fu").frames, fast, 60)
    with demo_page(live_server + "/?autostart", fast) as page:
        wait_for(page, lambda r: len(frames(r)) > 0)
        rate = page.evaluate("state.stream.getVideoTracks()[0].getSettings().frameRate")
    assert 0 < rate <= 30


def test_a_clip_without_fu_is_never_recognized(live_server, tmp_path):
    enough = 60  # processed frames: more than four loops of the clip's look-alike posters
    with demo_page(live_server + "/?autostart", clip_file(tmp_path, "negative", seed=8)) as page:
        results = wait_for(page, lambda r: len(frames(r)) >= enough)
    assert recognized(results) == []


def test_switching_the_device_profile_starts_a_session_on_that_profile(live_server, tmp_path):
    clip = clip_file(tmp_path, "fu", seed=9)
    with demo_page(live_server + "/?autostart&profile=low", clip) as page:
        first = wait_for(page, lambda r: len(frames(r)) >= 3)
        assert {m["device"]["profile"] for m in frames(first)} == {"low"}
        page.select_option("#profile", "high")
        later = wait_for(page, lambda r: frames(r)[-1]["device"]["profile"] == "high")
        assert page.text_content("#stat-tier").startswith("high / ")
    low_latency = frames(first)[-1]["device"]["latency_ms"]
    high_latency = frames(later)[-1]["device"]["latency_ms"]
    assert high_latency < low_latency  # the flagship is emulated faster than the ¥600 phone


def test_when_webrtc_cannot_connect_the_page_falls_back_to_the_websocket(live_server, tmp_path):
    def break_signalling(page: Page) -> None:  # as behind a proxy that only passes websockets
        page.route("**/offer", lambda route: route.abort("connectionrefused"))

    clip = clip_file(tmp_path, "fu", seed=7)
    with demo_page(live_server + "/?autostart", clip, break_signalling) as page:
        results = wait_for(page, recognized, limit_s=60)
        assert page.text_content("#stat-transport") == "websocket"
    assert frames(results)


def test_a_denied_camera_is_explained_on_the_page(live_server, tmp_path):
    with demo_page(
        live_server + "/?autostart", clip_file(tmp_path, "empty", 1), allow_camera=False
    ) as page:
        # The idle text ("Press Start camera ...") mentions the camera too: wait for the refusal.
        page.wait_for_function(
            "document.querySelector('#status').textContent.includes('camera unavailable')"
        )
        assert page.is_enabled("#start")  # the user can try again
        assert page.evaluate("window.scanResults") == []


@pytest.mark.parametrize("query", ["", "&transport=ws"], ids=["webrtc", "websocket"])
def test_the_page_reconnects_when_the_server_comes_back(tmp_path, query):
    clip = clip_file(tmp_path, "fu", seed=7)
    server = start_server()
    try:
        with demo_page(server.url + "/?autostart" + query, clip) as page:
            before = len(wait_for(page, lambda r: len(frames(r)) >= 3))
            stop_server(server)
            # The second try found nothing listening: a lost connection, not a busy server.
            wait_for_status(page, "connection lost; reconnecting in 2 s")
            # Nothing of the lost session stays: no frozen boxes, no stale numbers.
            assert overlay_is_blank(page)
            for stat in ("#stat-transport", "#stat-tier", "#stat-fps", "#stat-latency"):
                assert page.text_content(stat) == "–"
            server = start_server(port=server.port)
            wait_for(page, lambda r: len(frames(r[before:])) >= 3, limit_s=60)
    finally:
        stop_server(server)


def peer_ports(server: LocalServer) -> set[tuple[int, int]]:
    """(worker pid, UDP port) of every ICE socket the server's workers hold."""
    found = set()
    for child in psutil.Process(server.process.pid).children():
        if "spawn_main" in " ".join(child.cmdline()):
            found |= {(child.pid, c.laddr.port) for c in child.net_connections("udp")}
    return found


def test_offers_on_any_worker_are_answered_by_it_and_a_killed_worker_is_survived(tmp_path):
    """Each page's offer lands on one of two workers, whose answer names its own ICE
    candidates: the media reaches the process holding the peer. When that process is
    killed, the page reconnects and the host's other worker (or its replacement) serves it."""
    clip = clip_file(tmp_path, "fu", seed=7)
    served: set[int] = set()
    with own_server(tmp_path, "--workers", "2") as server:
        for _ in range(8):  # each connection goes to the least-loaded worker: until both served
            before = peer_ports(server)
            with demo_page(server.url + "/?autostart", clip) as page:
                wait_for(page, recognized)
                holders = {pid for pid, _ in peer_ports(server) - before}
                assert len(holders) == 1
                served |= holders
                if len(served) == 2:
                    seen = len(frames(page.evaluate("window.scanResults")))
                    os.kill(holders.pop(), signal.SIGKILL)
                    wait_for_status(page, "reconnecting")
                    wait_for(page, lambda r, n=seen: len(frames(r)) >= n + 3, limit_s=60)
                    break
    assert len(served) == 2


def overlay_is_blank(page: Page) -> bool:
    return page.evaluate(
        """(() => { const c = document.querySelector('#overlay');
        if (!c.width || !c.height) return true;
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        return px.every((v, i) => i % 4 !== 3 || v === 0); })()"""
    )


def session_requests(page: Page) -> list[str]:
    """Paths of the session requests (POST /offer, /ws) the page makes from now on."""
    seen: list[str] = []
    page.on(
        "request", lambda r: seen.append(r.url) if "/offer" in r.url or "/ws" in r.url else None
    )
    return seen


def test_a_server_that_wants_a_token_says_so_and_stops_asking(tmp_path):
    clip = clip_file(tmp_path, "empty", seed=1)
    with (
        own_server(tmp_path, "--token", "s3cret") as server,
        demo_page(server.url + "/?autostart", clip) as page,
    ):
        requests = session_requests(page)
        wait_for_status(page, "this server needs a token: open the page with ?token=")
        page.wait_for_timeout(2500)  # a retry would have come by now
        assert "reconnecting" not in page.text_content("#status")
        assert len(requests) <= 1  # the one refused offer; no websocket fallback, no loop
        assert page.is_enabled("#start")

        page.goto(server.url + "/?autostart&token=wrong")
        wait_for_status(page, "the token was refused")
        page.goto(server.url + "/?autostart&transport=ws")  # the websocket's refusal too
        wait_for_status(page, "this server needs a token")
        page.goto(server.url + "/?autostart&token=s3cret")
        wait_for(page, lambda r: len(frames(r)) >= 1)


@pytest.mark.parametrize("query", ["", "&transport=ws"], ids=["webrtc", "websocket"])
def test_a_full_server_says_so_and_a_waiting_tab_gets_in_when_the_other_closes(tmp_path, query):
    clip = clip_file(tmp_path, "empty", seed=1)
    with (
        own_server(tmp_path, "--max-sessions", "1") as server,
        demo_page(server.url + "/?autostart" + query, clip) as first,
    ):
        wait_for(first, lambda r: len(frames(r)) >= 2)
        second = first.context.browser.new_page()  # another tab
        requests = session_requests(second)
        second.goto(server.url + "/?autostart" + query)
        # The server says why over either transport (a websocket's close code and reason, as
        # WebRTC's HTTP status and body): a full server, not a dropped network.
        status = wait_for_status(second, "server busy (")
        code = 1013 if query else 503
        assert f"server busy ({code}): server full (1 sessions)" in status
        assert "reconnecting" not in status  # not a lost connection
        assert "trying again in 5 s" in status  # a full server can clear: it keeps asking, slowly
        asked = len(requests)
        second.wait_for_timeout(3000)
        assert len(requests) == asked  # not before those 5 s
        refusal = second.evaluate("sendTargetPhoto('cup', new Blob()).catch((e) => e.message)")
        assert refusal == "server full (1 sessions)"  # a target photo is told why too
        first.close()  # pagehide ends its session: the slot is free at once, not after ICE gives up
        wait_for(second, lambda r: len(frames(r)) >= 1, limit_s=30)
        assert second.text_content("#stat-transport") == ("websocket" if query else "WebRTC")


def test_a_new_session_forgets_the_tracks_recognized_in_the_last_one(live_server, tmp_path):
    with demo_page(live_server + "/?autostart", clip_file(tmp_path, "fu", seed=7)) as page:
        wait_for(page, recognized)
        assert page.evaluate("state.recognized.size") > 0
        # The new session numbers its tracks from 1 again: its #1 is not recognized yet.
        left = page.evaluate(
            """(() => { const s = document.querySelector('#profile');
            s.value = [...s.options].map((o) => o.value).find((v) => v !== s.value);
            s.dispatchEvent(new Event('change'));
            return state.recognized.size; })()"""
        )
        assert left == 0
        assert overlay_is_blank(page)


def test_a_refused_profile_is_shown_and_not_retried_over_the_websocket(live_server, tmp_path):
    add_bogus = """(() => { const o = document.createElement('option');
        o.value = o.textContent = 'bogus'; document.querySelector('#profile').append(o);
        document.querySelector('#profile').value = 'bogus'; })()"""
    clip = clip_file(tmp_path, "empty", seed=1)
    with demo_page(live_server + "/", clip) as page:
        requests = session_requests(page)
        page.wait_for_function("document.querySelector('#profile').options.length > 0")
        page.evaluate(add_bogus)
        page.click("#start")
        status = wait_for_status(page, "(400)")
        assert "bogus" in status
        page.wait_for_timeout(1500)
        assert [u for u in requests if "/ws" in u] == []  # no fallback
        assert page.text_content("#stat-transport") == "–"
        assert page.is_enabled("#start")

        page.goto(live_server + "/?transport=ws")  # the websocket's own refusal of the option
        page.wait_for_function("document.querySelector('#profile').options.length > 0")
        page.evaluate(add_bogus)
        page.click("#start")
        wait_for_status(page, "(400)")
        assert page.text_content("#stat-transport") == "–"


def test_the_banner_stays_one_line_on_a_phone(live_server, tmp_path):
    def phone(page: Page) -> None:
        page.set_viewport_size({"width": 390, "height": 844})

    with demo_page(live_server + "/", clip_file(tmp_path, "empty", seed=1), phone) as page:
        page.evaluate("document.querySelector('#banner').hidden = false")
        banner = page.locator("#banner").bounding_box()
        stage = page.locator("#stage").bounding_box()
        line = page.evaluate("parseFloat(getComputedStyle(banner).fontSize)")
        assert banner["height"] < 2 * line  # one line
        assert (
            banner["x"] >= stage["x"]
            and banner["x"] + banner["width"] <= stage["x"] + stage["width"]
        )
        assert banner["height"] < stage["height"] / 5


def test_stop_camera_ends_the_session_and_start_begins_a_new_one(live_server, tmp_path):
    with demo_page(live_server + "/?autostart", clip_file(tmp_path, "empty", seed=1)) as page:
        wait_for(page, lambda r: len(frames(r)) >= 2)
        assert page.is_disabled("#start")
        page.click("#stop")
        assert page.is_enabled("#start") and page.is_disabled("#stop")
        assert page.evaluate("video.srcObject === null")
        assert page.text_content("#stat-transport") == "–"
        before = len(page.evaluate("window.scanResults"))
        page.wait_for_timeout(500)
        settled = len(page.evaluate("window.scanResults"))
        page.click("#start")
        wait_for(page, lambda r: len(frames(r[settled:])) >= 2)
        assert settled - before <= 1  # at most a frame in flight when stopped


def cover_clip(tmp_path: Path) -> Path:
    """A hand-held view of a book cover that fills most of the frame, as the page asks
    ("fill the view with the target") before "Register target"."""
    path = tmp_path / "cover.y4m"
    shake = np.random.default_rng(3).normal(0, 2, (30, 2))
    corners = np.array([(190, 20), (450, 20), (450, 460), (190, 460)], np.float64)
    clip = [frame_with(covers()[0].image, [tuple(c) for c in corners + d]) for d in shake]
    write_y4m(clip, path, CLIP_FPS)
    return path


def test_a_snapped_target_is_registered_and_then_recognized_in_the_stream(tmp_path):
    name = "test cover"
    with (
        own_server(tmp_path) as server,
        demo_page(server.url + "/?autostart", cover_clip(tmp_path)) as page,
    ):
        wait_for(page, lambda r: len(frames(r)) >= 2)  # the camera plays
        page.fill("#target-name", name)
        page.click("#register")
        # The reply, not the status line: the scanning counter soon overwrites that.
        results = wait_for(page, lambda r: any(m["type"] == "target_registered" for m in r))
        later = wait_for(page, lambda r: any(e["label"] == name for e in recognized(r)))
    reply = next(m for m in results if m["type"] == "target_registered")
    assert (reply["name"], reply["targets"]) == (name, 1)
    assert (tmp_path / "targets" / name / "target.json").is_file()  # persisted
    assert {e["label"] for e in recognized(later)} == {name}


def test_a_target_photo_without_texture_is_refused_on_the_page(live_server, tmp_path):
    flat = tmp_path / "flat.y4m"
    write_y4m([np.full((480, 640, 3), 128, np.uint8)] * 5, flat, CLIP_FPS)
    with demo_page(live_server + "/?autostart", flat) as page:
        wait_for(page, lambda r: len(frames(r)) >= 1)
        page.fill("#target-name", "grey wall")
        page.click("#register")
        results = wait_for(page, lambda r: any(m["type"] == "error" for m in r))
        assert page.is_enabled("#register")  # the user can try another photo
    assert [m["code"] for m in results if m["type"] == "error"] == ["no_texture"]


def sent_kbps(page: Page, seconds: float) -> float:
    """The page's video bitrate over the next ``seconds``, from its peers' own statistics."""
    first = sender_stats(page)["bytesSent"]
    page.wait_for_timeout(seconds * 1000)
    return (sender_stats(page)["bytesSent"] - first) * 8 / seconds / 1000


def test_the_browser_sends_no_more_video_than_the_server_asks_for(tmp_path):
    """Chromium starts near 300 kbit/s and climbs; asked for 100 it stays near 100."""
    clip = clip_file(tmp_path, "fu", seed=7)
    rates = {}
    for limit in ("100", "0"):
        with (
            own_server(tmp_path, "--max-video-kbps", limit) as server,
            demo_page(
                server.url + "/?autostart", clip, lambda page: page.add_init_script(RECORD_PEERS)
            ) as page,
        ):
            wait_for(page, lambda r: len(frames(r)) >= 30)
            rates[limit] = sent_kbps(page, 4.0)
    assert rates["100"] < 140 and rates["0"] > 200, rates
