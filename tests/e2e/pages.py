"""What the browser tests share: a server of a test's own, generated clips for the fake
camera, the demo page in headless Chromium, and waiting on what the page received."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from clients.clips import write_y4m
from detectors.synth.scenes import Content, make_clip
from evals.browser import launch
from stream.local_server import LocalServer, local_server

CLIP_FPS = 15
Results = list[dict]


def own_server(tmp_path: Path, *flags: str) -> contextlib.AbstractContextManager[LocalServer]:
    """A loopback ``run.py serve`` of a test's own, with ``flags`` and an empty targets folder."""
    return local_server("--host", "127.0.0.1", "--targets", str(tmp_path / "targets"), *flags)


def clip_file(tmp_path: Path, content: Content, seed: int) -> Path:
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
        browser = launch(p, clip, allow_camera)
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


def wait_for_status(page: Page, text: str, timeout_ms: float = 30_000) -> str:
    page.wait_for_function(
        f"document.querySelector('#status').textContent.includes({text!r})", timeout=timeout_ms
    )
    return page.text_content("#status")


def recognized(results: Results) -> Results:
    return [m for m in results if m["type"] == "event" and m["event"] == "recognized"]


def frames(results: Results) -> Results:
    return [m for m in results if m["type"] == "frame"]
