"""Scan targets over the websocket API: register, recognise in a session, list, remove, refusals."""

import asyncio
import errno
import json

import numpy as np
import pytest
from aiohttp.test_utils import TestServer
from fakes import RedSquareDetector, jpeg
from object_scenes import PERSPECTIVE, covers, frame_with
from schema import CLIENT_MESSAGE, checked, receive_until
from websockets.asyncio.client import connect

from detectors.objects import TargetRegistry
from detectors.objects.store import TargetStore
from stream.pipelines import Pipelines
from stream.server import build_app


@pytest.fixture
async def targets_url(tmp_path):
    registry = TargetRegistry.open(tmp_path)
    pipelines = Pipelines({"l": RedSquareDetector()}, workers=1, targets=registry)
    server = TestServer(build_app(pipelines), host="127.0.0.1")
    await server.start_server()
    yield f"ws://127.0.0.1:{server.port}/ws"
    await server.close()


async def request(ws, message, image=None, valid=True):
    """Send ``message`` (and ``image`` as the next binary message); return the reply."""
    if valid:
        CLIENT_MESSAGE.validate(message)
    await ws.send(json.dumps(message))
    if image is not None:
        await ws.send(jpeg(image))
    return checked(json.loads(await ws.recv()))


async def test_a_registered_target_is_recognized_by_a_session(targets_url):
    cover = covers()[0]
    async with connect(targets_url) as admin:
        reply = await request(admin, {"type": "register_target", "name": "novel"}, cover.image)
        assert reply["type"] == "target_registered" and reply["name"] == "novel"
        assert reply["targets"] == 1 and reply["keypoints"] > 100
        listed = await request(admin, {"type": "list_targets"})
        assert [t["name"] for t in listed["targets"]] == ["novel"]
    async with connect(targets_url) as ws:
        await ws.send(json.dumps({"type": "start", "preset": "fast"}))
        await ws.recv()
        frame = jpeg(frame_with(cover.image, PERSPECTIVE))
        seen = []
        for i in range(12):
            await ws.send(json.dumps({"type": "timestamp", "t": i / 10}))
            await ws.send(frame)
            seen += await receive_until(ws, lambda m: m["type"] == "frame", limit=10.0)
            if any(m.get("event") == "recognized" for m in seen):
                break
        recognized = [m for m in seen if m.get("event") == "recognized"]
        assert [m["label"] for m in recognized] == ["novel"]


FLAT = np.full((240, 320, 3), 80, np.uint8)
TINY = covers()[0].image[:60, :60]


@pytest.mark.parametrize(
    ("message", "image", "code"),
    [
        ({"type": "register_target", "name": "fu"}, None, "bad_name"),
        ({"type": "register_target", "name": "../x"}, None, "bad_name"),
        ({"type": "register_target", "name": 3}, None, "bad_field"),
        ({"type": "register_target", "name": "x", "replace": "yes"}, None, "bad_field"),
        ({"type": "register_target", "name": "flat"}, FLAT, "no_texture"),
        ({"type": "register_target", "name": "tiny"}, TINY, "image_too_small"),
        ({"type": "remove_target", "name": "nobody"}, None, "unknown_target"),
    ],
)  # fmt: skip
async def test_target_refusals_are_coded_errors_and_the_socket_stays_usable(
    targets_url, message, image, code
):
    async with connect(targets_url) as ws:
        error = await request(ws, message, image, valid=False)
        assert error["type"] == "error" and error["code"] == code
        assert (await request(ws, {"type": "list_targets"}))["targets"] == []


async def test_registration_photo_is_not_a_frame_and_remove_forgets(targets_url):
    async with connect(targets_url) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.recv()
        reply = await request(ws, {"type": "register_target", "name": "a"}, covers()[1].image)
        assert reply["type"] == "target_registered"
        again = await request(ws, {"type": "register_target", "name": "a"}, covers()[2].image)
        assert again["code"] == "target_exists"
        assert (await request(ws, {"type": "remove_target", "name": "a"}))["type"] == (
            "target_removed"
        )
        assert (await request(ws, {"type": "list_targets"}))["targets"] == []


async def test_a_second_registration_before_the_photo_is_refused_and_the_first_kept(targets_url):
    async with connect(targets_url) as ws:
        await ws.send(json.dumps({"type": "register_target", "name": "first"}))
        async with asyncio.timeout(10):  # it used to get no answer at all
            second = await request(ws, {"type": "register_target", "name": "second"})
        assert second["code"] == "registration_pending" and "'first'" in second["message"]
        await ws.send(jpeg(covers()[1].image))  # the photo of the registration still waiting
        reply = checked(json.loads(await ws.recv()))
        assert reply["type"] == "target_registered" and reply["name"] == "first"
        assert [t["name"] for t in (await request(ws, {"type": "list_targets"}))["targets"]] == [
            "first"
        ]


async def test_a_server_without_targets_says_so(fake_server):
    async with connect(f"ws://127.0.0.1:{fake_server.port}/ws") as ws:
        error = await request(ws, {"type": "list_targets"})
        assert error["code"] == "targets_disabled"


async def test_a_targets_folder_that_cannot_be_written_is_a_coded_error(targets_url, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TargetStore, "save", full)
    async with connect(targets_url) as ws:
        reply = await request(ws, {"type": "register_target", "name": "cup"}, covers()[0].image)
        assert (reply["type"], reply["code"]) == ("error", "store_failed")
        assert (await request(ws, {"type": "list_targets"}))["targets"] == []  # still usable
