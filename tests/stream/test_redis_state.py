"""Targets and session leases in a real redis-server (on a unix socket in the test's folder)."""

import asyncio
import time

import numpy as np
import pytest
from object_scenes import PERSPECTIVE, covers, frame_with

from detectors.objects import TargetError, TargetRegistry
from stream.cluster import Cluster
from stream.redis_state import (
    RedisLeases,
    RedisTargetStore,
    TargetWatcher,
    connect,
    connect_async,
)
from stream.server import open_targets

FIRST, SECOND = covers()[:2]


@pytest.fixture
def redis_server(tmp_path):
    server = Cluster(tmp_path, 0)
    server.start_redis()
    yield server
    server.stop_redis()


def registry_of(server: Cluster) -> TargetRegistry:
    store = RedisTargetStore(connect(server.redis_url), server.redis_url)
    store.refresh()
    return TargetRegistry(store)


def until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_a_target_added_through_one_registry_reaches_a_watching_one(redis_server):
    here, there = registry_of(redis_server), registry_of(redis_server)
    watcher = TargetWatcher(there.store)
    watcher.start()
    try:
        here.add("first", [FIRST.image])
        until(lambda: [t.name for t in there.list()] == ["first"])
        sent, got = here.index.targets[0].views[0], there.index.targets[0].views[0]
        np.testing.assert_array_equal(got.descriptors, sent.descriptors)
        found = there.detect(frame_with(FIRST.image, PERSPECTIVE)).items
        assert [d.label for d in found] == ["first"]
        here.remove("first")
        until(lambda: not there.list())
    finally:
        watcher.stop()


def test_a_name_another_server_took_is_refused_unless_replaced(redis_server):
    here, there = registry_of(redis_server), registry_of(redis_server)
    here.add("first", [FIRST.image])
    with pytest.raises(TargetError) as refused:
        there.add("first", [SECOND.image])  # its own list does not have it yet
    assert refused.value.code == "target_exists"
    there.add("first", [SECOND.image], replace=True)
    assert [t.name for t in registry_of(redis_server).list()] == ["first"]


def test_while_redis_is_down_writes_are_refused_and_what_was_loaded_is_recognized(
    redis_server,
):
    registry = registry_of(redis_server)
    registry.add("first", [FIRST.image])
    watcher = TargetWatcher(registry.store)
    watcher.start()
    try:
        redis_server.stop_redis()
        for call in (lambda: registry.add("second", [SECOND.image]), registry.store.refresh):
            with pytest.raises(TargetError) as refused:
                call()
            assert refused.value.code == "store_unavailable"
        found = registry.detect(frame_with(FIRST.image, PERSPECTIVE)).items
        assert [d.label for d in found] == ["first"]
        redis_server.start_redis()
        until(lambda: _added(registry, "second"))
        assert [t.name for t in registry.list()] == ["first", "second"]
    finally:
        watcher.stop()


def _added(registry: TargetRegistry, name: str) -> bool:
    try:
        registry.add(name, [SECOND.image])
    except TargetError as exc:
        assert exc.code == "store_unavailable"
        return False
    return True


async def held(server: Cluster, client: str) -> int:
    redis = connect_async(server.redis_url)
    try:
        return int(await redis.zcard(RedisLeases.key(client)))
    finally:
        await redis.aclose()


async def test_a_client_holds_at_most_its_limit_over_every_server(redis_server):
    one, two = (RedisLeases(connect_async(redis_server.redis_url)) for _ in range(2))
    try:
        first = await one.acquire("10.0.0.1", 2)
        assert first is not None and await two.acquire("10.0.0.1", 2) is not None
        assert await one.acquire("10.0.0.1", 2) is None
        assert await two.acquire("10.0.0.2", 2) is not None  # another client
        first.release()
        async with asyncio.timeout(5):
            while await held(redis_server, "10.0.0.1") != 1:
                await asyncio.sleep(0.05)
        assert await two.acquire("10.0.0.1", 2) is not None
    finally:
        await one.close()
        await two.close()


async def test_the_leases_of_a_server_that_died_expire(redis_server):
    dead = RedisLeases(connect_async(redis_server.redis_url), ttl_s=0.5)
    live = RedisLeases(connect_async(redis_server.redis_url), ttl_s=0.5)
    try:
        assert await dead.acquire("10.0.0.1", 1) is not None  # never renewed, never released
        assert await live.acquire("10.0.0.1", 1) is None
        async with asyncio.timeout(5):
            while await live.acquire("10.0.0.1", 1) is None:
                await asyncio.sleep(0.1)
    finally:
        await dead.redis.aclose()
        await live.close()


async def test_leases_granted_while_redis_was_down_are_counted_once_it_is_back(redis_server):
    leases = RedisLeases(connect_async(redis_server.redis_url))
    try:
        redis_server.stop_redis()
        lease = await leases.acquire("10.0.0.1", 1)
        assert lease is not None and not leases.reachable  # the server's own limits hold
        redis_server.start_redis()
        await leases.renew()
        assert leases.reachable and await held(redis_server, "10.0.0.1") == 1
    finally:
        await leases.close()


def test_a_server_that_cannot_reach_redis_exits_with_one_line_before_loading_models(
    tmp_path, capsys
):
    with pytest.raises(SystemExit) as exited:
        open_targets(tmp_path, "unix:///no/redis.sock")
    assert exited.value.code == 1
    assert capsys.readouterr().err.startswith(
        "run.py serve: error: --redis unix:///no/redis.sock: the shared targets store"
    )
