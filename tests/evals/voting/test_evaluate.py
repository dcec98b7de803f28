import dataclasses
import json
import math
import sys
import types

import numpy as np
import pytest

import run
from detectors.core import Detection, Detections
from evals.voting import evaluate
from evals.voting.rendered import detected_clip, link_objects
from voting.core import TrackedDetection, VoteEvent, VoteUpdate
from voting.presets import make_voter
from voting.simulate import FU, NEGATIVE, Clip, ClipCheck, GroundTruthObject

BOX = (100.0, 100.0, 200.0, 200.0)
ELSEWHERE = (400.0, 300.0, 450.0, 350.0)


def clip_with(kind="fu", n=60, label=FU, visits=((0.5, 1.8),), clarity=(0.9,), contrast=math.nan):
    times = np.arange(n) / 30
    boxes = np.tile(np.array(BOX), (n, 1))
    obj = GroundTruthObject(1, label, boxes, visits, clarity, contrast)
    return Clip(kind, 0, times, (Detections(),) * n, (obj,), np.arange(n))


def recognized(t, box=BOX, track=1):
    return VoteEvent("recognized", FU, track, t, 0.999, box)


def updates_with(events_at, n=60):
    per_frame = [VoteUpdate() for _ in range(n)]
    for i, event in events_at:
        per_frame[i] = VoteUpdate((), (event,))
    return per_frame


@pytest.mark.parametrize(
    ("events", "true", "repeated", "covered", "delays"),
    [
        ([], 0, 0, 0, []),
        ([(24, recognized(0.8))], 1, 0, 1, [pytest.approx(0.3)]),
        ([(24, recognized(0.8)), (40, recognized(1.33, track=2))], 1, 1, 1, [pytest.approx(0.3)]),
        ([(24, recognized(0.8, ELSEWHERE))], 0, 0, 0, []),
    ],
)
def test_score_clip_counts_events(events, true, repeated, covered, delays):
    tally = evaluate.Tally()
    evaluate.score_clip(clip_with(), updates_with(events), tally, min_view=1.0, clear=0.75)
    assert (tally.recognized, tally.true, tally.repeated) == (len(events), true, repeated)
    assert (tally.visits, tally.covered, tally.delays) == (1, covered, delays)
    assert tally.false_in_negative == 0


def tally_of(*events, kind="fu", clarity=(0.9,)):
    """A tally of one 40-frame clip (one visit, 0.5-1.3 s) with ``events`` (frame, event)."""
    tally = evaluate.Tally()
    clip = clip_with(kind=kind, n=40, visits=((0.5, 1.3),), clarity=clarity)
    evaluate.score_clip(clip, updates_with(events, n=40), tally, 1.0, 0.75)
    return tally


@pytest.mark.parametrize(
    ("first", "second", "same", "earlier", "later", "gained", "lost", "wrong", "repeats"),
    [
        # nothing either way
        ((), (), 0, [], [], [], [], (0, 0), (0, 0)),
        # the same frame: same
        (((24, recognized(0.8)),), ((24, recognized(0.8)),), 1, [], [], [], [], (0, 0), (0, 0)),
        # sooner and later, by the seconds between (a short, hard visit counts too)
        (((30, recognized(1.0)),), ((18, recognized(0.6)),), 0, [0.4], [], [], [], (0, 0), (0, 0)),
        (((18, recognized(0.6)),), ((30, recognized(1.0)),), 0, [], [0.4], [], [], (0, 0), (0, 0)),
        # a visit only one of them recognized
        ((), ((24, recognized(0.8)),), 0, [], [], [("fu", 0, 1, 0)], [], (0, 0), (0, 0)),
        (((24, recognized(0.8)),), (), 0, [], [], [], [("fu", 0, 1, 0)], (0, 0), (0, 0)),
        # a recognition on nothing: wrong, listed per arm
        ((), ((24, recognized(0.8, ELSEWHERE)),), 0, [], [], [], [], (0, 1), (0, 0)),
        # the same visit recognized twice by the first (a second track): a repeat, per arm
        (
            ((24, recognized(0.8)), (32, recognized(1.07, track=2))),
            ((24, recognized(0.8)),),
            1,
            [],
            [],
            [],
            [],
            (0, 0),
            (1, 0),
        ),
    ],
)
def test_two_detectors_are_compared_visit_by_visit(
    first, second, same, earlier, later, gained, lost, wrong, repeats
):
    paired = evaluate.pair(tally_of(*first, clarity=(0.5,)), tally_of(*second))
    assert paired.same == same
    assert paired.earlier == [pytest.approx(d) for d in earlier]
    assert paired.later == [pytest.approx(d) for d in later]
    assert (paired.gained, paired.lost) == (gained, lost)
    assert tuple(len(w) for w in paired.wrong) == wrong
    assert tuple(len(r) for r in paired.repeats) == repeats


