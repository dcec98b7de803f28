"""The demo page in a real headless Chromium, its fake camera playing a generated clip."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from clients.clips import write_y4m
from detectors.synth.scenes import make_clip

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CLIP_FPS = 15


def clip_file(tmp_path: Path, content: str, seed: int) -> Path:
    path = tmp_path / f"{content}-{seed}.y4m"
    write_y4m(make_clip(seed, n_frames=45, fps=CLIP_FPS, content=content).frames, path, CLIP_FPS)
    return path


def scan_results(page: Page) -> list[dict]:
    return page.evaluate("window.scanResults")


def scan_in_browser(url: str, clip: Path, until, limit_s: float = 45.0) -> list[dict]:
    """Open the demo with ``clip`` as camera; return ``window.scanResults`` once ``until`` holds."""
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-video-capture={clip}",
                "--disable-background-networking",
            ],
        )
        try:
            page = browser.new_page()
            page.goto(url + "/?autostart")
            deadline = time.monotonic() + limit_s
            while not until(results := scan_results(page)):
                status = page.text_content("#status")
                assert time.monotonic() < deadline, f"gave up; page status: {status}"
                page.wait_for_timeout(250)
            return results
        finally:
            browser.close()


def recognized(results: list[dict]) -> list[dict]:
    return [m for m in results if m["type"] == "event" and m["event"] == "recognized"]


def test_a_clip_with_fu_is_recognized_in_the_browser(live_server, tmp_path):
    results = scan_in_browser(live_server, clip_file(tmp_path, "fu", seed=7), until=recognized)
    event = recognized(results)[0]
    assert event["label"] == "fu"
    frames = [m for m in results if m["type"] == "frame"]
    assert frames and frames[-1]["device"]["profile"]
    assert any(d["track"] == event["track"] for m in frames for d in m["detections"])


def test_a_clip_without_fu_is_never_recognized(live_server, tmp_path):
    enough = 60  # processed frames: more than four loops of the clip's look-alike posters
    results = scan_in_browser(
        live_server,
        clip_file(tmp_path, "negative", seed=8),
        until=lambda r: sum(m["type"] == "frame" for m in r) >= enough,
    )
    assert recognized(results) == []
