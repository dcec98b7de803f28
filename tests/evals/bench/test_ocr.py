"""run.py bench, OCR section: offline, ours scored without RapidOCR."""

import socket

import numpy as np
import pytest
from bench_cases import TIERS, needs_model

from evals.bench import ocr


def test_no_network_refuses_and_records_connections():
    with ocr.no_network() as attempts, pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert attempts
    assert socket.getaddrinfo is not None and "benchmark" not in repr(socket.socket.connect)


@needs_model
def test_ocr_scores_ours_without_rapidocr():
    frames = ocr.labelled_frames(clips=1, per_clip=1, width=160, height=120)
    assert [f.content for f in frames] == ["fu", "negative", "empty"]
    scores, attempts = ocr.ocr_scores(frames, TIERS[:1], threads=1, ocr_configs={})
    (ours,) = scores
    assert ours.frames == 3 and ours.tp + ours.fn == sum(f.has_fu for f in frames)
    assert attempts == []
    assert "recall" in ocr.format_ocr(scores)


def test_rapidocr_reads_a_frame_offline():
    pytest.importorskip("rapidocr_onnxruntime")
    assert ocr.rapidocr_models()
    with ocr.no_network() as attempts:
        engine = ocr.rapidocr_engine(threads=1)
        assert engine is not None
        assert isinstance(engine(np.full((120, 160, 3), 255, np.uint8)), str)
    assert attempts == []
