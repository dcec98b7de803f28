"""``run.py eval-network``: recall and time to decision of the demo page in a real Chromium,
through a TURN relay on loopback, on the clean path and through an impaired one
(:mod:`evals.impair`: loss, delay with jitter, a bandwidth cap)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from clients.clips import write_y4m
from detectors.synth.scenes import make_clip
from evals.impair import Impairment, start_relay
from evals.turn import local_turn_server
from stream.cli_types import positive_int, positive_number
from stream.local_server import local_server

if TYPE_CHECKING:
    from playwright.sync_api import Page, Playwright, Route

SECRET = "eval-network-secret"
CLIP_FPS = 15
CLIP_FRAMES = 45


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clips", type=positive_int, default=10, help="fu clips (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="first clip's and relay's seed")
    parser.add_argument(
        "--limit", type=positive_number, default=25.0, help="seconds a clip may take (25)"
    )
    parser.add_argument("--loss", type=float, default=0.05, help="packet loss (default 0.05)")
    parser.add_argument("--delay-ms", type=float, default=100.0, help="one-way delay (100)")
    parser.add_argument("--jitter-ms", type=float, default=30.0, help="delay jitter, +- (30)")
    parser.add_argument("--rate-kbps", type=float, default=300.0, help="bandwidth cap (300)")


def run(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright  # only for this command

    impairment = Impairment(args.loss, args.delay_ms / 1000, args.jitter_ms / 1000, args.rate_kbps)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    with (
        tempfile.TemporaryDirectory() as folder,
        local_turn_server(Path(folder), SECRET) as turn_port,
        local_server(
            "--host",
            "127.0.0.1",
            "--targets",
            str(Path(folder) / "targets"),
            "--ice-server",
            f"turn:127.0.0.1:{turn_port}",
            "--turn-secret",
            SECRET,
            quiet=True,
        ) as server,
        sync_playwright() as p,
    ):
        results: dict[str, list[tuple[float, float] | None]] = {"clean": [], "impaired": []}
        relayed = [0, 0]  # packets the impaired relay passed, dropped
        for i in range(args.clips):
            seed = args.seed + i
            clip = Path(folder) / f"fu-{seed}.y4m"
            write_y4m(make_clip(seed, CLIP_FRAMES, CLIP_FPS, content="fu").frames, clip, CLIP_FPS)
            for path in results:
                if path == "clean":
                    results[path].append(page_decision(p, clip, server.url, args.limit))
                else:
                    relay, port = asyncio.run_coroutine_threadsafe(
                        start_relay(("127.0.0.1", turn_port), impairment, seed), loop
                    ).result()
                    via = (f":{turn_port}", f":{port}")
                    results[path].append(page_decision(p, clip, server.url, args.limit, via))
                    loop.call_soon_threadsafe(relay.close)
                    relayed[0] += relay.sent
                    relayed[1] += relay.dropped
                print(path, seed, results[path][-1], flush=True)
    loop.call_soon_threadsafe(loop.stop)
    summary = {path: summarize(runs) for path, runs in results.items()}
    print(
        json.dumps(
            {
                "impairment": asdict(impairment),
                "clips": args.clips,
                "relayed_packets": relayed[0],
                "dropped_packets": relayed[1],
                **summary,
            }
        )
    )
    return 0


def page_decision(
    p: Playwright,
    clip: Path,
    url: str,
    limit_s: float,
    via: tuple[str, str] | None = None,
) -> tuple[float, float] | None:
    """:func:`decision` of the page at ``url`` (relay-only) in a Chromium whose camera plays
    ``clip``; ``via``: (old, new) port text of the TURN URL, to put the relay in the path."""

    def through_relay(route: Route, _: object) -> None:
        assert via is not None
        route.fulfill(body=route.fetch().text().replace(*via), content_type="application/json")

    browser = p.chromium.launch(
        executable_path=shutil.which("chromium") or "/usr/bin/chromium",
        args=[
            "--no-sandbox",
            "--use-fake-ui-for-media-stream",
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-video-capture={clip}",
        ],
    )
    try:
        page = browser.new_page()
        if via is not None:
            page.route("**/ice-servers*", through_relay)
        started = time.monotonic()
        page.goto(url + "/?autostart&relay=1")
        return decision(page, started, limit_s)
    finally:
        browser.close()


def decision(page: Page, started: float, limit_s: float) -> tuple[float, float] | None:
    """The recognized event's media time and the wall time since the page loaded, if any."""
    deadline = started + limit_s
    while time.monotonic() < deadline:
        events = page.evaluate(
            "window.scanResults.filter(m => m.type === 'event' && m.event === 'recognized')"
        )
        if events:
            if page.text_content("#stat-transport") != "WebRTC":
                raise RuntimeError("the page fell back to the websocket: no relay in the path")
            return float(events[0]["t"]), time.monotonic() - started
        page.wait_for_timeout(100)
    return None


def summarize(runs: list[tuple[float, float] | None]) -> dict[str, float | None]:
    found = [run for run in runs if run is not None]
    return {
        "recall": len(found) / len(runs),
        "median_media_s": statistics.median(media for media, _ in found) if found else None,
        "median_wall_s": statistics.median(wall for _, wall in found) if found else None,
    }
