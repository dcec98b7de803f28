"""The websocket API and the replay tool on the bundled model, with generated clips."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from clients.clips import write_video
from clients.sources import bgr_frames
from clients.ws_client import ScanClient, encode_jpeg
from detectors.synth.scenes import make_clip

ROOT = Path(__file__).resolve().parents[2]


async def test_websocket_client_sends_jpeg_frames_and_gets_frame_and_event_messages(live_server):
    clip = make_clip(11, n_frames=30, fps=15, content="fu")
    url = live_server.replace("http", "ws") + "/ws"
    seen: list[dict] = []
    async with ScanClient.connect(url) as client:
        assert client.ready["tier"]
        for index, frame in enumerate(clip.frames):  # media time: the clip's, not arrival's
            await client.send_frame(encode_jpeg(frame), t=index / 15)
            async with asyncio.timeout(10):
                async for message in client.results():
                    seen.append(message)
                    if message["type"] == "frame":
                        break
    assert sum(m["type"] == "frame" for m in seen) == len(clip.frames)
    assert [m["label"] for m in seen if m.get("event") == "recognized"] == ["fu"]


def test_replay_scores_against_labels_and_writes_report_and_annotated_video(tmp_path):
    fps, clip = 15, make_clip(12, n_frames=45, fps=15, content="mixed")
    video = tmp_path / "mixed.mp4"
    write_video(clip.frames, video, fps=fps)
    visible = [i for i, boxes in enumerate(clip.boxes) if len(boxes)]
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps({"mixed.mp4": {"visible": [[visible[0] / fps, (visible[-1] + 1) / fps]]}})
    )
    out, report, annotated = tmp_path / "out.jsonl", tmp_path / "r.html", tmp_path / "a.mp4"
    done = subprocess.run(
        [
            sys.executable,
            "run.py",
            "replay",
            str(video),
            "--fast",
            "--jsonl",
            str(out),
            "--labels",
            str(labels),
            "--report",
            str(report),
            "--annotate",
            str(annotated),
        ],
        cwd=ROOT,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    messages = [json.loads(line) for line in out.read_text().splitlines()]
    assert [m["frame"] for m in messages if m["type"] == "frame"] == list(range(45))
    assert any(m.get("event") == "recognized" and m["label"] == "fu" for m in messages)
    assert "precision 100.0%, recall 100.0%" in done.stderr
    assert "<svg" in report.read_text() and "mixed.mp4" in report.read_text()
    assert len(list(bgr_frames(str(annotated)))) == 45


def test_replay_of_an_unreadable_file_fails_with_a_clear_message(tmp_path):
    bogus = tmp_path / "not-a-video.mp4"
    bogus.write_bytes(b"this is not a video")
    done = subprocess.run(
        [sys.executable, "run.py", "replay", str(bogus), "--fast"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot open" in done.stderr or "corrupt" in done.stderr
