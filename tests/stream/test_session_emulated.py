"""Sessions on an emulated phone: same schedule and messages in real time and in fast mode."""

import asyncio
import dataclasses
import itertools

import cv2
import pytest
from fakes import RedSquareDetector, red_square_frame
from virtual_time import InlineExecutor, run_virtual

from detectors.core import Confirmer
from hw_sim import DeviceProfile, DeviceSimulator, ModelSpec, Thermal
from stream.pipelines import OptionError, Pipelines, SessionOptions
from stream.session import Session
from voting import KOfNVoter

SQUARE = red_square_frame()
EMPTY = red_square_frame(square=False)
MODEL = ModelSpec("s", "int8", macs=500_000_000)  # 1 GOP a frame


def phone(gop_s=10.0, jitter=0.2, camera_fps=0.0, thermal=None):
    return DeviceProfile(
        "phone",
        int8_gop_s=gop_s,
        jitter=jitter,
        camera_fps=camera_fps,
        preprocess_ms=5.0,
        thermal=thermal or Thermal(heat_tau_s=1.0, cool_tau_s=2.0, onset=0.3, min_speed=0.5),
    )


def clip(n=60, fps=30.0):
    """A square visible from frame 10 to 39, as ``(t, image)``."""
    return [(i / fps, SQUARE if 10 <= i < 40 else EMPTY) for i in range(n)]


def strip_host_timing(messages):
    return [{k: v for k, v in m.items() if k != "server_ms"} for m in messages]


async def play(profile, frames, realtime, seed=0, detector=None):
    """Messages (with the loop time each was sent at) of one session over ``frames``."""
    loop = asyncio.get_running_loop()
    sent = []

    async def send(message):
        sent.append((loop.time(), message))

    simulator = DeviceSimulator(profile, MODEL, seed)
    session = Session(
        detector or RedSquareDetector("s"),
        KOfNVoter(),
        simulator,
        send,
        InlineExecutor(),
        realtime=realtime,
    )
    runner = asyncio.create_task(session.run())
    start = loop.time()
    for t, image in frames:
        if realtime:
            await asyncio.sleep(max(0.0, start + t - loop.time()))
        else:
            await session.wait_idle()
        session.submit(lambda image=image: image, t)
    session.flush()
    await session.wait_idle()
    session.close()
    await runner
    return start, sent, session


@pytest.mark.parametrize(
    ("profile", "seed"),
    [
        (phone(), 0),
        (phone(), 7),
        (phone(gop_s=40.0, jitter=0.0), 0),  # faster than the camera: nothing dropped
        (phone(gop_s=4.0, camera_fps=24.0), 3),  # 255 ms a frame, a 24 fps camera
    ],
)
def test_fast_mode_gives_the_real_time_schedule_and_events(profile, seed):
    _, real, real_session = run_virtual(lambda: play(profile, clip(), True, seed))
    _, fast, fast_session = run_virtual(lambda: play(profile, clip(), False, seed))
    assert strip_host_timing([m for _, m in real]) == strip_host_timing([m for _, m in fast])
    assert any(m["type"] == "event" and m["event"] == "recognized" for _, m in real)
    assert real_session.dropped == fast_session.dropped
    assert real_session.processed == fast_session.processed


def test_real_time_session_publishes_each_frame_when_the_phone_would_be_done():
    start, sent, session = run_virtual(lambda: play(phone(), clip(), True))
    frames = [(at - start, m) for at, m in sent if m["type"] == "frame"]
    assert frames and session.processed == len(frames)
    for at, message in frames:
        assert at == pytest.approx(message["device"]["done_t"], abs=1e-3)
        assert message["device"]["latency_ms"] == pytest.approx(
            (message["device"]["done_t"] - message["device"]["start_t"]) * 1000, abs=0.2
        )


class CloseUpDetector(RedSquareDetector):
    """The red square, found with a first look and two close-ups whenever it is in view."""

    def detect(self, image):
        found = super().detect(image)
        return dataclasses.replace(found, runs=3) if len(found) else found


