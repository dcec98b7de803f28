"""JPEG frames decoded at half size when the detector would shrink them anyway."""

import asyncio
from types import SimpleNamespace

import cv2
import pytest
from fakes import RedSquareDetector, jpeg, red_square_frame

from detectors.objects.features import FRAME_SIDE
from detectors.onnx_detector import load_detector
from hw_sim import DeviceProfile, DeviceSimulator
from stream.images import JpegImage, image_decoder
from stream.pipelines import view_side
from stream.session import Session
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
    detector = load_detector("s")
    assert view_side(RedSquareDetector(), None) is None
    assert view_side(detector, None)() == 320
    targets = SimpleNamespace(index=SimpleNamespace(targets=()))
    side = view_side(detector, targets)
    assert side() == 320  # no target registered: object scan looks at nothing
    targets.index.targets = ("poster",)
    assert side() == FRAME_SIDE  # object scan describes frames up to this size
