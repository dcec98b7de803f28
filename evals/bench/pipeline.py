"""Bench section ``pipeline``: per frame, each server stage in ms and as a share of the interval.

At 640x480 and 1280x720: VP8 and H.264 decode, JPEG decode, colour conversion,
letterbox, inference, output decoding, voting, JSON.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import av
from av.packet import Packet

from clients.ws_client import encode_jpeg
from detectors.card import find_card
from detectors.network import InputBuffers, letterbox
from detectors.onnx_detector import OnnxDetector
from evals.bench.machine import FPS, FRAME_MS
from evals.tables import percentile, table
from evals.video_codec import decode_video, encode_video
from stream.images import image_decoder, video_frame_decoder
from stream.session import decode_for

SIZES = ((640, 480), (1280, 720))


@dataclass(frozen=True, slots=True)
class StageRow:
    size: str
    stage: str
    path: str  # "webrtc", "websocket" or "both"
    ms: float
    p90_ms: float

    @property
    def share(self) -> float:
        return self.ms / FRAME_MS


def frame_message(detections: list[dict[str, object]], index: int) -> dict[str, object]:
    """A result message shaped like :class:`stream.session.Session`'s ``frame`` messages."""
    return {
        "type": "frame", "frame": index, "t": round(index / FPS, 3), "width": 640, "height": 480,
        "detections": detections,
        "device": {"profile": "high", "tier": "l", "latency_ms": 4.8, "dropped": 0,
                   "camera_skipped": 0, "start_t": 1.0, "done_t": 1.0048},
        "server_ms": 12.3,
    }  # fmt: skip


STAGE_PATHS = {
    "VP8 decode": "webrtc",
    "H264 decode": "webrtc (H.264)",
    "YUV->BGR": "webrtc",
    "JPEG decode (imdecode)": "websocket",
}
"""Stages only one transport has; every other stage is on both paths."""


@dataclass(frozen=True, slots=True)
class EncodedClip:
    size: tuple[int, int]
    video: dict[str, list[Packet[Any]]]  # decoder name -> packets
    jpegs: list[bytes]


def encoded_clip(width: int, height: int, n_frames: int) -> EncodedClip:
    """A generated 福 clip, encoded once as VP8, H.264 and JPEG."""
    from detectors.synth.scenes import make_clip

    images = make_clip(7, n_frames, FPS, width, height, content="fu").frames
    video = {
        "vp8": encode_video(images, "libvpx", FPS),
        "h264": encode_video(images, "libx264", FPS),
    }
    return EncodedClip((width, height), video, [encode_jpeg(image) for image in images])


def pipeline_rows(
    sizes: Sequence[tuple[int, int]], tier: str, n_frames: int, rounds: int
) -> list[StageRow]:
    """Per-frame cost of each server stage, one frame after another as a session runs them.

    Rounds alternate between the frame sizes, so that both see the same neighbours.
    """
    from stream.focus import Focus
    from voting import make_voter

    detector = OnnxDetector(find_card(tier, "int8"), threads=1)
    model = detector.model
    buffers = InputBuffers(detector.card.input)  # reused frame after frame, as the server does
    side = max(detector.card.input.width, detector.card.input.height)
    clips = [encoded_clip(w, h, n_frames) for w, h in sizes]
    times: dict[tuple[int, int], defaultdict[str, list[float]]] = {
        clip.size: defaultdict(list) for clip in clips
    }
    for r in range(rounds):
        for clip in clips[r % len(clips) :] + clips[: r % len(clips)]:
            stages = times[clip.size]
            voter = make_voter("balanced", model.threshold, model.classes, model.vote)
            focus = Focus()  # what the vote settled, as a session tells its detector
            yuv: list[av.VideoFrame] = []
            for codec, packets in clip.video.items():
                frames, ms = decode_video(codec, packets)
                stages[f"{codec.upper()} decode"].append(ms)
                yuv = frames if codec == "vp8" else yuv
            for i, (frame, jpeg) in enumerate(zip(yuv, clip.jpegs, strict=False)):
                laps = Laps(stages)
                decode_for(video_frame_decoder(frame), side)
                laps.lap("YUV->BGR")
                # the websocket path: header check, imdecode (both at half size where the
                # session decodes so)
                image = decode_for(image_decoder(jpeg), side)[0]
                laps.lap("JPEG decode (imdecode)")
                tensor, box_map = letterbox(image, detector.card.input, buffers)
                laps.lap("letterbox")
                heatmap, boxes = detector.network.run(tensor)
                laps.lap(f"inference int8 {tier} (1 thread)")
                candidates = detector.network.detections(
                    heatmap, boxes, box_map, image.shape[1], image.shape[0],
                    detector.candidate_threshold,
                )  # fmt: skip
                laps.lap("output decode (peaks, NMS)")
                detections = detector.second_looks(image, candidates, focus.context(i / FPS))
                laps.lap("second look (zoom)")
                update = voter.update(detections, i / FPS, detector.confirmer(image))
                focus.update(update, detections)
                laps.lap("voting (balanced)")
                json.dumps(frame_message([d.to_json() for d in update.detections], i))
                laps.lap("JSON message")
    return [
        StageRow(f"{w}x{h}", stage, STAGE_PATHS.get(stage, "both"),
                 statistics.median(values), percentile(values, 90))
        for (w, h), stages in times.items()
        for stage, values in stages.items()
    ]  # fmt: skip


class Laps:
    """Times consecutive stages of one frame: each :meth:`lap` ends the stage begun by the last."""

    def __init__(self, times: defaultdict[str, list[float]]) -> None:
        self.times = times
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.times[stage].append((now - self.last) * 1000)
        self.last = now


def pipeline_totals(rows: Sequence[StageRow]) -> dict[str, dict[str, float]]:
    """Per size, the sum of the stages of the WebRTC (VP8) and of the websocket path."""
    out: dict[str, dict[str, float]] = {}
    for size in dict.fromkeys(r.size for r in rows):
        mine = [r for r in rows if r.size == size]
        out[size] = {
            path: sum(r.ms for r in mine if r.path in ("both", path))
            for path in ("webrtc", "websocket")
        }
    return out


def format_pipeline(rows: Sequence[StageRow]) -> str:
    body = [[r.size, r.stage, r.path, f"{r.ms:.3f}", f"{r.p90_ms:.3f}", f"{100 * r.share:.1f}"]
            for r in rows]  # fmt: skip
    for size, totals in pipeline_totals(rows).items():
        for path, ms in totals.items():
            body.append([size, f"total, {path} path", path, f"{ms:.3f}", "",
                         f"{100 * ms / FRAME_MS:.1f}"])  # fmt: skip
    return table(["frame", "stage", "path", "ms p50", "ms p90", f"% of {FRAME_MS:.1f} ms"], body)
