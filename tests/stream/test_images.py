import av
import cv2
import numpy as np
import pytest
from fakes import png_header

from stream.images import (
    MAX_FRAME_BYTES,
    check_image,
    decode_image,
    image_size,
    video_frame_decoder,
)
from stream.session import FrameError


def encoded(ext: str, width: int, height: int) -> bytes:
    ok, data = cv2.imencode(ext, np.zeros((height, width, 3), np.uint8))
    assert ok
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (encoded(".jpg", 64, 48), (64, 48)),
        (encoded(".png", 33, 17), (33, 17)),
        (png_header(100_000, 100_000), (100_000, 100_000)),
    ],
)
def test_image_size_reads_the_header(data, size):
    assert image_size(data) == size


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "bad_image"),
        (b"hello world", "bad_image"),
        (b"\xff\xd8\xff", "bad_image"),
        (encoded(".jpg", 64, 48)[:4], "bad_image"),
        (png_header(100_000, 100_000), "too_many_pixels"),
        (png_header(0, 10), "bad_image"),  # no pixels: malformed, not too big
        (png_header(10, 0), "bad_image"),
        (png_header(0, 0), "bad_image"),
        (b"\xff\xd8" + bytes(MAX_FRAME_BYTES), "frame_too_large"),
    ],
)
def test_check_image_refuses_before_decoding(data, code):
    with pytest.raises(FrameError) as caught:
        check_image(data)
    assert caught.value.code == code


def noisy_jpeg() -> bytes:
    noise = np.random.default_rng(0).integers(0, 255, (48, 64, 3), np.uint8)
    ok, data = cv2.imencode(".jpg", noise)
    assert ok
    return bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        noisy_jpeg()[: len(noisy_jpeg()) // 2],  # cut in the entropy-coded data
        noisy_jpeg()[:-2],  # only the end marker missing
        noisy_jpeg()[:700] + bytes(300) + noisy_jpeg()[1000:],  # corrupt middle, valid ends
    ],
)
def test_truncated_or_corrupt_jpeg_passes_the_header_check_but_fails_to_decode(data):
    check_image(data)
    try:
        image = decode_image(data)
    except FrameError as exc:
        assert exc.code == "bad_image"
    else:  # libjpeg may recover a corrupt middle; then the image must still be whole
        assert image.shape == (48, 64, 3)


def with_comment(data: bytes, text: bytes) -> bytes:
    """``data`` (a JPEG) with a COM segment holding ``text`` right after its SOI marker."""
    return data[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + data[2:]


def progressive_jpeg() -> bytes:
    noise = np.random.default_rng(1).integers(0, 255, (48, 64, 3), np.uint8)
    ok, data = cv2.imencode(".jpg", noise, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok
    return bytes(data)


@pytest.mark.parametrize(
    "jpeg", [noisy_jpeg(), progressive_jpeg()], ids=["baseline", "progressive"]
)
@pytest.mark.parametrize(
    "trailer",
    [b"garbage" * 100, bytes(1000), b"\xff", b"\xff\xd8\xff\xe1", encoded(".jpg", 8, 8)],
    ids=["text", "zeros", "lone-ff", "marker-like", "second-jpeg"],
)
def test_bytes_after_the_end_of_image_marker_are_ignored(jpeg, trailer):
    # Cameras and browsers append metadata (or a whole second picture) after EOI.
    assert decode_image(jpeg + trailer).shape == (48, 64, 3)


@pytest.mark.parametrize(
    "data",
    [
        with_comment(noisy_jpeg(), b"thumbnail \xff\xd9 end")[:-200],  # EOI only in metadata
        with_comment(noisy_jpeg(), b"\xff\xd9")[:-2] + b"trailing",  # cut, then bytes
        progressive_jpeg()[:-2],  # every scan there, the EOI marker missing
        progressive_jpeg()[: len(progressive_jpeg()) // 2],  # cut between or within scans
    ],
    ids=["eoi-in-metadata", "cut-then-bytes", "progressive-no-eoi", "progressive-half"],
)
def test_a_jpeg_that_stops_before_its_end_of_image_marker_is_refused(data):
    with pytest.raises(FrameError, match="truncated") as caught:
        decode_image(data)
    assert caught.value.code == "bad_image"


def test_decode_returns_bgr():
    image = decode_image(encoded(".png", 8, 4))
    assert image.shape == (4, 8, 3) and image.dtype == np.uint8


@pytest.mark.parametrize(
    ("size", "max_pixels", "refused"),
    [((64, 48), None, False), ((64, 48), 64 * 48, False), ((64, 48), 64 * 48 - 1, True)],
)
def test_video_frames_over_the_pixel_limit_are_refused_before_conversion(size, max_pixels, refused):
    convert = video_frame_decoder(av.VideoFrame(*size, "yuv420p"), max_pixels)
    if refused:
        with pytest.raises(FrameError) as caught:
            convert()
        assert caught.value.code == "too_many_pixels"
    else:
        assert convert().shape == (size[1], size[0], 3)