def test_the_comparison_table_names_what_differs():
    first = tally_of((30, recognized(1.0)))
    second = tally_of(
        (18, recognized(0.6)),
        (35, recognized(1.17, ELSEWHERE)),
        (38, recognized(1.27, track=3)),
        kind="mixed",
    )
    pairs = {("balanced", 30.0): evaluate.pair(first, second)}
    text = evaluate.format_pairs(pairs, ("shipped", "new"))
    assert text.splitlines()[0] == "new against shipped, the same clips:"
    row = text.splitlines()[3].split()
    assert row == ["balanced", "30", "0", "0", "-", "0", "-", "1", "1", "0", "->", "1"]
    assert "  balanced 30 fps gained mixed-0 object 1 visit 1" in text
    assert "  balanced 30 fps lost fu-0 object 1 visit 1" in text
    assert "  balanced 30 fps wrong through new: mixed-0 at 1.17 s" in text
    assert "  balanced 30 fps repeat through new: mixed-0 at 1.27 s" in text


@pytest.mark.parametrize(
    ("visits", "clarity", "counted"),
    [(((0.5, 1.2),), (0.9,), (0, 0)), (((0.5, 1.8),), (0.5,), (0, 1))],
)
def test_short_or_hard_visits_are_kept_apart(visits, clarity, counted):
    tally = evaluate.Tally()
    evaluate.score_clip(
        clip_with(visits=visits, clarity=clarity), updates_with([]), tally, 1.0, 0.75
    )
    assert (tally.visits, tally.hard_visits) == counted


def test_false_recognitions_in_negative_video_count_per_hour():
    tally = evaluate.Tally()
    clip = clip_with(kind="negative", n=30 * 36, label=NEGATIVE, visits=((0.0, 36.0),))
    evaluate.score_clip(clip, updates_with([(5, recognized(0.2))], n=30 * 36), tally, 1.0, 0.75)
    assert tally.false_in_negative == 1
    assert tally.false_per_hour == pytest.approx(100.0)
    assert tally.precision == 0.0


def test_empty_tally_reports_nan():
    tally = evaluate.Tally()
    values = [tally.precision, tally.recall, tally.recall_hard, tally.false_per_hour]
    values += [tally.delay(0.5), tally.jitter, tally.error]
    assert all(math.isnan(v) for v in values)
    assert "nan" in evaluate.format_table({("balanced", 15.0): tally})


def test_box_error_and_jitter():
    tally = evaluate.Tally()
    clip = clip_with(n=3)
    updates = [
        VoteUpdate((evaluate_det((101.0, 100.0, 201.0, 200.0)),)),
        VoteUpdate((evaluate_det((99.0, 100.0, 199.0, 200.0)),)),
        VoteUpdate((evaluate_det(ELSEWHERE),)),
    ]
    evaluate.score_clip(clip, updates, tally, 1.0, 0.75)
    assert tally.error == pytest.approx(0.5)  # 1 px on 2 of 4 sides of a 100 px box
    assert tally.jitter == pytest.approx(100 * math.sqrt((0.02**2 * 2) / 4))


