"""Properties of the schedule over random streams: what makes fast mode equal real time."""

from hypothesis import given, settings
from hypothesis import strategies as st

from hw_sim import DeviceTimeline

gaps = st.lists(st.floats(0.0, 0.2, allow_nan=False), min_size=1, max_size=60)
latencies = st.lists(st.floats(0.001, 0.3, allow_nan=False), min_size=1, max_size=60)


def arrivals_of(gap_list):
    t, out = 0.0, []
    for gap in gap_list:
        t += gap
        out.append(t)
    return out


def latency_model(values):
    return lambda index, start: values[index % len(values)]


def run(arrivals, values, camera_fps, timer_fractions=None):
    """Schedule as ``(index, start, latency)``; ``timer_fractions`` adds a real-time session's
    timer calls: ``advance(now)`` between arrivals, before the next one."""
    timeline = DeviceTimeline(latency_model(values), camera_fps)
    starts = []
    for index, t in enumerate(arrivals):
        if timer_fractions is not None and index > 0:
            previous = arrivals[index - 1]
            due = timeline.decision_time
            fraction = timer_fractions[index % len(timer_fractions)]
            now = previous + (t - previous) * fraction
            if due is not None and due < t:
                now = max(now, due)  # the timer fires when the phone frees
            if now < t:  # the caller's promise: every arrival up to ``now`` was offered
                starts += timeline.advance(now)
        starts += timeline.offer(index, index, t)
    starts += timeline.flush()
    return [(s.index, s.start, s.latency) for s in starts], timeline


@settings(max_examples=300, deadline=None)
@given(gaps, latencies, st.sampled_from([0.0, 15.0, 24.0, 30.0]))
def test_every_frame_is_started_dropped_or_skipped_once_newest_first(gap_list, values, fps):
    arrivals = arrivals_of(gap_list)
    schedule, timeline = run(arrivals, values, fps)
    indices = [i for i, _, _ in schedule]
    assert indices == sorted(set(indices))
    assert len(schedule) + timeline.dropped + timeline.camera_skipped == len(arrivals)
    free = float("-inf")
    for index, start, latency in schedule:
        assert start >= arrivals[index] and start >= free - 1e-12
        # started as soon as both the frame and the phone were there
        assert start == max(arrivals[index], free) or abs(start - free) < 1e-12
        # no newer frame had arrived by then (newest waiting frame wins); with a camera
        # rate, a newer arrival may have been one the camera did not capture
        if index + 1 < len(arrivals) and fps == 0:
            assert arrivals[index + 1] >= start or start == arrivals[index]
        free = start + latency


@settings(max_examples=300, deadline=None)
@given(
    gaps,
    latencies,
    st.sampled_from([0.0, 24.0]),
    st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=10),
)
def test_timer_calls_between_arrivals_do_not_change_the_schedule(gap_list, values, fps, fracs):
    arrivals = arrivals_of(gap_list)
    offers_only, _ = run(arrivals, values, fps)
    with_timers, _ = run(arrivals, values, fps, fracs)
    assert with_timers == offers_only
