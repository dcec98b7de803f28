"""The demo page as a phone's web app, in Chromium emulating phones (Playwright's device
descriptors), its fake camera playing a generated clip; screenshots are checked."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from e2e.pages import clip_file, frames, wait_for
from playwright.sync_api import Page, sync_playwright

from evals.browser import CHROMIUM, camera_args

pytestmark = pytest.mark.browser

PHONES = ["Pixel 5", "iPhone 13"]
INSECURE_HOST = "phone.test"
"""A name Chromium maps to loopback: an origin that is neither https nor localhost."""
RECORD_CAMERA_ASKS = """
  window.cameraAsks = [];
  const ask = navigator.mediaDevices?.getUserMedia.bind(navigator.mediaDevices);
  if (ask) navigator.mediaDevices.getUserMedia = (constraints) => {
    window.cameraAsks.push(constraints.video.facingMode);
    return ask(constraints);
  };
"""


@contextlib.contextmanager
def phone_page(phone: str, url: str, clip: Path) -> Iterator[Page]:
    """``url`` in headless Chromium emulating ``phone`` (viewport, scale, touch, user agent),
    its camera playing ``clip``; the page records the camera each getUserMedia asks for."""
    with sync_playwright() as p:
        device: dict[str, Any] = dict(p.devices[phone])
        device.pop("default_browser_type")  # WebKit for an iPhone: Chromium emulates it here
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[*camera_args(clip), f"--host-resolver-rules=MAP {INSECURE_HOST} 127.0.0.1"],
        )
        try:
            page = browser.new_context(**device).new_page()
            page.add_init_script(RECORD_CAMERA_ASKS)
            page.goto(url)
            yield page
        finally:
            browser.close()


Box = dict[str, float]


def box(page: Page, selector: str) -> Box:
    found = page.locator(selector).bounding_box()
    assert found is not None, f"{selector} is not shown"
    return found


def within(inner: Box, width: float, height: float) -> bool:
    return (
        inner["x"] >= 0
        and inner["y"] >= 0
        and inner["x"] + inner["width"] <= width
        and inner["y"] + inner["height"] <= height
    )


def overlap(a: Box, b: Box) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def screenshot_region(page: Page, region: Box) -> np.ndarray:
    """The pixels of ``region`` (CSS pixels) in a screenshot of the viewport, BGR."""
    image = cv2.imdecode(np.frombuffer(page.screenshot(), np.uint8), cv2.IMREAD_COLOR)
    scale = image.shape[1] / page.viewport_size["width"]  # type: ignore[index]
    x0, y0 = int(region["x"] * scale), int(region["y"] * scale)
    x1, y1 = (
        int((region["x"] + region["width"]) * scale),
        int((region["y"] + region["height"]) * scale),
    )
    return image[y0:y1, x0:x1]


@pytest.mark.parametrize("phone", PHONES)
def test_the_demo_is_a_portrait_web_app_with_the_rear_camera(live_server, tmp_path, phone):
    with phone_page(phone, live_server + "/?autostart", clip_file(tmp_path, "fu", 7)) as page:
        wait_for(page, lambda r: len(frames(r)) >= 3)
        size = page.viewport_size
        assert size is not None and size["height"] > size["width"]
        video, start = box(page, "#video"), box(page, "#start")
        assert within(video, size["width"], size["height"])
        assert within(start, size["width"], size["height"])
        assert not overlap(video, start)
        assert video["height"] > video["width"]  # the stage is portrait
        shown = screenshot_region(page, video)
        assert shown.std() > 10  # the camera's picture, not a blank box
        assert page.text_content("#start").startswith("Start")
        assert page.evaluate("window.cameraAsks") == ["environment"]
        assert page.evaluate("state.wakeLock !== null && !state.wakeLock.released")
        assert page.is_hidden("#insecure")

        before = len(frames(page.evaluate("window.scanResults")))
        page.click("#flip")
        page.wait_for_function("window.cameraAsks.length === 2")
        assert page.evaluate("window.cameraAsks") == ["environment", "user"]
        wait_for(page, lambda r: len(frames(r)) >= before + 3)  # the session goes on


@pytest.mark.parametrize("phone", PHONES)
def test_an_insecure_origin_says_the_camera_needs_https(live_server, tmp_path, phone):
    insecure = live_server.replace("127.0.0.1", INSECURE_HOST)
    with phone_page(phone, insecure + "/", clip_file(tmp_path, "empty", 1)) as page:
        assert not page.evaluate("window.isSecureContext")
        size = page.viewport_size
        assert size is not None
        message, start = box(page, "#insecure"), box(page, "#start")
        assert within(message, size["width"], size["height"]) and not overlap(message, start)
        assert "HTTPS" in (page.text_content("#insecure") or "")
        yellow = screenshot_region(page, message).reshape(-1, 3)
        share = np.mean(np.all(np.abs(yellow.astype(int) - (0, 204, 255)) < 40, axis=1))
        assert share > 0.5  # the message's yellow box is on the screen
        page.click("#start")
        page.wait_for_function(
            "document.querySelector('#status').textContent.includes('needs https')"
        )