def test_the_phone_pays_for_the_detectors_close_ups():
    cool = phone(jitter=0.0, thermal=Thermal())  # 105 ms a frame: 5 ms + 100 ms network
    _, sent, _ = run_virtual(lambda: play(cool, clip(), False, detector=CloseUpDetector("s")))
    frames = [m for _, m in sent if m["type"] == "frame"]
    latencies = {bool(m["detections"]): m["device"]["latency_ms"] for m in frames}
    assert latencies == {False: pytest.approx(105.0), True: pytest.approx(305.0)}
    for a, b in itertools.pairwise(frames):  # the next frame starts once the close-ups are done
        assert b["device"]["start_t"] >= a["device"]["done_t"] - 1e-9


class CheckingDetector(RedSquareDetector):
    """The red square, with a check that costs two network runs, confirms, and remembers
    what it was asked about: the detection's box and the image it looks at."""

    def __init__(self) -> None:
        super().__init__("s")
        self.asked: list[tuple[tuple[float, ...], tuple[int, ...]]] = []

    def confirmer(self, image):
        def check(detection):
            self.asked.append((detection.box, image.shape[:2]))
            return 1.0

        return Confirmer(check, 0.5, 2.0)


def test_the_phone_pays_for_the_check_the_voter_asks_in_its_camera_pixels():
    cool = phone(jitter=0.0, thermal=Thermal())  # 105 ms a frame: 5 ms + 100 ms network
    small = dataclasses.replace(cool, camera_width=160, camera_height=120)  # half the frame
    detector = CheckingDetector()
    _, sent, _ = run_virtual(lambda: play(small, clip(), False, detector=detector))
    messages = [m for _, m in sent]
    (at,) = [i for i, m in enumerate(messages) if m.get("event") == "recognized"]
    assert messages[at - 1]["device"]["latency_ms"] == pytest.approx(305.0)  # 1 run + 2
    others = [m["device"]["latency_ms"] for m in messages[: at - 1] if m["type"] == "frame"]
    assert others == [pytest.approx(105.0)] * len(others) and others
    view = cv2.resize(SQUARE, (160, 120), interpolation=cv2.INTER_AREA)
    assert detector.asked == [(RedSquareDetector().detect(view).items[0].box, (120, 160))]


@pytest.mark.parametrize(
    ("profile", "seed"),
    [
        (phone(), 0),
        (phone(), 7),
        (phone(gop_s=40.0, jitter=0.0), 0),  # one look keeps up with the camera, three do not
        (phone(gop_s=4.0, camera_fps=24.0), 3),
    ],
)
def test_close_ups_keep_fast_mode_on_the_real_time_schedule(profile, seed):
    detector = CloseUpDetector("s")
    _, real, _ = run_virtual(lambda: play(profile, clip(), True, seed, detector))
    _, fast, _ = run_virtual(lambda: play(profile, clip(), False, seed, detector))
    assert strip_host_timing([m for _, m in real]) == strip_host_timing([m for _, m in fast])


def test_dropped_frames_are_counted_and_every_frame_is_accounted_for():
    cool = phone(jitter=0.0, thermal=Thermal())  # 105 ms a frame: 5 ms + 1 GOP at 10 GOP/s
    _, sent, session = run_virtual(lambda: play(cool, clip(), False))
    frames = [m for _, m in sent if m["type"] == "frame"]
    assert len(frames) == session.processed == 20  # 2.1 s of work in a 2 s clip
    assert session.processed + session.dropped == 60
    assert frames[-1]["device"]["dropped"] == session.dropped
    assert [m["device"]["dropped"] for m in frames[:3]] == [0, 2, 4]
    starts = [m["device"]["start_t"] for m in frames]
    assert all(b - a == pytest.approx(0.105) for a, b in itertools.pairwise(starts))


def test_sustained_load_slows_the_phone_down():
    hot = phone(
        jitter=0.0, thermal=Thermal(heat_tau_s=1.0, cool_tau_s=2.0, onset=0.2, min_speed=0.5)
    )
    _, sent, _ = run_virtual(lambda: play(hot, clip(n=300), False))
    latencies = [m["device"]["latency_ms"] for _, m in sent if m["type"] == "frame"]
    assert latencies[0] == pytest.approx(105.0)
    assert latencies[-1] > 1.8 * latencies[0]


def test_jitter_changes_with_the_seed():
    def latencies(seed):
        _, sent, _ = run_virtual(lambda: play(phone(), clip(), False, seed))
        return [m["device"]["latency_ms"] for _, m in sent if m["type"] == "frame"]

    assert latencies(1) == latencies(1)
    assert latencies(1) != latencies(2)


