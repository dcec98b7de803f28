import pytest
from schedules import settled

from hw_sim import DeviceTimeline
from hw_sim.timeline import MAX_HELD


def constant(latency):
    """Every network run takes ``latency``."""
    return lambda index, start, runs: latency * runs


def schedule(timeline, arrivals, flush=True, runs=lambda index: 1):
    """(index, start) of every started frame, for arrivals ``[(index, t), ...]``, each start
    settled with ``runs(index)`` before the next arrival."""
    done = []
    for index, t in arrivals:
        done += settled(timeline, timeline.offer(f"frame{index}", index, t), runs)
    if flush:
        done += settled(timeline, timeline.flush(), runs)
    return [(s.index, round(s.start, 6)) for s, _ in done]


FPS30 = [(i, i / 30) for i in range(10)]


@pytest.mark.parametrize(
    ("latency", "expected", "dropped"),
    [
        # faster than the camera: every frame starts on arrival
        (0.010, [(i, round(i / 30, 6)) for i in range(10)], 0),
        # 50 ms: frame 1 waits for the device; 3 arrives as it frees and replaces 2
        (0.050, [(0, 0.0), (1, 0.05), (3, 0.1), (4, 0.15), (6, 0.2), (7, 0.25), (9, 0.3)], 3),
        # 100 ms: frames 1, 2 arrive while busy, 2 replaces 1; 3 arrives at the finish and wins
        (0.100, [(0, 0.0), (3, 0.1), (6, 0.2), (9, 0.3)], 2 + 2 + 2),
        # 150 ms: the newest waiting frame starts when the device frees
        (0.150, [(0, 0.0), (4, 0.15), (9, 0.3)], 3 + 4),
    ],
)
def test_busy_device_keeps_only_the_newest_waiting_frame(latency, expected, dropped):
    timeline = DeviceTimeline(constant(latency))
    assert schedule(timeline, FPS30) == expected
    assert timeline.dropped == dropped
    assert timeline.started + timeline.dropped == len(FPS30)


def test_the_last_arrival_is_the_newest_frame_offered_kept_or_not():
    timeline = DeviceTimeline(constant(0.1), camera_fps=10)
    assert timeline.last_arrival == float("-inf")
    schedule(timeline, [(0, 0.0), (1, 0.05)], flush=False)  # 1 is skipped by the camera
    assert timeline.last_arrival == 0.05


def test_every_arrival_is_started_dropped_or_skipped_by_the_camera():
    timeline = DeviceTimeline(constant(0.07), camera_fps=24)
    starts = schedule(timeline, [(i, i / 60) for i in range(120)])
    assert len(starts) + timeline.dropped + timeline.camera_skipped == 120


@pytest.mark.parametrize(
    ("source_fps", "camera_fps", "kept"),
    [(30, 30, 30), (30, 24, 24), (60, 30, 30), (30, 60, 30), (30, 15, 15), (30, 0, 30)],
)
def test_camera_delivers_at_most_its_frame_rate(source_fps, camera_fps, kept):
    timeline = DeviceTimeline(constant(0.001), camera_fps=camera_fps)
    starts = schedule(timeline, [(i, i / source_fps) for i in range(source_fps)])
    assert len(starts) == kept
    assert timeline.camera_skipped == source_fps - kept


def test_waiting_frame_is_decided_only_once_every_arrival_up_to_its_start_is_known():
    timeline = DeviceTimeline(constant(0.1))
    assert [s.index for s in timeline.offer("a", 0, 0.0)] == [0]
    assert timeline.settle() == (pytest.approx(0.1), [])
    assert timeline.offer("b", 1, 0.05) == []
    assert timeline.decision_time == pytest.approx(0.1)
    assert timeline.advance(0.099) == []  # an arrival up to 0.1 could still replace it
    (start,) = timeline.advance(0.1)
    assert (start.frame, start.start) == ("b", pytest.approx(0.1))
    assert timeline.decision_time is None and not timeline.has_waiting
    assert timeline.settle()[0] == pytest.approx(0.1)


def test_late_offer_and_timer_give_the_same_schedule():
    by_timer = DeviceTimeline(constant(0.1))
    by_offer = DeviceTimeline(constant(0.1))
    for timeline in (by_timer, by_offer):
        settled(timeline, timeline.offer("a", 0, 0.0))
        timeline.offer("b", 1, 0.05)
    via_timer = settled(by_timer, by_timer.advance(0.1)) + settled(
        by_timer, by_timer.offer("c", 2, 0.12)
    )
    via_offer = settled(by_offer, by_offer.offer("c", 2, 0.12))
    assert [(s.index, s.start) for s, _ in via_timer] == [(s.index, s.start) for s, _ in via_offer]
    assert by_timer.has_waiting and by_offer.has_waiting


