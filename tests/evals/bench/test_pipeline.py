"""run.py bench, pipeline section on tiny inputs: every stage is timed; no timing is asserted."""

from bench_cases import TIERS, needs_model

from evals.bench import pipeline


@needs_model
def test_pipeline_rows_cover_every_stage_and_both_paths():
    rows = pipeline.pipeline_rows([(160, 120)], TIERS[0], n_frames=3, rounds=1)
    stages = {r.stage for r in rows}
    assert {"VP8 decode", "H264 decode", "JPEG decode (imdecode)", "letterbox"} <= stages
    assert {"voting (balanced)", "JSON message", "output decode (peaks, NMS)"} <= stages
    totals = pipeline.pipeline_totals(rows)["160x120"]
    assert totals["webrtc"] > 0 and totals["websocket"] > 0
    assert "total, webrtc path" in pipeline.format_pipeline(rows)
