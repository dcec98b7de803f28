"""Bench section ``bitrate``: what the detector loses, and the server saves, at each VP8 bitrate.

    python run.py bench --only bitrate [--bitrate-clips 40]

Generated hand-held clips (``make_clip``: 30 frames at 15 fps; for every two
with 福, one of look-alike posters only) are VP8-encoded at each rate as a
camera would send them, decoded, and run through the detector the high
profile uses (``l`` INT8) exactly as the server runs a frame. Per rate: the
bitrate coded, RTP packets a frame (aiortc's packetizer: each costs the
server's event loop its SRTP, jitter-buffer and bitrate-estimation work),
decode time, per-frame recall of the 福 and detections matching none
(``detectors.metrics.match``: IoU >= 0.5, each 福 matched once, at the
card's threshold), against the same frames uncoded. ``serve
--max-video-kbps`` (500 by default) is chosen from this table.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from aiortc.codecs.vpx import Vp8Encoder

from detectors.core import ImageBGR
from detectors.metrics import match
from detectors.onnx_detector import OnnxDetector
from detectors.synth.scenes import Clip, make_clip
from evals.video_codec import decode_video, encode_video

RATES_KBPS = (1500, 1000, 700, 500, 350)
FPS = 15.0
FRAMES = 30
NEGATIVE_SEED = 10_000
"""Look-alike clips' seeds start here, apart from the 福 clips' (0 up)."""


@dataclass(frozen=True, slots=True)
class BitrateRow:
    """One rate (``None``: the frames uncoded) over every clip."""

    asked_kbps: int | None
    coded_kbps: float
    bytes_per_frame: float
    packets_per_frame: float
    decode_ms: float
    recall: float  # of the 福 in the frames, each frame on its own
    found: int
    fu: int
    false_detections: int  # detections matching no 福, over every frame
    frames: int


def coded(clip: Clip, kbps: int) -> tuple[list[ImageBGR], int, int, float]:
    """``clip``'s frames through VP8 at ``kbps``: frames, bytes, RTP packets, ms per decode."""
    packets = encode_video(clip.frames, "libvpx", FPS, kbps * 1000)
    packetizer = Vp8Encoder()  # only its RTP packetizer: the clip is encoded already
    rtp = sum(len(packetizer.pack(p)[0]) for p in packets)
    frames, ms = decode_video("libvpx", packets)
    images = [cast(ImageBGR, f.to_ndarray(format="bgr24")) for f in frames]
    return images, sum(p.size for p in packets), rtp, ms


def bitrate_rows(
    detector: OnnxDetector,
    fu_clips: int,
    negative_clips: int,
    rates: Sequence[int] = RATES_KBPS,
) -> list[BitrateRow]:
    """The uncoded frames' row, then one per rate in ``rates`` (kbit/s)."""
    clips = [make_clip(seed, FRAMES, FPS) for seed in range(fu_clips)]
    clips += [
        make_clip(NEGATIVE_SEED + seed, FRAMES, FPS, content="negative")
        for seed in range(negative_clips)
    ]
    rows = []
    for rate in (None, *rates):
        found = fu = false = frames = size = rtp = 0
        decode_ms: list[float] = []
        for clip in clips:
            images = clip.frames
            if rate is not None:
                images, clip_bytes, clip_rtp, ms = coded(clip, rate)
                size, rtp = size + clip_bytes, rtp + clip_rtp
                decode_ms.append(ms)
            for image, truth in zip(images, clip.boxes, strict=True):
                scored = match(detector.detect(image).above(detector.threshold), truth)
                right = sum(tp for _, tp in scored)
                found, fu = found + right, fu + len(truth)
                false += len(scored) - right
                frames += 1
        rows.append(
            BitrateRow(
                asked_kbps=rate,
                coded_kbps=size * 8 * FPS / frames / 1000,
                bytes_per_frame=size / frames,
                packets_per_frame=rtp / frames,
                decode_ms=statistics.median(decode_ms) if decode_ms else 0.0,
                recall=found / max(1, fu),
                found=found,
                fu=fu,
                false_detections=false,
                frames=frames,
            )
        )
    return rows


def format_bitrate(rows: Sequence[BitrateRow]) -> str:
    lines = [
        "| asked kbit/s | coded kbit/s | bytes/frame | RTP packets/frame | VP8 decode ms "
        "| recall of 福, per frame | detections on no 福 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.asked_kbps is None:
            lines.append(
                f"| uncoded | - | - | - | - | {r.recall:.4f} ({r.found} of {r.fu}) "
                f"| {r.false_detections} |"
            )
            continue
        lines.append(
            f"| {r.asked_kbps} | {r.coded_kbps:.0f} | {r.bytes_per_frame:.0f} "
            f"| {r.packets_per_frame:.1f} | {r.decode_ms:.2f} "
            f"| {r.recall:.4f} ({r.found} of {r.fu}) | {r.false_detections} |"
        )
    return "\n".join(lines)
