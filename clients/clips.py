"""Writing frames to video files: Y4M for Chromium's fake camera, MP4/WebM/etc. via PyAV."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import av
import cv2
import numpy as np

from detectors.core import ImageBGR


class VideoPathError(ValueError):
    """:func:`write_video` cannot write this path (container unknown, or without the codec)."""


def write_y4m(frames: Sequence[ImageBGR], path: Path, fps: int) -> None:
    """Raw 4:2:0 video, the format ``--use-file-for-fake-video-capture`` plays (in a loop)."""
    height, width = frames[0].shape[:2]
    with path.open("wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for frame in frames:
            out.write(b"FRAME\n")
            out.write(cv2.cvtColor(frame, cv2.COLOR_BGR2YUV_I420).tobytes())


def write_video(
    frames: Iterable[ImageBGR], path: Path | BinaryIO, fps: float, codec: str = "libx264"
) -> None:
    """Encode ``frames`` (streamed, all of one size) into any container PyAV/FFmpeg writes,
    chosen by ``path``'s suffix (a file object's ``name``)."""
    frames = iter(frames)
    first = next(frames, None)
    if first is None:
        raise ValueError("no frames to write")
    with av.open(str(path) if isinstance(path, Path) else path, "w") as container:
        stream = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        if not isinstance(stream, av.VideoStream):
            raise ValueError(f"{codec} is not a video codec")
        stream.height, stream.width = first.shape[:2]
        stream.pix_fmt = "yuv420p"
        for frame in itertools.chain([first], frames):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="bgr24")))
        container.mux(stream.encode(None))


def check_video_path(path: Path, codec: str = "libx264") -> None:
    """Raise :class:`VideoPathError` now if :func:`write_video` could not write ``path``: a
    one-frame dry run in memory, for callers that write the video only after a long run.

    Raises:
        VideoPathError: FFmpeg knows no container for the suffix, or not with ``codec``.
    """
    probe = io.BytesIO()
    probe.name = path.name  # FFmpeg picks the container by this name
    try:
        write_video([np.zeros((16, 16, 3), np.uint8)], probe, 1.0, codec)
    except (ValueError, av.FFmpegError) as exc:
        raise VideoPathError(f"{path}: cannot write this kind of video ({exc})") from None
