"""Headless Chromium whose fake camera plays a clip, and what the page's own WebRTC peers
measure (``getStats``): shared by the browser tests and ``run.py eval-network``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's Chromium: Playwright's own download does not work offline."""

RECORD_PEERS = """
window.peers = [];
window.RTCPeerConnection = class extends window.RTCPeerConnection {
  constructor(...args) { super(...args); window.peers.push(this); }
};
"""
"""An init script: the page's peer connections, in ``window.peers``, for :func:`sender_stats`."""

SENDER_FIELDS = (
    "packetsSent",
    "bytesSent",
    "retransmittedPacketsSent",
    "retransmittedBytesSent",
    "nackCount",
    "pliCount",
    "firCount",
    "framesEncoded",
    "keyFramesEncoded",
    "framesSent",
)
"""The counters of the page's outbound video (``outbound-rtp``) that :func:`sender_stats` sums:
what it sent, resent, and the NACK, PLI and FIR requests that reached it from the server."""

_SENDER_STATS = """async (fields) => {
  const sums = Object.fromEntries(fields.map((f) => [f, 0]));
  sums.packetsLost = 0;  // the server's receiver reports, as the page reads them
  for (const pc of window.peers) {
    (await pc.getStats()).forEach((r) => {
      if (r.kind !== "video") return;
      if (r.type === "outbound-rtp") fields.forEach((f) => { sums[f] += r[f] || 0; });
      if (r.type === "remote-inbound-rtp") sums.packetsLost += r.packetsLost || 0;
    });
  }
  return sums;
}"""


def camera_args(clip: Path, allow_camera: bool = True) -> list[str]:
    """Chromium flags for a fake camera playing ``clip`` (a .y4m file), granted without a
    prompt unless ``allow_camera`` is false (then refused)."""
    return [
        "--no-sandbox",
        *(["--use-fake-ui-for-media-stream"] if allow_camera else []),
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-video-capture={clip}",
        "--disable-background-networking",
    ]


def launch(p: Playwright, clip: Path, allow_camera: bool = True) -> Browser:
    """Headless Chromium whose camera plays ``clip``; close it after."""
    return p.chromium.launch(executable_path=CHROMIUM, args=camera_args(clip, allow_camera))


def sender_stats(page: Page) -> dict[str, Any]:
    """:data:`SENDER_FIELDS` summed over the page's peers (a page loaded with
    :data:`RECORD_PEERS`), and ``packetsLost`` as the server's receiver reports say."""
    stats: dict[str, Any] = page.evaluate(_SENDER_STATS, list(SENDER_FIELDS))
    return stats
