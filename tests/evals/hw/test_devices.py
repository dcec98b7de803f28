"""eval-hw tables, on a red-square stand-in detector and a virtual clock."""

import dataclasses

import numpy as np
import pytest
from fakes import SPECS, RedSquareDetector, red_square_frame
from virtual_time import InlineExecutor, run_virtual

import evals.hw.devices
from detectors.synth.scenes import SceneOptions
from evals.hw.devices import (
    EvalClip,
    JpegFrame,
    check_pace,
    clip_frames,
    evaluate,
    format_eval,
    format_pace,
    parse_overrides,
    synth_clips,
)
from stream.pipelines import Pipelines
from stream.session import decode_for

SQUARE_BOX = np.array([[106, 80, 161, 121]], np.float32)  # red_square_frame's square


def square_clip(n=60, fps=30.0, visible=range(15, 45)):
    frames = [red_square_frame(square=i in visible) for i in range(n)]
    boxes = [SQUARE_BOX if i in visible else np.zeros((0, 4), np.float32) for i in range(n)]
    return EvalClip("square", frames, boxes, fps)


def empty_clip(n=60):
    return EvalClip("empty", [red_square_frame(square=False)] * n, [np.zeros((0, 4))] * n, 30.0)


@pytest.fixture
def pipelines():
    detectors = {(s.tier, s.precision): RedSquareDetector(s.tier) for s in SPECS}
    made = Pipelines(
        {"s": detectors["s", "int8"], "l": detectors["l", "int8"]},
        workers=1,
        models=[(s, detectors[s.tier, s.precision]) for s in SPECS],
    )
    made.executor.shutdown()
    made.executor = InlineExecutor()
    return made


def test_eval_scores_what_a_user_sees_per_profile(pipelines):
    clips = [square_clip(), empty_clip()]
    rows, _ = run_virtual(lambda: evaluate(pipelines, ["host", "low", "high"], clips))
    by_name = {r.profile: r for r in rows}
    assert by_name["host"].processed_fps == pytest.approx(30.0)
    assert by_name["low"].processed_fps == pytest.approx(24.0)  # the 24 fps camera
    assert by_name["low"].camera_skipped == 24
    assert by_name["low"].tier == "s" and by_name["high"].tier == "l"
    for row in rows:
        assert row.recall == 1.0 and row.precision == 1.0
        assert row.ttr_median is not None and 0 < row.ttr_median < 0.5
    assert by_name["low"].latency_p50 > by_name["high"].latency_p50
    table = format_eval(rows)
    assert table.splitlines()[0].startswith("| profile") and "| low " in table


@pytest.mark.parametrize(
    ("items", "overrides"),
    [
        ([], {}),
        (["confirm=false"], {"confirm": False}),
        (["alpha=0.01", "max_tracks=4"], {"alpha": 0.01, "max_tracks": 4}),
    ],
)
def test_voting_overrides_are_read_as_a_client_would_send_them(items, overrides):
    assert parse_overrides(items) == overrides


@pytest.mark.parametrize("items", [["confirm"], ["confirm=0"], ["alpah=0.1"], ["alpha=high"]])
def test_bad_voting_overrides_are_refused(items):
    with pytest.raises(ValueError):
        parse_overrides(items)


def test_voting_overrides_reach_every_session(pipelines):
    clips = [square_clip()]
    plain, _ = run_virtual(lambda: evaluate(pipelines, ["host"], clips))
    slow, _ = run_virtual(lambda: evaluate(pipelines, ["host"], clips, voting={"alpha": 1e-4}))
    assert plain[0].ttr_median is not None and slow[0].ttr_median is not None
    assert slow[0].ttr_median > plain[0].ttr_median  # a stricter vote takes longer


def test_pace_check_in_real_time_matches_the_emulated_latency(pipelines):
    clip = square_clip()

    (row,) = run_virtual(lambda: check_pace(pipelines, ["host", "low"], clip, 0))  # host: no
    assert row.same_as_fast
    assert row.frames > 0
    assert row.measured_p50 == pytest.approx(row.emulated_p50, abs=0.1)
    assert row.emulated_p50 == pytest.approx(row.nominal, rel=0.2)
    assert row.interval_p50 is None  # s keeps up with the camera: never back to back
    assert "| low " in format_pace([row])


def test_a_tier_slower_than_the_camera_shows_its_latency_as_frame_interval(pipelines):
    (row,) = run_virtual(lambda: check_pace(pipelines, ["low"], square_clip(), 0, tier="l"))
    assert row.profile == "low (l, fp32)"
    assert row.same_as_fast
    assert row.interval_p50 == pytest.approx(row.emulated_p50, rel=0.05)


def test_synth_clips_follow_the_scene_options():
    close = SceneOptions(glyph_fill=(0.7, 0.75), aimed=True)
    (with_fu, _), (plain, _) = synth_clips(1, 4, 30.0, 3, close), synth_clips(1, 4, 30.0, 3)
    assert with_fu.boxes[2][0][3] - with_fu.boxes[2][0][1] > 0.6 * 480  # mid-clip: the 福
    assert plain.boxes[2][0][3] - plain.boxes[2][0][1] < 0.6 * 480


@pytest.mark.parametrize(
    ("card", "message"),
    [
        (None, "no int8 models found in"),
        ("{not json", "cannot read"),
    ],
)
def test_eval_hw_refuses_a_models_dir_it_cannot_load(tmp_path, capsys, card, message):
    if card is not None:
        (tmp_path / "fu_l.int8.json").write_text(card, encoding="utf-8")
    assert evals.hw.devices.eval_hw_main(["mid"], 1, 10, 30.0, 0, False, models_dir=tmp_path) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"eval-hw: {message}") and out.count("\n") == 1


class CountingFrames(list):
    """Frames that count how often each is asked for (a clip renders on demand)."""

    def __init__(self, frames):
        super().__init__(frames)
        self.asked = 0

    def __getitem__(self, index):
        self.asked += 1
        return super().__getitem__(index)


@pytest.mark.parametrize(("side", "decoded"), [(160, (120, 160)), (320, (240, 320))])
def test_a_jpeg_frame_is_made_only_when_decoded_and_halved_where_a_session_would(side, decoded):
    frames = CountingFrames([red_square_frame(square=True)])  # 320x240
    sent = JpegFrame(frames, 0)
    assert frames.asked == 0
    image, width, height = decode_for(sent, side)
    assert (width, height) == (320, 240) and image.shape[:2] == decoded
    assert frames.asked == 1
    # JPEG keeps the red square where it was: at 5/12 of either side
    assert image[decoded[0] * 5 // 12, decoded[1] * 5 // 12, 2] > 200


async def test_clip_frames_hand_jpeg_frames_when_asked():
    clip = square_clip(n=3)
    raw = [decode async for _, decode in clip_frames(clip)]
    sent = [decode async for _, decode in clip_frames(dataclasses.replace(clip, jpeg=True))]
    assert not any(isinstance(d, JpegFrame) for d in raw)
    assert all(isinstance(d, JpegFrame) for d in sent)
    assert np.abs(sent[1]().astype(int) - raw[1]().astype(int)).mean() < 3
