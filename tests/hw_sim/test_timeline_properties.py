"""Properties of the schedule over random streams: what makes fast mode equal real time."""

from unittest.mock import patch

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
    return lambda index, start, runs: runs * values[index % len(values)]


def runs_of(values):
    return lambda index: values[index % len(values)]


def run(arrivals, values, camera_fps, timer_fractions=None, runs=(1,), settle_lag=0):
    """Schedule as ``(index, start, latency, dropped, camera_skipped)``, counts as seen at starts.

    ``timer_fractions`` adds a real-time session's timer calls: ``advance(now)``
    between arrivals, before the next one. Each start is settled with
    ``runs[index]`` runs once ``settle_lag`` more arrivals were offered (a host
    still busy with it while they come).
    """
    timeline = DeviceTimeline(latency_model(values), camera_fps)
    schedule = []
    open_start, offered_since = None, 0

    def take(starts):
        nonlocal open_start, offered_since
        assert len(starts) <= 1 and (not starts or open_start is None)
        if starts:
            open_start, offered_since = starts[0], 0

    def settle_due(force=False):
        nonlocal open_start
        while open_start is not None and (force or offered_since >= settle_lag):
            start, open_start = open_start, None
            latency, after = timeline.settle(runs_of(runs)(start.index))
            schedule.append(
                (start.index, start.start, latency, start.dropped, start.camera_skipped)
            )
            take(after)

    for index, t in enumerate(arrivals):
        if timer_fractions is not None and index > 0:
            previous = arrivals[index - 1]
            due = timeline.decision_time
            fraction = timer_fractions[index % len(timer_fractions)]
            now = previous + (t - previous) * fraction
            if due is not None and due < t:
                now = max(now, due)  # the timer fires when the phone frees
            if now < t:  # the caller's promise: every arrival up to ``now`` was offered
                take(timeline.advance(now))
                settle_due()
        take(timeline.offer(index, index, t))
        offered_since += 1
        settle_due()
    settle_due(force=True)
    take(timeline.flush())
    settle_due(force=True)
    return schedule, timeline


@settings(max_examples=300, deadline=None)
@given(gaps, latencies, st.sampled_from([0.0, 15.0, 24.0, 30.0]))
def test_every_frame_is_started_dropped_or_skipped_once_newest_first(gap_list, values, fps):
    arrivals = arrivals_of(gap_list)
    schedule, timeline = run(arrivals, values, fps)
    indices = [row[0] for row in schedule]
    assert indices == sorted(set(indices))
    assert len(schedule) + timeline.dropped + timeline.camera_skipped == len(arrivals)
    free = float("-inf")
    for index, start, latency, _, _ in schedule:
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


@settings(max_examples=300, deadline=None)
@given(
    gaps,
    latencies,
    st.sampled_from([0.0, 24.0]),
    st.lists(st.integers(1, 4), min_size=1, max_size=10),
    st.integers(0, 6),
)
def test_settling_late_changes_nothing_while_the_held_arrivals_fit(
    gap_list, values, fps, runs, lag
):
    arrivals = arrivals_of(gap_list)
    at_once, _ = run(arrivals, values, fps, runs=runs)
    with patch("hw_sim.timeline.MAX_HELD", len(arrivals)):  # room for all: nothing overflows
        late, timeline = run(arrivals, values, fps, runs=runs, settle_lag=lag)
    assert late == at_once
    assert len(late) + timeline.dropped + timeline.camera_skipped == len(arrivals)


@settings(max_examples=200, deadline=None)
@given(gaps, latencies, st.lists(st.integers(1, 4), min_size=1, max_size=10))
def test_each_frame_costs_its_runs(gap_list, values, runs):
    schedule, _ = run(arrivals_of(gap_list), values, 0.0, runs=runs)
    for index, _, latency, _, _ in schedule:
        assert latency == runs[index % len(runs)] * values[index % len(values)]
