"""Per-frame detectors: numpy image in, :class:`Detections` out. Pure: no I/O but model loading."""

from detectors.core import Detection, Detections, Detector

__all__ = ["Detection", "Detections", "Detector"]
