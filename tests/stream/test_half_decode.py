"""JPEG and video frames decoded at half size when the detector would shrink them anyway."""

import asyncio
from types import SimpleNamespace

import av
import cv2
import numpy as np
import pytest
from fakes import RedSquareDetector, jpeg, red_square_frame

from detectors.objects.features import FRAME_SIDE
from detectors.onnx_detector import load_detector
from detectors.synth.scenes import make_clip
from evals.video_codec import encode_video
from hw_sim import DeviceProfile, DeviceSimulator
from stream.images import JpegImage, VideoImage, image_decoder, video_frame_decoder
from stream.pipelines import view_side
from stream.session import HalvableDecode, Session
from voting import KOfNVoter

FRAME = jpeg(red_square_frame(640, 480))


class SizeRecorder(RedSquareDetector):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[tuple[int, int]] = []

    def detect(self, image):
        self.sizes.append((image.shape[1], image.shape[0]))
        return super().detect(image)


async def one_frame(data, side):
    """The frame message of ``data`` through a session whose detector can use ``side`` px."""
    messages, detector = [], SizeRecorder()

    async def send(message):
        messages.append(message)

    simulator = DeviceSimulator(DeviceProfile("t"))
    session = Session(detector, KOfNVoter(), simulator, send, view_side=side)
    runner = asyncio.create_task(session.run())
    session.submit(image_decoder(data), 0.0)
    await asyncio.wait_for(session.wait_idle(), 5)
    session.close()
    await asyncio.wait_for(runner, 5)
    (frame,) = [m for m in messages if m["type"] == "frame"]
    return frame, detector.sizes[0]


def test_a_jpeg_knows_its_size_and_decodes_at_half():
    decode = image_decoder(FRAME)
    assert isinstance(decode, JpegImage) and (decode.width, decode.height) == (640, 480)
    assert decode().shape == (480, 640, 3) and decode.half().shape == (240, 320, 3)
    png = bytes(cv2.imencode(".png", red_square_frame())[1])
    assert not isinstance(image_decoder(png), JpegImage)  # OpenCV would decode PNG in full


@pytest.mark.parametrize(
    ("side", "seen"),
    [
        (lambda: 320, (320, 240)),  # the model's input: half is enough
        (lambda: 640, (640, 480)),  # object scan with targets: full size
        (None, (640, 480)),  # a detector of unknown needs: full size
    ],
)
async def test_sizes_and_boxes_stay_in_received_pixels(side, seen):
    frame, detector_saw = await one_frame(FRAME, side)
    full, _ = await one_frame(FRAME, None)
    assert detector_saw == seen
    assert (frame["width"], frame["height"]) == (640, 480)
    assert frame["detections"][0]["box"] == pytest.approx(full["detections"][0]["box"], abs=2)


def test_view_side_follows_the_model_and_registered_targets():
    detector = load_detector("m")  # 320x240 input
    assert view_side(RedSquareDetector(), None) is None
    assert view_side(detector, None)() == 320
    index = SimpleNamespace(targets=())
    side = view_side(detector, SimpleNamespace(current=lambda: index))
    assert side() == 320  # no target registered: object scan looks at nothing
    index.targets = ("poster",)
    assert side() == FRAME_SIDE  # object scan describes frames up to this size


def vp8_frames(content: str, seed: int, n: int = 8) -> list[av.VideoFrame]:
    """A generated 640x480 clip through VP8 and back, as a WebRTC track delivers it."""
    images = make_clip(seed, n, 15.0, 640, 480, content=content).frames
    decoder = av.CodecContext.create("libvpx", "r")
    return [f for p in encode_video(images, "libvpx", 15.0) for f in decoder.decode(p)]


def averaged(frame: VideoImage) -> np.ndarray:
    """The full-size conversion shrunk 2x2 as the letterbox would: the reference for half()."""
    return cv2.resize(frame(), (frame.width // 2, frame.height // 2), interpolation=cv2.INTER_AREA)


def test_a_video_frame_knows_its_size_and_converts_at_half():
    decode = video_frame_decoder(vp8_frames("fu", 1, 1)[0])
    assert isinstance(decode, HalvableDecode) and (decode.width, decode.height) == (640, 480)
    assert decode().shape == (480, 640, 3) and decode.half().shape == (240, 320, 3)


def test_half_video_conversion_is_the_full_one_averaged():
    diffs = [
        np.abs(decode.half().astype(int) - averaged(decode).astype(int))
        for decode in map(video_frame_decoder, vp8_frames("fu", 2))
    ]
    diff = np.concatenate([d.ravel() for d in diffs])
    # swscale's fixed point lands about one level below exact BT.601; clipping a saturated
    # colour before or after the 2x2 average differs a little more, on a few pixels.
    assert diff.mean() < 1.5
    assert np.percentile(diff, 99.9) <= 4


@pytest.mark.parametrize(
    "frame",
    [
        av.VideoFrame.from_ndarray(red_square_frame(64, 48), format="bgr24"),  # not 4:2:0
        av.VideoFrame.from_ndarray(red_square_frame(65, 49), format="bgr24").reformat(
            format="yuv420p"  # odd size: no whole 2x2 blocks
        ),
        av.VideoFrame.from_ndarray(red_square_frame(64, 48), format="bgr24").reformat(
            format="yuv420p",
            dst_color_range="JPEG",  # full range: another matrix
        ),
    ],
)
def test_other_video_frames_are_converted_in_full_then_shrunk(frame):
    decode = video_frame_decoder(frame)
    assert np.array_equal(decode.half(), averaged(decode))


def test_half_video_frames_give_the_same_detections():
    """INT8 ``l``'s first look on VP8 frames: a score that moves is within a few output
    steps, which only changes a detection that was within that of the threshold (a
    one-level brightness change does the same to these frames). The second look's
    close-ups are not compared: on a full frame they get twice the pixels, which is
    the point of them (docs/detector.md measures both)."""
    detector = load_detector("l")
    frames = vp8_frames("fu", 3) + vp8_frames("negative", 4) + vp8_frames("fu", 5)
    for decode in map(video_frame_decoder, frames):
        full = detector.look(decode(), detector.threshold)
        half = detector.look(decode.half(), detector.threshold)
        near = [d for d in (*full, *half) if abs(d.score - detector.threshold) < 0.05]
        if near:
            continue
        assert [d.label for d in full] == [d.label for d in half]
        for a, b in zip(full, half, strict=True):
            assert b.score == pytest.approx(a.score, abs=0.04)
            assert np.abs(np.subtract(a.box, np.multiply(b.box, 2))).max() <= 8
