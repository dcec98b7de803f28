"""run.py bench, bitrate section: coded clips keep their detections."""

from bench_cases import needs_model

from detectors.card import find_card
from detectors.onnx_detector import OnnxDetector
from evals.bench.bitrate import FRAMES, bitrate_rows, format_bitrate


@needs_model
def test_bitrate_rows_code_the_clips_and_keep_the_detections():
    detector = OnnxDetector(find_card("l", "int8"))
    rows = bitrate_rows(detector, fu_clips=1, negative_clips=1, rates=(1500, 300))
    uncoded, high, low = rows
    assert [r.asked_kbps for r in rows] == [None, 1500, 300]
    assert all(r.frames == 2 * FRAMES and r.fu == uncoded.fu > 0 for r in rows)
    assert uncoded.packets_per_frame == 0 and uncoded.coded_kbps == 0
    # Fewer bits, fewer packets; the encoder lands near what it was asked for.
    assert high.packets_per_frame > low.packets_per_frame >= 1
    assert 0.5 * 300 < low.coded_kbps < 2 * 300
    assert all(0 <= r.recall <= 1 and r.found <= r.fu for r in rows)
    table = format_bitrate(rows)
    assert "| uncoded |" in table and "| 300 |" in table