def evaluate_det(box):
    from voting.core import TrackedDetection

    return TrackedDetection(FU, 0.9, box, 1)


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("balanced", ["balanced"]),
        ("fast,kofn:k=2:n=3:min_score=0.6", ["fast", "kofn:k=2:n=3:min_score=0.6"]),
        ("balanced,balanced:confirm=false", ["balanced", "balanced:confirm=false"]),
    ],
)
def test_parse_voters(spec, names):
    voters = evaluate.parse_voters(spec, {})
    assert list(voters) == names
    assert all(factory() is not factory() for factory in voters.values())


def test_parse_voters_reads_true_and_false_as_switches():
    voters = evaluate.parse_voters("balanced:confirm=false,strict:confirm=true", {})
    assert [factory().config.confirm for factory in voters.values()] == [False, True]


@pytest.mark.parametrize(
    "spec", ["nope", "balanced:alpah=0.1", "kofn:k=x", "balanced:confirm=0", "balanced:alpha=true"]
)
def test_parse_voters_rejects(spec):
    with pytest.raises(ValueError):
        evaluate.parse_voters(spec, {})


@pytest.mark.parametrize("by", ["frame", "track"])
def test_calibration_separates_real_from_false_tracks(by):
    source, length = evaluate.sim_source(evaluate.NoiseModel())
    clips = evaluate.make_clips(source, evaluate.clip_specs(range(8), 40, length))
    records = evaluate.track_records(clips, evaluate.IouTracker)
    assert {r.obj is None for r in records} == {True, False}
    assert all(r.frames >= len(r.scores) for r in records)
    model = evaluate.calibrate(records, cap=3.0, by=by)
    assert model.llr(0.95) > 1 > 0 > model.llr(0.35)
    assert model.llr(None) < 0


@pytest.mark.parametrize(
    ("model", "fitted"),
    [("card", False), ("fixed", False), ("fit-frame", True), ("fit-track", True)],
)
def test_main_prints_a_table(capsys, model, fitted):
    argv = "--clips 3 --negative-hours 0.01 --calibration-clips 3 --fps 15 --voters balanced,kofn"
    assert run.main(["eval-voting", *argv.split(), "--score-model", model]) == 0
    out = capsys.readouterr().out
    assert ("score model fitted" in out) == fitted
    assert out.count("\nbalanced ") == 1 and out.count("\nkofn ") == 1


def test_main_renders_missing_synth_clips_in_worker_processes(tmp_path, capsys):
    models = tmp_path / "models"
    models.mkdir()
    for suffix in (".json", ".onnx"):
        name = f"fu_s.int8{suffix}"
        (models / name).write_bytes((evaluate.MODELS_DIR / name).read_bytes())
    argv = (
        "--source synth --tier s --clips 2 --negative-hours 0.0001 --seconds 0.2 --fps 15 "
        f"--voters balanced --jobs 2 --models-dir {models} --cache {tmp_path / 'cache'} "
        "--min-view 0.1 --list-misses"
    )
    assert run.main(["eval-voting", *argv.split()]) == 0
    out = capsys.readouterr().out
    assert "\nbalanced " in out
    bands = out.split("per band of ink contrast (CIE76 delta E):\n")[1].split("\n\n")[0]
    bands = bands.splitlines()
    assert len(bands) == len(evaluate.CONTRAST_BANDS) + 1
    assert sum(int(line.split(" of ")[1].split()[0]) for line in bands) >= 1  # rendered 福
    assert len(list((tmp_path / "cache").rglob("*.npz"))) == 4  # mixed 0, fu 1, two negatives


