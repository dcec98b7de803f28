import pytest

from hw_sim import DeviceTimeline


def constant(latency):
    return lambda index, start: latency


def schedule(timeline, arrivals, flush=True):
    """(index, start) of every started frame, for arrivals ``[(index, t), ...]``."""
    starts = []
    for index, t in arrivals:
        starts += timeline.offer(f"frame{index}", index, t)
    if flush:
        starts += timeline.flush()
    return [(s.index, round(s.start, 6)) for s in starts]


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
    assert timeline.offer("b", 1, 0.05) == []
    assert timeline.decision_time == pytest.approx(0.1)
    assert timeline.advance(0.099) == []  # an arrival up to 0.1 could still replace it
    (start,) = timeline.advance(0.1)
    assert (start.frame, start.start, start.finish) == ("b", pytest.approx(0.1), pytest.approx(0.2))
    assert timeline.decision_time is None and not timeline.has_waiting


def test_late_offer_and_timer_give_the_same_schedule():
    by_timer = DeviceTimeline(constant(0.1))
    by_offer = DeviceTimeline(constant(0.1))
    for timeline in (by_timer, by_offer):
        timeline.offer("a", 0, 0.0)
        timeline.offer("b", 1, 0.05)
    via_timer = by_timer.advance(0.1) + by_timer.offer("c", 2, 0.12)
    via_offer = by_offer.offer("c", 2, 0.12)
    assert [(s.index, s.start) for s in via_timer] == [(s.index, s.start) for s in via_offer]
    assert by_timer.has_waiting and by_offer.has_waiting


def test_latency_model_sees_frames_in_start_order_with_their_start_times():
    calls = []

    def latency(index, start):
        calls.append((index, round(start, 6)))
        return 0.05

    schedule(DeviceTimeline(latency), FPS30)
    assert calls == [(0, 0.0), (1, 0.05), (3, 0.1), (4, 0.15), (6, 0.2), (7, 0.25), (9, 0.3)]


def test_time_going_backwards_is_clamped():
    timeline = DeviceTimeline(constant(0.01))
    starts = schedule(timeline, [(0, 1.0), (1, 0.5), (2, 1.1)])
    assert starts == [(0, 1.0), (1, 1.01), (2, 1.1)]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="camera_fps"):
        DeviceTimeline(constant(0.01), camera_fps=-1)
    with pytest.raises(ValueError, match="latency model"):
        DeviceTimeline(constant(-0.01)).offer("a", 0, 0.0)
