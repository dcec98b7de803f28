"""Draw replay results onto the video: boxes of the latest processed frame, recognized tracks
highlighted, a banner while something is recognized."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2

from clients.clips import write_video
from clients.sources import bgr_frames
from detectors.core import ImageBGR

RECOGNIZED = (0, 204, 255)  # BGR gold
TENTATIVE = (255, 255, 255)


def annotated_frames(
    frames: Iterator[tuple[float, ImageBGR]], messages: Sequence[dict[str, Any]]
) -> Iterator[ImageBGR]:
    """``frames`` with what the service said up to each frame's time drawn on them."""
    results = sorted((m for m in messages if m.get("type") == "frame"), key=lambda m: m["t"])
    events = sorted(
        (m for m in messages if m.get("event") in ("recognized", "lost")), key=lambda m: m["t"]
    )
    shown: dict[str, Any] | None = None
    live: set[int] = set()
    next_result = next_event = 0
    for t, image in frames:
        while next_result < len(results) and results[next_result]["t"] <= t:
            shown, next_result = results[next_result], next_result + 1
        while next_event < len(events) and events[next_event]["t"] <= t:
            event = events[next_event]
            (live.add if event["event"] == "recognized" else live.discard)(event["track"])
            next_event += 1
        canvas = image.copy()
        for det in shown["detections"] if shown else ():
            color = RECOGNIZED if det["track"] in live else TENTATIVE
            x0, y0, x1, y1 = (round(v) for v in det["box"])
            cv2.rectangle(canvas, (x0, y0), (x1, y1), color, 2)
            label = f"{det['label']} {det['score']:.2f} #{det['track']}"
            cv2.putText(
                canvas,
                label,
                (x0, max(12, y0 - 5)),
                cv2.FONT_HERSHEY_SIMPLEX,
                0.5,
                color,
                1,
                cv2.LINE_AA,
            )
        if live:
            cv2.putText(
                canvas,
                "RECOGNIZED",
                (10, 30),
                cv2.FONT_HERSHEY_SIMPLEX,
                1.0,
                RECOGNIZED,
                2,
                cv2.LINE_AA,
            )
        cv2.putText(
            canvas,
            f"t={t:.2f}s",
            (10, canvas.shape[0] - 10),
            cv2.FONT_HERSHEY_SIMPLEX,
            0.5,
            TENTATIVE,
            1,
            cv2.LINE_AA,
        )
        yield canvas


def annotate(
    source: str,
    messages: Sequence[dict[str, Any]],
    out: Path,
    fps: float,
    skipped: list[Path],
) -> None:
    """Re-read ``source`` (no frames are held in memory) and write the annotated video.

    ``skipped``: the images of a folder the replay found unreadable, not read (nor warned
    about) again.
    """
    write_video(annotated_frames(bgr_frames(source, fps, skipped), messages), out, fps)
