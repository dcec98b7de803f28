"""Property-based fuzzing of the websocket messages and of image decoding: every answer is
either a normal result or a documented error, and nothing crashes or hangs."""

from __future__ import annotations

import asyncio
import json

import cv2
import numpy as np
import pytest
from fakes import RedSquareDetector, jpeg, red_square_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema import SCHEMA, checked

from stream.images import image_decoder
from stream.pipelines import Pipelines
from stream.session import FrameError
from stream.ws_api import WebsocketConnection

ERROR_CODES = set(SCHEMA["$defs"]["error"]["properties"]["code"]["enum"])
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
message_types = st.sampled_from(["start", "timestamp", "register_target", "frame", "", "START"])
messages = st.one_of(
    st.text(max_size=60),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {"type": message_types},
        optional={
            "profile": json_values | st.sampled_from(["host", "low", "mid", "high"]),
            "tier": json_values | st.sampled_from(["s", "m", "l"]),
            "preset": json_values | st.sampled_from(["strict", "balanced", "fast"]),
            "t": json_values | st.floats(min_value=0, max_value=1e6),
            "voting": json_values,
        },
    ).map(json.dumps),
)


def mutations(data: bytes) -> st.SearchStrategy[bytes]:
    cut = st.integers(0, len(data)).map(lambda n: data[:n])
    flip = st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), max_size=8).map(
        lambda edits: _apply(data, edits)
    )
    return cut | flip


def _apply(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for index, value in edits:
        out[index] = value
    return bytes(out)


SAMPLE_JPEG = jpeg(red_square_frame(64, 48))
SAMPLE_PNG = bytes(cv2.imencode(".png", red_square_frame(64, 48))[1])


@FUZZ
@given(st.binary(max_size=300) | mutations(SAMPLE_JPEG) | mutations(SAMPLE_PNG))
def test_image_decoding_returns_an_image_or_a_documented_error(data):
    try:
        image = image_decoder(data)()
    except FrameError as exc:
        assert exc.code in ERROR_CODES
    else:
        assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8


class RecordingSocket:
    closed = False

    def __init__(self) -> None:
        self.sent: list[dict] = []

    async def send_str(self, text: str) -> None:
        self.sent.append(json.loads(text))


@pytest.fixture(scope="module")
def pipelines():
    shared = Pipelines({"l": RedSquareDetector()}, workers=1)
    yield shared
    shared.shutdown()


@FUZZ
@given(st.lists(messages | st.binary(max_size=64).map(lambda b: b"\xff\xd8" + b), max_size=6))
def test_any_message_sequence_gets_only_documented_answers(pipelines, sequence):
    async def scenario() -> list[dict]:
        socket = RecordingSocket()
        connection = WebsocketConnection(socket, pipelines, "host")
        try:
            for message in sequence:
                try:
                    if isinstance(message, str):
                        await connection.on_text(message)
                    else:
                        connection.on_frame(message)
                except FrameError as exc:
                    socket.sent.append({"type": "error", "code": exc.code, "message": str(exc)})
            if connection.session is not None:
                await asyncio.wait_for(connection.session.wait_idle(), 5)
        finally:
            connection.close()
        return socket.sent

    for answer in asyncio.run(scenario()):
        checked(answer)
        if answer["type"] == "error":
            assert answer["code"] in ERROR_CODES
