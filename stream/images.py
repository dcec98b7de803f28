"""Turning received bytes and video frames into BGR images, with limits checked before decoding."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

import av
import cv2
import numpy as np

from detectors.core import MAX_IMAGE_PIXELS, ImageBGR
from stream.session import FrameError

MAX_FRAME_BYTES = 4 * 1024 * 1024
"""Largest encoded image accepted (websocket message size is capped to this too)."""
MAX_PIXELS = MAX_IMAGE_PIXELS
"""Largest decoded image accepted, checked from the header so a pixel bomb is never decoded."""

_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_JPEG_SOS, _JPEG_EOI = 0xDA, 0xD9
_JPEG_STANDALONE = {0x01, *range(0xD0, 0xD8)}
"""Markers without a length field: TEM and the restart markers RST0-7."""
_JPEG_MARKER = re.compile(rb"\xff+([^\x00\xff])", re.DOTALL)
"""A marker, after any 0xFF fill bytes."""
_JPEG_SCAN_END = re.compile(rb"\xff+[^\x00\xd0-\xd7\xff]", re.DOTALL)
"""The marker that ends entropy-coded data: in it 0xFF is followed only by a stuffed 0x00
or a restart marker, so no byte pattern there looks like EOI."""


def _jpeg_markers(data: bytes) -> Iterator[tuple[int, int]]:
    """``(marker, offset just past it)`` for each marker of a JPEG in order, up to EOI.

    Segments are skipped by their length and scans to the marker that ends them, so bytes
    inside metadata (an EXIF thumbnail's own EOI) or after the image are never taken for a
    marker. Stops early where the data ends or stops being JPEG.
    """
    pos = 2
    while (found := _JPEG_MARKER.match(data, pos)) is not None:
        marker, pos = found[1][0], found.end()
        yield marker, pos
        if marker == _JPEG_EOI:
            return
        if marker in _JPEG_STANDALONE:
            continue
        pos += int.from_bytes(data[pos : pos + 2], "big")
        if marker == _JPEG_SOS:
            scan_end = _JPEG_SCAN_END.search(data, pos)
            if scan_end is None:
                return
            pos = scan_end.start()


def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` read from a JPEG or PNG header, without decoding pixels.

    Raises:
        FrameError: ``bad_image`` when the bytes are neither, or the header is cut short.
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data.startswith(b"\xff\xd8"):
        for marker, pos in _jpeg_markers(data):
            if marker in _JPEG_SOF and pos + 7 <= len(data):
                height, width = struct.unpack(">HH", data[pos + 3 : pos + 7])
                return int(width), int(height)
        raise FrameError("bad_image", "JPEG without a readable frame header")
    raise FrameError("bad_image", "not a JPEG or PNG image")


def check_image(data: bytes) -> tuple[int, int]:
    """Refuse oversized messages and images before any decoding; ``(width, height)``.

    Raises:
        FrameError: ``frame_too_large`` or ``too_many_pixels`` or ``bad_image``.
    """
    if len(data) > MAX_FRAME_BYTES:
        raise FrameError(
            "frame_too_large", f"image is {len(data)} bytes; the limit is {MAX_FRAME_BYTES}"
        )
    size = image_size(data)
    check_pixels(*size)
    return size


def check_pixels(width: int, height: int, limit: int = MAX_PIXELS) -> None:
    """Refuse an image by its size alone, before its pixels exist.

    Raises:
        FrameError: ``bad_image`` when a side is 0 (a malformed header, not a large image);
            ``too_many_pixels`` when it has over ``limit`` pixels.
    """
    if width <= 0 or height <= 0:
        raise FrameError("bad_image", f"image is {width}x{height}: it has no pixels")
    if width * height > limit:
        raise FrameError(
            "too_many_pixels", f"image is {width}x{height}; the limit is {limit} pixels"
        )


def decode_image(data: bytes, flags: int = cv2.IMREAD_COLOR) -> ImageBGR:
    """Decode checked JPEG/PNG bytes to BGR (``flags``: OpenCV's, e.g. a reduced size).

    Raises:
        FrameError: ``bad_image`` when OpenCV cannot decode it (corrupt or truncated).
    """
    if (
        data.startswith(b"\xff\xd8")
        # Per frame: a JPEG that ends in EOI (all but a few) is not walked (0.35 ms at 640x480).
        and not data.rstrip(b"\x00").endswith(b"\xff\xd9")
        and all(marker != _JPEG_EOI for marker, _ in _jpeg_markers(data))
    ):
        # libjpeg "decodes" a cut-off JPEG into a grey-padded image; refuse it instead.
        # Bytes after EOI are fine: cameras and browsers append metadata there.
        raise FrameError("bad_image", "JPEG is truncated (no end-of-image marker)")
    image = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
    if image is None:
        raise FrameError("bad_image", "image data is corrupt or truncated")
    return np.asarray(image, np.uint8)


@dataclass(frozen=True, slots=True)
class JpegImage:
    """Checked JPEG bytes and their size as received; call it (in the executor) to decode."""

    data: bytes
    width: int
    height: int

    def __call__(self) -> ImageBGR:
        return decode_image(self.data)

    def half(self) -> ImageBGR:
        """Decoded at half the size by libjpeg's DCT scaling, in about 2/3 of a full decode
        (and the letterbox then shrinks half as much)."""
        return decode_image(self.data, cv2.IMREAD_REDUCED_COLOR_2)


def image_decoder(data: bytes) -> Callable[[], ImageBGR]:
    """Check ``data`` now (cheap) and return the deferred decode for the executor: a
    :class:`JpegImage` for a JPEG, which a session may decode at half size."""
    width, height = check_image(data)
    if data.startswith(b"\xff\xd8"):
        return JpegImage(data, width, height)
    return partial(decode_image, data)


def video_frame_decoder(frame: av.VideoFrame, max_pixels: int | None = None) -> VideoImage:
    """Deferred colour conversion of a decoded video frame (WebRTC track or file).

    With ``max_pixels`` (frames from the network) a larger frame raises ``too_many_pixels``
    instead of being converted: a WebRTC peer may send up to 16383x16383 (VP8), which
    aiortc has already decoded, but whose BGR copy (3 bytes a pixel) is never made.
    """
    return VideoImage(frame, max_pixels)


BT601_LIMITED_TO_BGR = np.array(
    [
        [1.164383, 2.017232, 0.0, -276.836],
        [1.164383, -0.391762, -0.812968, 135.576],
        [1.164383, 0.0, 1.596027, -222.921],
    ],
    np.float32,
)
"""``[B, G, R] = M @ [Y, U, V, 1]`` for BT.601 limited-range YUV: what swscale applies to
the frames WebRTC decoders give (no colour space signalled, MPEG range)."""
# FFmpeg's AVColorSpace values: unspecified (swscale's default is BT.601), BT470BG, SMPTE170M.
_BT601_SPACES = {2, 5, 6}
_FULL_RANGE = 2  # FFmpeg's AVCOL_RANGE_JPEG


@dataclass(frozen=True, slots=True)
class VideoImage:
    """A decoded video frame and its size; call it (in the executor) to convert to BGR."""

    frame: av.VideoFrame
    max_pixels: int | None = None

    @property
    def width(self) -> int:
        return self.frame.width

    @property
    def height(self) -> int:
        return self.frame.height

    def __call__(self) -> ImageBGR:
        self._check()
        return np.asarray(self.frame.to_ndarray(format="bgr24"), np.uint8)

    def half(self) -> ImageBGR:
        """Half the size, straight from the 4:2:0 planes: luma averaged 2x2, chroma as it is
        (already half size), one affine colour transform. swscale also gives each 2x2 block
        one chroma sample, so this is the full-size conversion averaged 2x2 up to rounding
        and clipping order, without the full-size BGR copy (docs/benchmarks.md)."""
        self._check()
        frame = self.frame
        width, height = frame.width // 2, frame.height // 2
        if not self._planar_bt601():
            return np.asarray(cv2.resize(self(), (width, height), interpolation=cv2.INTER_AREA))
        y, u, v = (
            np.frombuffer(memoryview(p), np.uint8).reshape(-1, p.line_size)[:rows, :cols]
            for p, rows, cols in zip(
                frame.planes, (2 * height, height, height), (2 * width, width, width), strict=True
            )
        )
        luma = cv2.resize(y, (width, height), interpolation=cv2.INTER_AREA)
        return np.asarray(cv2.transform(cv2.merge((luma, u, v)), BT601_LIMITED_TO_BGR))

    def _check(self) -> None:
        if self.max_pixels is not None:
            check_pixels(self.frame.width, self.frame.height, self.max_pixels)

    def _planar_bt601(self) -> bool:
        """Whether the frame is 4:2:0 planar, even-sized, BT.601 limited range."""
        frame = self.frame
        return (
            frame.format.name == "yuv420p"
            and frame.width % 2 == 0
            and frame.height % 2 == 0
            and frame.color_range != _FULL_RANGE
            and frame.colorspace in _BT601_SPACES
        )