def test_main_compares_two_models_on_the_same_clips(tmp_path, capsys):
    for folder, threshold in (("a", None), ("b", 0.9)):
        (tmp_path / folder).mkdir()
        for suffix in (".json", ".onnx"):
            name = f"fu_s.int8{suffix}"
            (tmp_path / folder / name).write_bytes((evaluate.MODELS_DIR / name).read_bytes())
        if threshold is not None:
            card = tmp_path / folder / "fu_s.int8.json"
            raw = json.loads(card.read_text(encoding="utf-8"))
            card.write_text(json.dumps(raw | {"threshold": threshold}), encoding="utf-8")
    argv = (
        "--source synth --tier s --clips 2 --negative-hours 0.0001 --seconds 0.2 --fps 15 "
        f"--voters balanced --jobs 2 --models-dir {tmp_path / 'a'} --compare {tmp_path / 'b'} "
        f"--cache {tmp_path / 'cache'} --min-view 0.1 --list-misses"
    )
    assert run.main(["eval-voting", *argv.split()]) == 0
    out = capsys.readouterr().out
    first, compared = out.split(f"the same clips through {tmp_path / 'b'} (threshold 0.9):")
    assert f"{tmp_path / 'b'} against {tmp_path / 'a'}, the same clips:" in compared
    assert out.count("\nbalanced ") == 3  # each model's table and the comparison
    for listing in (first, compared):  # each model's own misses, wrong and repeats
        assert "whole in frame for 0.1 s that balanced at 15 fps never recognized:" in listing
        assert "recognitions by balanced at 15 fps matched no 福:" in listing
    assert [len(list(f.glob("*.npz"))) for f in (tmp_path / "cache").iterdir()] == [4, 4]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--compare", "models"], "--compare takes --source synth"),
        (["--source", "synth", "--score-model", "fit-frame"], "--compare takes --source synth"),
        (["--source", "synth"], "--compare: no int8 model for tier 's'"),
    ],
)
def test_main_refuses_a_comparison_it_cannot_make_before_rendering(argv, error, tmp_path, capsys):
    with pytest.raises(SystemExit):
        run.main(
            ["eval-voting", *argv, "--compare", str(tmp_path), "--cache", str(tmp_path / "cache")]
        )
    assert error in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


def test_main_renders_clips_with_scene_options_into_their_own_cache(tmp_path, capsys):
    argv = (
        "--source synth --tier s --clips 1 --seed 1 --negative-hours 0.0001 --seconds 0.2 "
        f"--fps 15 --voters balanced --cache {tmp_path} --min-view 0.1 "
        "--glyph-fill 0.6:0.7 --aimed"
    )
    assert run.main(["eval-voting", *argv.split()]) == 0
    assert "detectors.synth, glyph_fill=(0.6, 0.7), aimed=True)" in capsys.readouterr().out
    (folder,) = tmp_path.iterdir()
    assert "-scenes-" in folder.name and len(list(folder.glob("*.npz"))) == 3  # fu, 2 negative


def test_main_refuses_scene_options_for_the_noise_model(capsys):
    with pytest.raises(SystemExit):
        run.main(["eval-voting", "--source", "sim", "--glyph-fill", "0.6:0.9"])
    assert "for --source synth" in capsys.readouterr().err


def test_main_rejects_bad_voters(capsys):
    with pytest.raises(SystemExit):
        run.main(["eval-voting", "--voters", "paranoid"])
    assert "unknown voting preset" in capsys.readouterr().err


class ScriptedDetector:
    tier = "t"

    def __init__(self):
        self.calls = 0

    def detect(self, image):
        self.calls += 1
        return Detections((Detection(FU, float(image[0, 0, 0]) / 100, BOX),))


def fake_scenes(seed, n_frames, fps, content):
    frames = [np.full((4, 4, 3), 90, np.uint8) for _ in range(n_frames)]
    boxes = [
        np.array([BOX], np.float32) if i >= 2 else np.zeros((0, 4), np.float32)
        for i in range(n_frames)
    ]
    return frames, boxes, (23.5,)


def test_detected_clips_are_cached(tmp_path, monkeypatch):
    module = types.ModuleType("detectors.synth.scenes")
    module.GENERATOR_MIX = "the generator's own mix"
    module.make_clip = lambda seed, n, fps, width, height, content, options: fake_scenes(
        seed, n, fps, content
    )
    monkeypatch.setitem(sys.modules, "detectors.synth.scenes", module)
    detector = ScriptedDetector()
    first = detected_clip(lambda: detector, "t-int8", 7, "fu", 0.2, tmp_path)
    again = detected_clip(pytest.fail, "t-int8", 7, "fu", 0.2, tmp_path)
    assert detector.calls == 6  # once per frame, the second clip came from the cache
    assert first.detections == again.detections
    assert first.detections[0].items[0].score == pytest.approx(0.9)
    assert first.detections[0].frame == (640, 480)  # the size make_clip was asked for
    (obj,) = first.objects
    assert obj.visits == (pytest.approx((2 / 30, 6 / 30)),)
    assert obj.clarity == (pytest.approx(0.9),)
    assert obj.contrast == 23.5
    uncached = detected_clip(lambda: detector, "t-int8", 7, "fu", 0.2, None)
    assert uncached.detections == first.detections


