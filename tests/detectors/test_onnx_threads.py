"""The shipped detector shared by executor threads: each letterboxes into its own buffers."""

from concurrent.futures import ThreadPoolExecutor

from detectors.onnx_detector import load_detector
from detectors.synth.scenes import make_clip


def test_concurrent_detections_equal_sequential_ones() -> None:
    detector = load_detector("s")
    frames = make_clip(5, n_frames=12, fps=15.0, content="fu").frames
    sequential = [detector.detect(f) for f in frames]
    with ThreadPoolExecutor(max_workers=3) as pool:
        assert list(pool.map(detector.detect, frames)) == sequential
