"""A clip encoded and decoded as a camera stream: for the benchmarks and the load generator."""

from __future__ import annotations

import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, cast

import av
from av.packet import Packet
from av.video.codeccontext import VideoCodecContext

from detectors.core import ImageBGR

CAMERA_BITRATE = 1_500_000
"""What a browser sends of a 640x480 camera on a fast network, bits a second (aiortc's ceiling)."""


def encode_video(
    frames: Sequence[ImageBGR], codec: str, fps: float, bitrate: int = CAMERA_BITRATE
) -> list[Packet[Any]]:
    """Encode ``frames`` once as a camera stream would be (no B-frames, at ``bitrate``)."""
    h, w = frames[0].shape[:2]
    ctx = cast(VideoCodecContext, av.CodecContext.create(codec, "w"))
    ctx.width, ctx.height, ctx.pix_fmt = w, h, "yuv420p"
    ctx.time_base = Fraction(1, round(fps))
    ctx.framerate = Fraction(round(fps))
    ctx.bit_rate = bitrate
    ctx.options = (
        {"preset": "veryfast", "tune": "zerolatency"}
        if codec == "libx264"
        else {"deadline": "realtime"}
    )
    packets: list[Packet[Any]] = []
    for i, image in enumerate(frames):
        frame = av.VideoFrame.from_ndarray(image, format="bgr24").reformat(format="yuv420p")
        frame.pts = i
        packets.extend(ctx.encode(frame))
    packets.extend(ctx.encode(None))
    return packets


def decode_video(codec: str, packets: Sequence[Packet[Any]]) -> tuple[list[av.VideoFrame], float]:
    """Decode every packet with a fresh decoder: frames, and ms per frame."""
    ctx = cast(VideoCodecContext, av.CodecContext.create(codec, "r"))
    started = time.perf_counter()
    frames = [f for p in packets for f in ctx.decode(p)]
    frames.extend(ctx.decode(None))
    return frames, (time.perf_counter() - started) * 1000 / max(1, len(frames))