def test_link_objects_chains_boxes_and_splits_visits():
    moved = (110.0, 100.0, 210.0, 200.0)
    truth = [[BOX, ELSEWHERE], [moved], [], [moved, ELSEWHERE]]
    dets = (Detections((Detection(FU, 0.8, BOX),)),) + (Detections(),) * 3
    a, b = link_objects(truth, dets, np.arange(4) / 30)
    assert len(a.visits) == 2 and len(b.visits) == 2
    assert a.clarity == (pytest.approx(0.4), 0.0)


def test_parse_noise():
    assert evaluate.parse_noise("") == evaluate.NoiseModel()
    assert evaluate.parse_noise("slow_sigma=0.5,dropout=0").slow_sigma == 0.5
    with pytest.raises(ValueError, match="unknown noise model field"):
        evaluate.parse_noise("wobble=1")
    with pytest.raises(ValueError):
        evaluate.parse_noise("dropout=lots")


def test_recognition_without_a_box_matches_nothing():
    tally = evaluate.Tally()
    event = VoteEvent("recognized", FU, 1, 0.8)
    evaluate.score_clip(clip_with(), updates_with([(24, event)]), tally, 1.0, 0.75)
    assert (tally.recognized, tally.true) == (1, 0)


@pytest.mark.parametrize(
    ("k", "n", "bound"),
    [
        (0, 1, 0.95),
        (0, 300, 1 - 0.05 ** (1 / 300)),  # about 3 / n, the rule of three
        (2, 268, pytest.approx(0.0233, abs=1e-4)),
        (3, 3, 1.0),
    ],
)
def test_binomial_upper_bound(k, n, bound):
    assert evaluate.binomial_upper(k, n) == pytest.approx(bound)


@pytest.mark.parametrize(("k", "bound"), [(0, 2.996), (1, 4.744), (5, 10.513)])
def test_poisson_upper_bound(k, bound):
    assert evaluate.poisson_upper(k) == pytest.approx(bound, abs=1e-3)


def test_tally_bounds():
    tally = evaluate.Tally(recognized=300, true=300, false_in_negative=0, negative_seconds=1800)
    assert tally.precision_low == pytest.approx(0.05 ** (1 / 300))
    assert tally.false_per_hour_high == pytest.approx(2 * 2.996, abs=1e-2)
    assert math.isnan(evaluate.Tally().precision_low)
    assert math.isnan(evaluate.Tally().false_per_hour_high)


def _boxes_for(n, box, cut_from=None):
    rows = np.tile(np.array(box, dtype=float), (n, 1))
    if cut_from is not None:
        rows[cut_from:, 0] = 0.0  # the frame's left edge cuts it from here on
    return rows


@pytest.mark.parametrize(
    ("boxes", "visit", "whole"),
    [
        (_boxes_for(60, BOX), (0.0, 2.0), True),
        (_boxes_for(60, BOX), (0.0, 0.9), False),  # shorter than min_view
        (_boxes_for(60, (0.0, 100.0, 100.0, 200.0)), (0.0, 2.0), False),  # touches the edge
        (_boxes_for(60, (400.0, 300.0, 640.0, 480.0)), (0.0, 2.0), False),  # right and bottom
        (_boxes_for(60, BOX, cut_from=20), (0.0, 2.0), False),  # whole for 0.67 s only
        (_boxes_for(60, BOX, cut_from=45), (0.0, 2.0), True),  # whole for 1.5 s, then cut
        (np.full((60, 4), np.nan), (0.0, 2.0), False),  # never in view
    ],
)
def test_whole_in_frame_needs_min_view_seconds_clear_of_every_edge(boxes, visit, whole):
    assert evaluate.whole_in_frame(boxes, visit, min_view=1.0) is whole


