"""``run.py eval-network``: the demo page in a real Chromium through a TURN relay on loopback,
on the clean path and through an impaired one (:mod:`evals.impair`: loss, delay with
jitter, a bandwidth cap), clip by clip side by side: event recall and time to decision on
福 clips, false recognitions on look-alike clips, and what loss costs the page's video
(NACK, PLI and FIR requests, retransmissions, keyframes, freezes)."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clients.clips import write_y4m
from detectors.synth.scenes import Content, make_clip
from evals.browser import RECORD_PEERS, launch, sender_stats
from evals.impair import Impairment, start_relay
from evals.tables import fmt, table
from evals.turn import local_turn_server
from stream.cli_types import positive_int, positive_number
from stream.local_server import local_server

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

SECRET = "eval-network-secret"
CLIP_FPS = 15
CLIP_FRAMES = 45
PATHS = ("clean", "impaired")
POLL_MS = 100
CONNECTED = "window.peers.some((pc) => pc.connectionState === 'connected')"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clips", type=positive_int, default=10, help="fu clips (default 10)")
    parser.add_argument(
        "--negatives", type=int, default=5, help="look-alike clips without fu (default 5)"
    )
    parser.add_argument("--seed", type=int, default=0, help="first clip's and relay's seed")
    parser.add_argument(
        "--limit", type=positive_number, default=25.0, help="seconds a clip may take (25)"
    )
    parser.add_argument(
        "--watch",
        type=positive_number,
        default=10.0,
        help="seconds of video a look-alike clip is watched for a false recognition (10)",
    )
    parser.add_argument("--loss", type=float, default=0.05, help="packet loss (default 0.05)")
    parser.add_argument("--delay-ms", type=float, default=100.0, help="one-way delay (100)")
    parser.add_argument("--jitter-ms", type=float, default=30.0, help="delay jitter, +- (30)")
    parser.add_argument("--rate-kbps", type=float, default=300.0, help="bandwidth cap (300)")


@dataclass(frozen=True, slots=True)
class Run:
    """One clip on one path, as the page saw it."""

    path: str
    content: str  # "fu" or "negative"
    seed: int
    decision_t: float | None  # media time of the first recognized event
    decision_wall_s: float | None  # page load to that event on the page
    connected_s: float | None  # page load to the page's peer connection connected
    frames: int  # frame results the page received
    longest_gap_s: float  # media time between two consecutive frame results, at most
    watched_s: float  # wall seconds from the first frame result to the end of the run
    sender: dict[str, float]  # evals.browser.sender_stats at the end


def clips(args: argparse.Namespace) -> Iterator[tuple[Content, int]]:
    """(content, seed) of each clip: the 福 clips, then the look-alike ones."""
    for i in range(args.clips):
        yield "fu", args.seed + i
    for i in range(args.negatives):
        yield "negative", args.seed + args.clips + i


def run(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright  # only for this command

    impairment = Impairment(args.loss, args.delay_ms / 1000, args.jitter_ms / 1000, args.rate_kbps)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    runs: list[Run] = []
    relayed = [0, 0]  # packets the impaired relay passed, dropped
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
        for content, seed in clips(args):
            clip = Path(folder) / f"{content}-{seed}.y4m"
            frames = make_clip(seed, CLIP_FRAMES, CLIP_FPS, content=content).frames
            write_y4m(frames, clip, CLIP_FPS)
            browser = launch(p, clip)
            try:
                for path in PATHS:
                    if path == "clean":
                        page = open_page(browser, server.url)
                    else:
                        relay, port = asyncio.run_coroutine_threadsafe(
                            start_relay(("127.0.0.1", turn_port), impairment, seed), loop
                        ).result()
                        page = open_page(browser, server.url, (f":{turn_port}", f":{port}"))
                    runs.append(watch(page, path, content, seed, args.limit, args.watch))
                    page.context.close()
                    if path == "impaired":
                        loop.call_soon_threadsafe(relay.close)
                        relayed[0] += relay.sent
                        relayed[1] += relay.dropped
                    print(json.dumps(asdict(runs[-1])), flush=True)
            finally:
                browser.close()
    loop.call_soon_threadsafe(loop.stop)
    summary = {path: summarize([r for r in runs if r.path == path]) for path in PATHS}
    print(report_table(summary))
    print(
        json.dumps(
            {
                "impairment": asdict(impairment),
                "relayed_packets": relayed[0],
                "dropped_packets": relayed[1],
                **summary,
            }
        )
    )
    return 0


def open_page(browser: Browser, url: str, via: tuple[str, str] | None = None) -> Page:
    """The page at ``url``, relay-only, in a context of its own; ``via``: (old, new) port
    text of the TURN URL the server gives it, to put the impairing relay in the path."""

    def through_relay(route: Route, _: object) -> None:
        assert via is not None
        route.fulfill(body=route.fetch().text().replace(*via), content_type="application/json")

    page = browser.new_context().new_page()
    page.add_init_script(RECORD_PEERS)
    if via is not None:
        page.route("**/ice-servers*", through_relay)
    page.goto(url + "/?autostart&relay=1")
    return page


def watch(page: Page, path: str, content: str, seed: int, limit_s: float, watch_s: float) -> Run:
    """Watch the page until its first recognized event (a 福 clip) or ``watch_s`` seconds
    after its first frame result (a look-alike clip), ``limit_s`` from loading at most.

    Raises:
        RuntimeError: the page fell back to the websocket (no relay in the path).
    """
    started = time.monotonic()
    first_frame: float | None = None
    connected: float | None = None
    decided: float | None = None
    while (now := time.monotonic()) - started < limit_s:
        results: list[dict[str, Any]] = page.evaluate("window.scanResults")
        if first_frame is None and any(m["type"] == "frame" for m in results):
            first_frame = now
        if connected is None and page.evaluate(CONNECTED):
            connected = now - started
        if page.text_content("#stat-transport") == "websocket":
            raise RuntimeError("the page fell back to the websocket: no relay in the path")
        if recognized(results) and decided is None:
            decided = now - started
        if content == "fu" and decided is not None:
            break
        if content == "negative" and first_frame is not None and now - first_frame >= watch_s:
            break
        page.wait_for_timeout(POLL_MS)
    events = recognized(results)
    times = [float(m["t"]) for m in results if m["type"] == "frame"]
    return Run(
        path,
        content,
        seed,
        float(events[0]["t"]) if events else None,
        decided,
        connected,
        len(times),
        longest_gap(times),
        0.0 if first_frame is None else time.monotonic() - first_frame,
        sender_stats(page),
    )


def recognized(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in results if m["type"] == "event" and m["event"] == "recognized"]


def longest_gap(times: Sequence[float]) -> float:
    """The longest media time between two consecutive frame results: a freeze, when long."""
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def summarize(runs: Sequence[Run]) -> dict[str, Any]:
    """One path's runs: recall and median decision on 福 clips, false recognitions on
    look-alike ones, and the page's video counters summed over all its runs."""
    fu = [r for r in runs if r.content == "fu"]
    found = [r for r in fu if r.decision_t is not None]
    negatives = [r for r in runs if r.content == "negative"]
    sums = {key: sum(r.sender.get(key, 0.0) for r in runs) for key in runs[0].sender}
    return {
        "fu_clips": len(fu),
        "recognized": len(found),
        "median_decision_t": _median([r.decision_t for r in found]),
        "median_decision_wall_s": _median([r.decision_wall_s for r in found]),
        "median_connected_s": _median([r.connected_s for r in runs]),
        "median_after_connected_s": _median(
            [
                r.decision_wall_s - r.connected_s
                for r in found
                if r.decision_wall_s is not None and r.connected_s is not None
            ]
        ),
        "negative_clips": len(negatives),
        "false": sum(r.decision_t is not None for r in negatives),
        "watched_s": sum(r.watched_s for r in runs),
        "frames": sum(r.frames for r in runs),
        "longest_gap_s": max(r.longest_gap_s for r in runs),
        "median_longest_gap_s": statistics.median(r.longest_gap_s for r in runs),
        **sums,
    }


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def report_table(summary: dict[str, dict[str, Any]]) -> str:
    """Per path: recognition, then what the video cost (counts per 10 s of watched video)."""

    def per_10s(s: dict[str, Any], key: str) -> str:
        return fmt(10 * s[key] / s["watched_s"] if s["watched_s"] else None)

    rows = [
        [
            path,
            f"{s['recognized']}/{s['fu_clips']}",
            fmt(s["median_decision_t"], "{:.2f}"),
            fmt(s["median_decision_wall_s"], "{:.2f}"),
            fmt(s["median_connected_s"], "{:.2f}"),
            fmt(s["median_after_connected_s"], "{:.2f}"),
            f"{s['false']}/{s['negative_clips']}",
            per_10s(s, "nackCount"),
            per_10s(s, "pliCount"),
            per_10s(s, "firCount"),
            per_10s(s, "keyFramesEncoded"),
            fmt(100 * s["retransmittedBytesSent"] / max(1.0, s["bytesSent"])),
            per_10s(s, "frames"),
            f"{s['median_longest_gap_s']:.2f} / {s['longest_gap_s']:.2f}",
        ]
        for path, s in summary.items()
    ]
    header = [
        "path",
        "fu recognized",
        "decision t s",
        "decision wall s",
        "connected s",
        "after connected s",
        "false",
        "NACK/10s",
        "PLI/10s",
        "FIR/10s",
        "keyframes/10s",
        "resent %",
        "frames/10s",
        "longest gap s (median / max)",
    ]
    return table(header, rows)
