"""A self-contained HTML report of replays: per clip a timeline (score, processed and dropped
frames, events, labelled visible ranges) so a person sees at a glance why a clip passed or not."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clients.labels import ClipLabels, ReplayScore

WIDTH, HEIGHT, PAD = 900, 160, 30


@dataclass(frozen=True, slots=True)
class ClipResult:
    source: str
    messages: list[dict[str, Any]]
    labels: ClipLabels | None = None
    score: ReplayScore | None = None

    @property
    def frames(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == "frame"]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == "event" and m["event"] != "updated"]


def timeline_svg(clip: ClipResult) -> str:
    frames = clip.frames
    end = max(
        [f["t"] for f in frames]
        + [b for _, b in (clip.labels.visible if clip.labels else ())]
        + [1.0]
    )

    def x(t: float) -> float:
        return float(PAD + (WIDTH - 2 * PAD) * t / end)

    def y(score: float) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * score

    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        'xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">'
    ]
    for a, b in clip.labels.visible if clip.labels else ():
        parts.append(
            f'<rect x="{x(a):.1f}" y="{PAD}" width="{x(b) - x(a):.1f}" '
            f'height="{HEIGHT - 2 * PAD}" fill="#cfeccf"><title>labelled visible '
            f"{a:.2f}–{b:.2f} s</title></rect>"
        )
    parts.append(f'<line x1="{PAD}" y1="{y(0)}" x2="{WIDTH - PAD}" y2="{y(0)}" stroke="#888"/>')
    parts.append(
        f'<text x="{PAD}" y="{HEIGHT - 8}">0 s</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end">{end:.1f} s</text>'
    )
    points = " ".join(
        f"{x(f['t']):.1f},{y(max([d['score'] for d in f['detections']], default=0.0)):.1f}"
        for f in frames
    )
    parts.append(f'<polyline points="{points}" fill="none" stroke="#b3141c" stroke-width="1.5"/>')
    previous = -1
    for f in frames:  # processed frames as ticks under the axis, drops in between in red
        parts.append(
            f'<line x1="{x(f["t"]):.1f}" y1="{y(0) + 2}" x2="{x(f["t"]):.1f}" '
            f'y2="{y(0) + 7}" stroke="#2a6fdb"/>'
        )
        if f["frame"] - previous > 1:
            parts.append(
                f'<rect x="{x(f["t"]) - 1.5:.1f}" y="{y(0) + 8}" width="3" '
                f'height="{min(12, f["frame"] - previous - 1)}" fill="#e04040">'
                f"<title>{f['frame'] - previous - 1} dropped</title></rect>"
            )
        previous = f["frame"]
    for e in clip.events:
        color = "#e0a800" if e["event"] == "recognized" else "#666"
        parts.append(
            f'<line x1="{x(e["t"]):.1f}" y1="{PAD - 5}" x2="{x(e["t"]):.1f}" '
            f'y2="{y(0)}" stroke="{color}" stroke-width="2"/>'
            f'<text x="{x(e["t"]) + 3:.1f}" y="{PAD - 8}">{html.escape(e["event"])} '
            f"{html.escape(e['label'])} #{e['track']}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def summary_row(clip: ClipResult) -> str:
    frames = clip.frames
    latency = [f["device"]["latency_ms"] for f in frames]
    dropped = frames[-1]["device"]["dropped"] if frames else 0
    recognized = [e for e in clip.events if e["event"] == "recognized"]
    cells = [
        html.escape(Path(clip.source).name),
        str(len(frames)),
        str(dropped),
        f"{np.median(latency):.1f} / {np.percentile(latency, 95):.1f}" if latency else "–",
        ", ".join(f"{e['label']} @ {e['t']:.2f} s" for e in recognized) or "none",
    ]
    if clip.score is not None:
        verdict = "pass" if not (clip.score.false_events or clip.score.missed_ranges) else "FAIL"
        cells.append(verdict)
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def write_report(path: Path, clips: Sequence[ClipResult], total: ReplayScore | None) -> None:
    labelled = total is not None
    head = ["clip", "processed", "dropped", "latency ms p50 / p95", "recognized"]
    head += ["verdict"] if labelled else []
    body = [
        "<!doctype html><meta charset='utf-8'><title>replay report</title>",
        "<style>body{font-family:sans-serif;margin:2rem}td,th{padding:.2rem .6rem;"
        "border-bottom:1px solid #ddd;text-align:left}h2{font-size:1rem;margin-top:2rem}</style>",
        "<h1>Replay report</h1>",
    ]
    if total is not None:
        delays = (
            (f"median {np.median(total.delays):.2f} s, p95 {np.percentile(total.delays, 95):.2f} s")
            if total.delays
            else "–"
        )
        body.append(
            f"<p>Event precision <b>{total.event_precision:.1%}</b>, recall "
            f"<b>{total.event_recall:.1%}</b> ({total.true_events} right, "
            f"{total.false_events} wrong, {total.missed_ranges} missed); time to decision "
            f"{delays}.</p>"
        )
    body.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    body += [summary_row(clip) for clip in clips]
    body.append(
        "</table><p>Timelines: red line = best per-frame score, blue ticks = processed "
        "frames, red bars = dropped frames, green = labelled visible, gold = recognized, "
        "grey = lost.</p>"
    )
    for clip in clips:
        body.append(f"<h2>{html.escape(clip.source)}</h2>{timeline_svg(clip)}")
    path.write_text("\n".join(body), encoding="utf-8")