def test_latency_model_sees_frames_in_start_order_with_their_start_times_and_runs():
    calls = []

    def latency(index, start, runs):
        calls.append((index, round(start, 6), runs))
        return 0.05

    schedule(DeviceTimeline(latency), FPS30, runs=lambda index: 1 + index % 2)
    assert calls == [
        (0, 0.0, 1), (1, 0.05, 2), (3, 0.1, 2), (4, 0.15, 1), (6, 0.2, 1), (7, 0.25, 2), (9, 0.3, 2)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        # one run (40 ms) a frame: each frame waits a little, none is dropped
        (lambda index: 1, [(0, 0.0), (1, 0.04), (2, 0.08), (3, 0.12), (4, 0.16), (5, 0.2)]),
        # frame 0 takes three runs (120 ms): 1-3 arrive meanwhile, 3 wins
        (lambda index: 3 if index == 0 else 1, [(0, 0.0), (3, 0.12), (4, 0.16), (5, 0.2)]),
        # every frame three runs: the phone keeps up with one frame in four
        (lambda index: 3, [(0, 0.0), (3, 0.12), (5, 0.24)]),
    ],
)
def test_the_runs_a_start_took_move_the_device_and_the_frames_after_it(runs, expected):
    timeline = DeviceTimeline(constant(0.04))
    arrivals = [(i, i / 30) for i in range(6)]
    assert schedule(timeline, arrivals, runs=runs) == expected


def test_arrivals_while_a_start_is_open_are_held_then_replayed_in_order():
    held = DeviceTimeline(constant(0.05))
    assert held.is_open is False
    assert [s.index for s in held.offer("a", 0, 0.0)] == [0] and held.is_open
    assert held.offer("b", 1, 0.02) == [] and held.offer("c", 2, 0.04) == []
    assert held.advance(1.0) == [] and held.decision_time is None and held.has_waiting
    latency, after = held.settle(runs=2)  # 100 ms: b and c arrived while busy, c wins
    assert latency == pytest.approx(0.1) and after == []
    assert held.decision_time == pytest.approx(0.1) and held.dropped == 1
    ((start, _),) = settled(held, held.flush())
    assert (start.frame, start.start) == ("c", pytest.approx(0.1))


def test_a_flush_while_a_start_is_open_takes_effect_when_it_is_settled():
    timeline = DeviceTimeline(constant(0.05))
    settled(timeline, timeline.offer("a", 0, 0.0))
    timeline.offer("b", 1, 0.01)
    (start,) = timeline.advance(0.05)
    timeline.offer("c", 2, 0.06)  # held: b's cost decides whether c waits
    assert timeline.flush() == []
    done = settled(timeline, [start])
    assert [(s.frame, round(s.start, 6)) for s, _ in done] == [("b", 0.05), ("c", 0.1)]


def test_held_arrivals_are_bounded_and_the_oldest_dropped():
    timeline = DeviceTimeline(constant(0.01))
    (first,) = timeline.offer("a", 0, 0.0)
    extra = MAX_HELD + 3
    for i in range(1, extra + 1):
        timeline.offer(f"f{i}", i, i / 1000)
    assert timeline.dropped == 3  # f1-f3, the oldest held
    done = settled(timeline, [first]) + settled(timeline, timeline.flush())
    assert timeline.started == len(done)
    assert timeline.started + timeline.dropped == 1 + extra
    assert all(s.index > 3 for s, _ in done[1:])


def test_time_going_backwards_is_clamped():
    timeline = DeviceTimeline(constant(0.01))
    starts = schedule(timeline, [(0, 1.0), (1, 0.5), (2, 1.1)])
    assert starts == [(0, 1.0), (1, 1.01), (2, 1.1)]


def test_bad_calls_are_refused():
    with pytest.raises(ValueError, match="camera_fps"):
        DeviceTimeline(constant(0.01), camera_fps=-1)
    negative = DeviceTimeline(constant(-0.01))
    negative.offer("a", 0, 0.0)
    with pytest.raises(ValueError, match="latency model"):
        negative.settle()
    timeline = DeviceTimeline(constant(0.01))
    with pytest.raises(RuntimeError, match="open start"):
        timeline.settle()
    timeline.offer("a", 0, 0.0)
    with pytest.raises(ValueError, match="at least one run"):
        timeline.settle(0)
