import asyncio
from functools import partial

import pytest
from fakes import RedSquareDetector, red_square_frame

from hw_sim import DeviceProfile, DeviceSimulator, ModelSpec
from stream.session import FrameError, Session, SessionError
from voting import KOfNVoter


def failing_decode():
    raise FrameError("bad_image", "broken")


@pytest.fixture
def messages():
    return []


@pytest.fixture
def session(messages):
    async def send(message):
        messages.append(message)

    return Session(
        RedSquareDetector(), KOfNVoter(k=2, n=3), DeviceSimulator(DeviceProfile("t")), send
    )


async def run_frames(session, frames):
    runner = asyncio.create_task(session.run())
    for t, image in frames:
        await session.wait_idle()
        session.submit(partial(lambda im: im, image), t)
    await asyncio.wait_for(session.wait_idle(), 5)
    session.close()
    await asyncio.wait_for(runner, 5)


async def test_every_processed_frame_gives_a_frame_message_and_votes_give_events(session, messages):
    await run_frames(session, [(i / 10, red_square_frame()) for i in range(4)])
    frames = [m for m in messages if m["type"] == "frame"]
    events = [m for m in messages if m["type"] == "event"]
    assert [m["frame"] for m in frames] == [0, 1, 2, 3]
    assert frames[0]["device"] == {
        "profile": "t",
        "tier": "l",
        "latency_ms": pytest.approx(frames[0]["device"]["latency_ms"]),
        "dropped": 0,
    }
    assert frames[0]["detections"][0]["label"] == "fu"
    assert [(e["event"], e["t"]) for e in events] == [("recognized", 0.1)]


async def test_a_frame_that_cannot_be_decoded_reports_an_error_and_the_session_goes_on(
    session, messages
):
    runner = asyncio.create_task(session.run())
    session.submit(failing_decode, 0.0)
    await asyncio.wait_for(session.wait_idle(), 5)
    session.submit(partial(red_square_frame), 0.1)
    await asyncio.wait_for(session.wait_idle(), 5)
    session.close()
    await runner
    assert messages[0] == {"type": "error", "code": "bad_image", "message": "broken"}
    assert messages[1]["type"] == "frame"


async def test_frames_arriving_while_busy_are_dropped_but_the_newest_is_kept(session, messages):
    for i in range(5):
        session.submit(partial(red_square_frame), i / 30)
    runner = asyncio.create_task(session.run())
    await asyncio.wait_for(session.wait_idle(), 5)
    session.close()
    await runner
    (frame,) = [m for m in messages if m["type"] == "frame"]
    assert frame["frame"] == 4
    assert frame["device"]["dropped"] == 4


class BrokenVoter(KOfNVoter):
    """Fails on every frame, as the voter does for a media time going backwards."""

    def update(self, *args, **kwargs):
        raise ValueError("media time went backwards")


@pytest.mark.timeout(10)  # the bug this guards against was a waiter hanging forever
@pytest.mark.parametrize(
    "simulator",
    [
        DeviceSimulator(DeviceProfile("pass-through")),
        DeviceSimulator(DeviceProfile("phone", int8_gop_s=10.0), ModelSpec("l", "int8", 10**8)),
    ],
    ids=["pass-through", "emulated"],
)
@pytest.mark.parametrize("realtime", [True, False])
async def test_a_failure_inside_processing_ends_the_session_and_every_waiter_with_an_error(
    messages, simulator, realtime
):
    async def send(message):
        messages.append(message)

    session = Session(RedSquareDetector(), BrokenVoter(), simulator, send, realtime=realtime)
    runner = asyncio.create_task(session.run())
    session.submit(partial(red_square_frame), 0.0)
    session.flush()
    with pytest.raises(SessionError, match="ValueError: media time went backwards"):
        await session.wait_idle()
    with pytest.raises(SessionError):
        session.submit(partial(red_square_frame), 0.1)
    with pytest.raises(SessionError) as failure:
        await runner
    assert isinstance(failure.value.__cause__, ValueError)
    assert [(m["type"], m["code"]) for m in messages] == [("error", "internal")]
