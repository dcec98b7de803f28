"""Frame sources shared by the replay tool and the websocket client: files, folders, webcams."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import av
import cv2
import numpy as np

from detectors.core import ImageBGR

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}

T = TypeVar("T")


class SourceError(RuntimeError):
    """The input cannot be read as video or images."""


def opened(frames: Iterator[T]) -> Iterator[T]:
    """``frames`` with its source opened and first frame read now: an unreadable source raises
    :class:`SourceError` here, before the caller connects or creates output files."""
    first = next(frames, None)
    return iter(()) if first is None else itertools.chain([first], frames)


def video_frames(path: str) -> Iterator[tuple[float, av.VideoFrame]]:
    """Decoded frames of ``path`` with their presentation time (seconds, first frame = 0).

    Raises:
        SourceError: the file is missing or holds no decodable video.
    """
    try:
        container = av.open(path)
    except (av.FFmpegError, OSError) as exc:
        raise SourceError(f"cannot open {path}: {exc}") from exc
    with container:
        if not container.streams.video:
            raise SourceError(f"{path} has no video stream")
        first: float | None = None
        try:
            for index, frame in enumerate(container.decode(video=0)):
                t = float(frame.time) if frame.time is not None else index / 30.0
                first = t if first is None else first
                yield t - first, frame
        except av.FFmpegError as exc:
            raise SourceError(f"{path}: video data is corrupt: {exc}") from exc


def folder_frames(
    path: Path, fps: float, skipped: list[Path] | None = None
) -> Iterator[tuple[float, ImageBGR]]:
    """The images of a folder in name order, as frames ``1/fps`` apart.

    An unreadable image is skipped with a warning (and appended to ``skipped``);
    its time stays a gap, as for a dropped frame. One already in ``skipped`` (found by an
    earlier pass over the folder) is skipped without reading it or warning again.

    Raises:
        SourceError: ``fps`` is not > 0, or the folder holds no readable image.
    """
    if not fps > 0:
        raise SourceError(f"frame rate must be > 0, got {fps}")
    files = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise SourceError(f"{path} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    known_unreadable = set(skipped or ())
    readable = 0
    for index, file in enumerate(files):
        if file in known_unreadable:
            continue
        image = cv2.imread(str(file), cv2.IMREAD_COLOR)
        if image is None:
            log.warning("skipping unreadable image %s", file)
            if skipped is not None:
                skipped.append(file)
            continue
        readable += 1
        yield index / fps, np.asarray(image, np.uint8)
    if not readable:
        raise SourceError(f"cannot read any of the {len(files)} images in {path}")


def camera_device(source: str) -> int | str | None:
    """The camera ``source`` names, as OpenCV opens it: an index (``0``) or a V4L2 device
    path (``/dev/video0``; a ``/dev/v4l/by-id/...`` or ``by-path`` link resolved to its
    ``/dev/videoN``, or kept as given if it links to none); ``None`` for a file or folder."""
    if source.isdigit():
        return int(source)
    if source.startswith("/dev/v4l/"):
        target = os.path.realpath(source)
        return target if target.startswith("/dev/video") else source
    return source if source.startswith("/dev/video") else None


def webcam_frames(device: int | str) -> Iterator[tuple[float, ImageBGR]]:
    """Frames of a local camera (see :func:`camera_device`), timed by the capture clock."""
    capture = cv2.VideoCapture(device)
    if not capture.isOpened():
        raise SourceError(f"cannot open webcam {device}")
    try:
        first: float | None = None
        while True:
            ok, image = capture.read()
            if not ok:
                return
            t = capture.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
            first = t if first is None else first
            yield t - first, np.asarray(image, np.uint8)
    finally:
        capture.release()


def bgr_frames(
    source: str, fps: float = 15.0, skipped: list[Path] | None = None
) -> Iterator[tuple[float, ImageBGR]]:
    """Any source as ``(t, BGR image)``: a webcam, a folder of images or a video file
    (``fps`` and ``skipped``: see :func:`folder_frames`)."""
    device = camera_device(source)
    if device is not None:
        return webcam_frames(device)
    path = Path(source)
    if path.is_dir():
        return folder_frames(path, fps, skipped)
    if not path.exists():
        raise SourceError(f"no such file: {source}")
    return (
        (t, np.asarray(frame.to_ndarray(format="bgr24"), np.uint8))
        for t, frame in video_frames(source)
    )


def frame_count(source: str) -> int | None:
    """Number of frames in ``source`` if its container or folder says, else ``None``."""
    path = Path(source)
    if path.is_dir():
        return sum(1 for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if path.is_file():
        try:
            with av.open(source) as container:
                count = container.streams.video[0].frames if container.streams.video else 0
        except (av.FFmpegError, OSError):
            return None
        return int(count) or None
    return None


def source_rate(source: str, default: float) -> float:
    """Average frame rate of a video file; ``default`` for folders, webcams and unknowns."""
    if Path(source).is_file():
        try:
            with av.open(source) as container:
                rate = container.streams.video[0].average_rate if container.streams.video else None
        except (av.FFmpegError, OSError):
            return default
        if rate:
            return float(rate)
    return default