@pytest.mark.parametrize("clarity", [0.9, 0.5])
def test_whole_visits_count_whatever_the_detector_scored(clarity):
    tally = evaluate.Tally()
    clip = clip_with(visits=((0.0, 2.0),), clarity=(clarity,))
    evaluate.score_clip(clip, updates_with([(24, recognized(0.8))]), tally, 1.0, 0.75)
    assert (tally.whole_visits, tally.whole_covered, tally.recall_whole) == (1, 1, 1.0)
    assert tally.visits + tally.hard_visits == 1


@pytest.mark.parametrize(
    ("events", "missed"),
    [
        ([], [evaluate.MissedVisit("fu", 0, 1, 0.0, 2.0, 0.3, 100.0, 20, 60, 4.0)]),
        ([(24, recognized(0.8))], []),
    ],
)
def test_a_whole_visit_never_recognized_is_listed_with_its_clip_and_object(events, missed):
    tally = evaluate.Tally()
    clip = clip_with(visits=((0.0, 2.0),), clarity=(0.3,), contrast=4.0)
    seen = [
        Detections((Detection(FU, 0.8, BOX),)) if i % 3 == 0 else Detections() for i in range(60)
    ]
    clip = dataclasses.replace(clip, detections=tuple(seen))  # found on every third frame
    evaluate.score_clip(clip, updates_with(events), tally, 1.0, 0.75)
    assert tally.missed_whole == missed
    if missed:
        assert missed[0].describe() == (
            "fu-0 object 1: 0.00-2.00 s, detected on 20 of 60 frames, "
            "median score 0.30, 100 px high, ink contrast 4.0"
        )


@pytest.mark.parametrize(
    ("contrast", "events", "visible", "band"),
    [
        (math.nan, [], (0, 0), None),  # a simulated clip: no ink to measure
        (4.0, [], (0, 0), (0.0, 5.0)),  # a red 福 on a red cup: whole, not plainly visible
        (10.0, [], (1, 0), (10.0, 20.0)),
        (42.0, [(24, recognized(0.8))], (1, 1), (40.0, math.inf)),
    ],
)
def test_visible_visits_are_the_whole_ones_whose_ink_stands_out(contrast, events, visible, band):
    tally = evaluate.Tally()
    clip = clip_with(visits=((0.0, 2.0),), contrast=contrast)
    evaluate.score_clip(clip, updates_with(events), tally, 1.0, 0.75)
    assert tally.whole_visits == 1
    assert (tally.visible_visits, tally.visible_covered) == visible
    bands = tally.whole_by(lambda visit: visit.contrast, evaluate.CONTRAST_BANDS)
    assert [(low, high) for low, high, _, _ in bands] == [
        (0.0, 5.0),
        (5.0, 10.0),
        (10.0, 20.0),
        (20.0, 40.0),
        (40.0, math.inf),
    ]
    expected = {(low, high): (0, 0) for low, high, _, _ in bands}
    if band is not None:
        expected[band] = (1, len(events))
    assert {(low, high): (n, hit) for low, high, n, hit in bands} == expected
    by_height = tally.whole_by(lambda visit: visit.height, evaluate.HEIGHT_BANDS)
    assert [(n, hit) for low, _, n, hit in by_height if low == 100.0] == [(1, len(events))]
    assert sum(n for _, _, n, _ in by_height) == 1  # BOX is 100 px high: measured always


CUT = (560.0, 0.0, 640.0, 90.0)  # touches the top and right edges of the 640x480 frame


