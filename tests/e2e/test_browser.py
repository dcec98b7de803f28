"""The demo page in a real headless Chromium, its fake camera playing a generated clip."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from clients.clips import write_y4m
from clients.local_server import start_server, stop_server
from detectors.synth.scenes import make_clip

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CLIP_FPS = 15
Results = list[dict]


def clip_file(tmp_path: Path, content: str, seed: int) -> Path:
    path = tmp_path / f"{content}-{seed}.y4m"
    write_y4m(make_clip(seed, n_frames=45, fps=CLIP_FPS, content=content).frames, path, CLIP_FPS)
    return path


@contextlib.contextmanager
def demo_page(
    url: str,
    clip: Path,
    prepare: Callable[[Page], None] = lambda page: None,
    allow_camera: bool = True,
) -> Iterator[Page]:
    """The demo page at ``url`` in headless Chromium whose camera plays ``clip``; ``prepare``
    runs before the page loads (e.g. to intercept requests)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                *(["--use-fake-ui-for-media-stream"] if allow_camera else []),
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-video-capture={clip}",
                "--disable-background-networking",
            ],
        )
        try:
            page = browser.new_page()
            prepare(page)
            page.goto(url)
            yield page
        finally:
            browser.close()


def wait_for(page: Page, until: Callable[[Results], bool], limit_s: float = 45.0) -> Results:
    """``window.scanResults`` once ``until`` holds for it (bounded)."""
    deadline = time.monotonic() + limit_s
    while not until(results := page.evaluate("window.scanResults")):
        status = page.text_content("#status")
        assert time.monotonic() < deadline, f"gave up; page status: {status}"
        page.wait_for_timeout(250)
    return results


def recognized(results: Results) -> Results:
    return [m for m in results if m["type"] == "event" and m["event"] == "recognized"]


def frames(results: Results) -> Results:
    return [m for m in results if m["type"] == "frame"]


def test_a_clip_with_fu_is_recognized_in_the_browser(live_server, tmp_path):
    with demo_page(live_server + "/?autostart", clip_file(tmp_path, "fu", seed=7)) as page:
        results = wait_for(page, recognized)
        assert page.is_visible("#banner")
        assert page.text_content("#stat-transport") == "WebRTC"
    event = recognized(results)[0]
    assert event["label"] == "fu"
    assert any(d["track"] == event["track"] for m in frames(results) for d in m["detections"])


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
        page.wait_for_function("document.querySelector('#status').textContent.includes('camera')")
        assert "camera unavailable" in page.text_content("#status")
        assert page.is_enabled("#start")  # the user can try again
        assert page.evaluate("window.scanResults") == []


def test_the_page_reconnects_when_the_server_comes_back(tmp_path):
    server = start_server()
    try:
        with demo_page(server.url + "/?autostart", clip_file(tmp_path, "fu", seed=7)) as page:
            before = len(wait_for(page, lambda r: len(frames(r)) >= 3))
            stop_server(server)
            page.wait_for_function(
                "document.querySelector('#status').textContent.includes('reconnecting')",
                timeout=30_000,
            )
            server = start_server(port=server.port)
            wait_for(page, lambda r: len(frames(r[before:])) >= 3, limit_s=60)
    finally:
        stop_server(server)