def test_host_slower_than_the_phone_is_counted():
    class SlowDetector(RedSquareDetector):
        def detect(self, image):
            import time

            time.sleep(0.02)
            return super().detect(image)

    async def main():
        async def send(message):
            pass

        simulator = DeviceSimulator(phone(gop_s=1000.0, jitter=0.0), MODEL)
        session = Session(SlowDetector("s"), KOfNVoter(), simulator, send, InlineExecutor())
        runner = asyncio.create_task(session.run())
        session.submit(lambda: SQUARE, 0.0)
        await session.wait_idle()
        session.close()
        await runner
        return session

    assert run_virtual(main).host_slower == 1


def test_a_short_host_stall_delays_messages_but_changes_no_frame_or_event():
    async def play_with_stall(realtime):
        """Like ``play``, but the event loop is blocked for 150 ms at frame 30 (a host hiccup):
        frames 30-33, captured by then, arrive in one burst."""
        loop = asyncio.get_running_loop()
        sent = []

        async def send(message):
            sent.append(message)

        simulator = DeviceSimulator(phone(gop_s=40.0), MODEL, 3)
        session = Session(
            RedSquareDetector("s"),
            KOfNVoter(),
            simulator,
            send,
            InlineExecutor(),
            realtime=realtime,
        )
        runner = asyncio.create_task(session.run())
        for i, (t, image) in enumerate(clip()):
            if not realtime:
                await session.wait_idle()
            elif i == 30:
                loop._virtual_now += 0.15
            elif not 30 < i < 34:
                await asyncio.sleep(max(0.0, t - loop.time()))
            session.submit(lambda image=image: image, t)
        session.flush()
        await session.wait_idle()
        session.close()
        await runner
        return strip_host_timing(sent), session.host_behind

    fast, _ = run_virtual(lambda: play_with_stall(False))
    real, behind = run_virtual(lambda: play_with_stall(True))
    assert behind == 0 and real == fast


def test_a_host_behind_the_phone_skips_overdue_frames_in_real_time():
    class StallingDetector(RedSquareDetector):
        """Takes 200 ms of the (virtual) clock per frame: far slower than the phone."""

        def detect(self, image):
            asyncio.get_event_loop()._virtual_now += 0.2
            return super().detect(image)

    async def main():
        async def send(message):
            pass

        simulator = DeviceSimulator(phone(gop_s=1000.0, jitter=0.0), MODEL)  # 6 ms a frame
        session = Session(StallingDetector("s"), KOfNVoter(), simulator, send, InlineExecutor())
        runner = asyncio.create_task(session.run())
        loop = asyncio.get_running_loop()
        for t, image in clip():
            await asyncio.sleep(max(0.0, t - loop.time()))
            session.submit(lambda image=image: image, t)
            assert len(session._starts) <= 10  # MAX_LAG 0.25 s of 30 fps frames, and one
        session.flush()
        await session.wait_idle()
        session.close()
        await runner
        return session

    session = run_virtual(main)
    assert session.host_behind > 0
    assert session.processed + session.dropped == 60


@pytest.mark.parametrize(
    ("profile", "tier", "expected"),
    [("low", None, "s"), ("high", None, "l"), ("high", "s", "s"), ("host", None, "l")],
)
def test_pipelines_pick_the_tier_per_profile_and_honour_the_override(profile, tier, expected):
    specs = [
        ModelSpec(t, p, macs)
        for t, macs in (("s", 20_000_000), ("l", 1_000_000_000))
        for p in ("int8", "fp32")
    ]
    detectors = {(s.tier, s.precision): RedSquareDetector(s.tier) for s in specs}
    pipelines = Pipelines(
        {"s": detectors["s", "int8"], "l": detectors["l", "int8"]},
        workers=1,
        models=[(s, detectors[s.tier, s.precision]) for s in specs],
    )
    try:
        simulator, detector = pipelines.simulator_for(SessionOptions(profile, tier))
        assert detector.tier == simulator.tier == expected
        if simulator.emulated:
            assert simulator.model.precision == ("fp32" if profile == "low" else "int8")
        with pytest.raises(OptionError, match="unknown model tier"):
            pipelines.simulator_for(SessionOptions(profile, "xl"))
    finally:
        pipelines.shutdown()