@pytest.mark.parametrize(
    ("box", "seen", "described"),
    [
        # found on frames 10-12 and 14 of its track (13 missed): four scores of five frames
        (
            ELSEWHERE,
            {10: 0.7, 11: 0.9, 12: 0.8, 14: 0.75},
            "fu-0 at 0.47 s: 50x50 px at (400, 300), found on 4 of 5 frames at 0.70-0.90 "
            "(median 0.78)",
        ),
        (
            CUT,
            {14: 0.95},
            "fu-0 at 0.47 s: 80x90 px at (560, 0), cut by the frame's edge, found on 1 of 1 "
            "frames at 0.95-0.95 (median 0.95)",
        ),
        (None, {14: 0.95}, "fu-0 at 0.47 s"),  # a voter that gave no box
    ],
)
def test_a_wrong_recognition_is_listed_with_what_its_track_showed(box, seen, described):
    updates = [VoteUpdate() for _ in range(60)]
    for i, score in seen.items():
        other = TrackedDetection(FU, 0.99, BOX, 1)  # the real 福's track, not this one's
        updates[i] = VoteUpdate((other, TrackedDetection(FU, score, box or CUT, 7)))
    event = VoteEvent("recognized", FU, 7, 14 / 30, 0.999, box)
    updates[14] = dataclasses.replace(updates[14], events=(event,))
    tally = evaluate.Tally()
    evaluate.score_clip(clip_with(), updates, tally, 1.0, 0.75)
    assert len(tally.wrong) == 1
    wrong = tally.wrong[0]
    assert (wrong.frames, wrong.scores) == (15 - min(seen), tuple(seen.values()))
    assert wrong.describe() == described


def test_a_repeat_is_listed_with_what_its_new_track_showed():
    tally = evaluate.Tally()
    events = [(24, recognized(0.8)), (40, recognized(1.33, track=2))]
    evaluate.score_clip(clip_with(), updates_with(events), tally, min_view=1.0, clear=0.75)
    (repeat,) = tally.repeats
    assert (tally.true, tally.repeated, repeat.t) == (1, 1, 1.33)
    assert repeat.describe().startswith("fu-0 at 1.33 s: ")
    assert tally.precision == 0.5


def test_main_lists_the_first_voters_misses_when_asked(capsys):
    argv = "--clips 20 --negative-hours 0.01 --fps 15,8 --voters strict,kofn --list-misses"
    assert run.main(["eval-voting", *argv.split()]) == 0
    head, listed = capsys.readouterr().out.split(" that strict at 15 fps never recognized:\n")
    count = int(head.rsplit("\n", 1)[1].split(" of ")[0])
    listed, heights = listed.split("\n\nvisits whole in frame per band of height (px):\n")
    heights, wrong, repeats = heights.split("\n\n")
    assert " recognitions by strict at 15 fps matched no 福:" in wrong.splitlines()[0]
    assert " recognized again in a visit already recognized:" in repeats.splitlines()[0]
    assert "ink contrast" not in listed  # simulated clips draw no ink: nothing to say of it
    assert len(heights.splitlines()) == len(evaluate.HEIGHT_BANDS) + 1
    lines = listed.splitlines()
    assert count == len(lines) > 0  # these seeds hold misses of strict
    assert all(line.startswith(("  fu-", "  mixed-")) and " object " in line for line in lines)


@pytest.mark.parametrize(("confirm", "checks"), [(True, 1), (False, 0)])
def test_run_clip_offers_the_clips_check_and_counts_what_the_voter_asks(confirm, checks):
    clip = clip_with(n=30)
    seen = Detection(FU, 0.9, BOX)
    check = ClipCheck(tuple({seen: 0.9} for _ in range(30)), 0.4)
    clip = dataclasses.replace(clip, detections=(Detections((seen,)),) * 30, check=check)
    tally = evaluate.Tally()
    voter = make_voter("balanced", None, confirm=confirm)
    updates = evaluate.run_clip(voter, clip, tally)
    assert sum(e.event == "recognized" for u in updates for e in u.events) == 1
    evaluate.score_clip(clip, updates, tally, 1.0, 0.75)
    assert tally.checks == checks
    assert tally.checks_per_hour == pytest.approx(3600 * checks)  # one second of video
    assert f"{3600 * checks:>8}" in evaluate.format_table({("balanced", 15.0): tally})


def test_table_shows_a_dash_where_nothing_was_counted():
    row = evaluate.format_table({("balanced", 30.0): evaluate.Tally()}).splitlines()[-1]
    assert row.split()[3:9] == ["-"] * 6  # precision, its bound and the four recalls