def test_detectors_without_cards_emulate_only_the_fixed_per_frame_cost():
    pipelines = Pipelines({"l": RedSquareDetector()}, workers=1)
    try:
        simulator, detector = pipelines.simulator_for(SessionOptions("low"))
        assert detector.tier == "l" and simulator.model.macs == 0
        assert simulator.device().nominal_latency == pytest.approx(0.012)
    finally:
        pipelines.shutdown()


def test_frames_larger_than_the_camera_are_detected_at_camera_size_boxes_as_received():
    small_camera = DeviceProfile("cam", int8_gop_s=10.0, camera_width=320, camera_height=240)
    seen = []

    class Recording(RedSquareDetector):
        def detect(self, image):
            seen.append(image.shape)
            return super().detect(image)

    async def main():
        sent = []

        async def send(message):
            sent.append(message)

        session = Session(
            Recording("s"),
            KOfNVoter(),
            DeviceSimulator(small_camera, MODEL),
            send,
            InlineExecutor(),
        )
        runner = asyncio.create_task(session.run())
        session.submit(lambda: red_square_frame(640, 480), 0.0)
        session.flush()
        await session.wait_idle()
        session.close()
        await runner
        return sent

    (frame,) = run_virtual(main)
    assert seen == [(240, 320, 3)]
    assert (frame["width"], frame["height"]) == (640, 480)
    box = frame["detections"][0]["box"] if frame["detections"] else None
    assert box == pytest.approx([213, 160, 321, 241], abs=3)


def test_a_jump_in_the_senders_clock_does_not_stall_the_session():
    async def main():
        loop = asyncio.get_running_loop()
        sent = []

        async def send(message):
            sent.append(message)

        simulator = DeviceSimulator(phone(jitter=0.0), MODEL)
        session = Session(RedSquareDetector("s"), KOfNVoter(), simulator, send, InlineExecutor())
        runner = asyncio.create_task(session.run())
        for t in (0.0, 0.5, 3600.0, 3600.5):  # an hour's jump in media time
            await asyncio.sleep(max(0.0, min(t, 1.0) - loop.time()) if t < 1 else 0.5)
            session.submit(lambda: SQUARE, t)
        session.flush()
        await session.wait_idle()
        session.close()
        await runner
        return loop.time(), sent

    elapsed, sent = run_virtual(main)
    assert len([m for m in sent if m["type"] == "frame"]) == 4
    assert elapsed < 3.0


def test_an_unknown_profile_is_an_option_error():
    pipelines = Pipelines({"l": RedSquareDetector()}, workers=1)
    try:
        with pytest.raises(OptionError, match="unknown device profile 'toaster'") as caught:
            pipelines.simulator_for(SessionOptions("toaster"))
        assert caught.value.code == "unknown_profile"
    finally:
        pipelines.shutdown()


def test_a_late_first_frame_does_not_delay_the_frames_after_it():
    """A slow first keyframe must not become every frame's latency: the media clock follows
    the least-delayed arrival."""
    profile = phone(gop_s=40.0, jitter=0.0)  # about 30 ms a frame: never busy at 30 fps
    late, delay = 0.2, 0.01

    async def main():
        loop = asyncio.get_running_loop()
        sent = []

        async def send(message):
            sent.append((loop.time(), message))

        simulator = DeviceSimulator(profile, MODEL)
        session = Session(RedSquareDetector("s"), KOfNVoter(), simulator, send, InlineExecutor())
        runner = asyncio.create_task(session.run())
        arrivals = [(late, 0.0)] + [(i / 30 + delay, i / 30) for i in range(9, 30)]
        for at, t in arrivals:
            await asyncio.sleep(max(0.0, at - loop.time()))
            session.submit(lambda: SQUARE, t)
        session.flush()
        await session.wait_idle()
        session.close()
        await runner
        return sent

    frames = [(at, m) for at, m in run_virtual(main) if m["type"] == "frame"]
    assert len(frames) == 22
    for at, message in frames[1:]:
        waited = at - (message["t"] + delay)
        assert waited == pytest.approx(message["device"]["latency_ms"] / 1000, abs=2e-3)
