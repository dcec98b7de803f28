"""State that the servers of a cluster share in Redis (``serve --redis URL``).

- Registered scan targets (:class:`RedisTargetStore`, a
  :class:`detectors.objects.store.TargetSource`): one hash per stored revision of a target
  (its metadata, features and reference photos), an index hash name -> revision, and a
  version counter that every change increments in the same transaction and announces on a
  pub/sub channel. Each server's :class:`TargetWatcher` thread fetches what changed when the
  version differs from the one it has: at once on the announcement, and at the latest
  :data:`POLL_S` later when the announcement was missed (a reconnect). The registry then
  sees the store's version move at its next frame and takes the fetched targets in without
  a network call, so a registration on any server is recognised on all of them within a
  second.
- Sessions per client over the whole cluster (:class:`RedisLeases`): one sorted set per
  client address whose members are leases scored by their expiry (Redis's clock). A server
  renews its leases every third of :data:`LEASE_TTL_S`; the leases of a server that died
  expire by themselves, so no count leaks.

While Redis cannot be reached, registrations are refused (``store_unavailable``), the targets
already loaded are still recognised, and sessions are admitted on the server's own limits;
the watcher and the lease renewal reconnect by themselves.

Only ``serve --redis`` imports this module (and redis-py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, cast

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from detectors.core import ImageBGR
from detectors.objects import Target, TargetError, TargetRegistry
from detectors.objects.features import Features, reference_features
from detectors.objects.store import (
    FEATURE_VERSION,
    FORMAT,
    StoredTarget,
    check_name,
    decode_photo,
    encode_photo,
    pack_features,
    unpack_features,
)

log = logging.getLogger(__name__)

PREFIX = "fuscan:"
INDEX = PREFIX + "targets"
"""Hash: target name -> the revision that holds it."""
VERSION = PREFIX + "targets:version"
"""Counter incremented by every registration and removal."""
CHANNEL = PREFIX + "targets"
"""Pub/sub channel on which each change announces the new version."""
POLL_S = 0.5
"""Longest a watcher waits for an announcement before it compares versions anyway."""
RETRY_S = 1.0
"""Pause between attempts to reach Redis again after a failure."""
TIMEOUT_S = 2.0
"""Socket timeout of every Redis command (connect and reply): no wait is unbounded."""
LEASE_TTL_S = 15.0
"""A session lease not renewed for this long expires (its server died)."""

UNAVAILABLE = "the shared targets store (Redis) cannot be reached: try again later"

# KEYS[1]: the client's lease set; ARGV: member, limit, ttl ms. 1 if granted, else 0.
_ACQUIRE = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
# KEYS: lease sets; ARGV[1]: ttl ms, ARGV[i + 1]: the member in KEYS[i]. Re-adds members
# lost while Redis was away (restarted without them, or never told of them).
_RENEW = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, ms + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call('PEXPIRE', key, ARGV[1])
end
return #KEYS
"""


def connect(url: str) -> redis.Redis:
    """A client of ``url`` (``redis://HOST:PORT/DB``, ``unix:///PATH``) that tries each
    command once within :data:`TIMEOUT_S`: callers decide when to try again."""
    return redis.Redis.from_url(
        url,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
    )


def connect_async(url: str) -> redis.asyncio.Redis:
    """:func:`connect` for the event loop."""
    return redis.asyncio.Redis.from_url(
        url,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        retry=redis.asyncio.retry.Retry(NoBackoff(), 0),
    )


def _key(revision: str) -> str:
    return f"{PREFIX}target:{revision}"


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """Redis failures as the registry's coded errors (docs/api.md)."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError):
        raise TargetError("store_unavailable", UNAVAILABLE) from None
    except redis.RedisError as exc:  # out of memory, a read-only replica, ...
        raise TargetError("store_failed", f"shared targets store: {exc}") from None


class RedisTargetStore:
    """The targets of every server, in Redis: a :class:`detectors.objects.store.TargetSource`.

    :meth:`version` and :meth:`load_all` answer from what :meth:`refresh` (the watcher's
    thread) fetched last: the registry calls them per frame, and they never wait on Redis.
    """

    def __init__(self, client: redis.Redis, url: str) -> None:
        self.redis = client
        self.url = url
        self._loaded: dict[str, tuple[str, Target]] = {}  # name -> (revision, target)
        self._version: bytes | None = None

    def __str__(self) -> str:
        return f"Redis {self.url}"

    def version(self) -> bytes | None:
        """The version :meth:`refresh` fetched last."""
        return self._version

    def load_all(self) -> list[StoredTarget]:
        """The targets :meth:`refresh` fetched last, by name."""
        return [
            StoredTarget(target, len(target.views), None)
            for _, (_, target) in sorted(self._loaded.items())
        ]

    def stored_version(self) -> bytes | None:
        """The counter in Redis now (``None`` before the first change)."""
        with _reachable():
            return cast(bytes | None, self.redis.get(VERSION))

    def refresh(self) -> None:
        """Fetch the targets that changed since the last refresh, then the version read
        before them (a change made meanwhile shows as a version still to fetch).

        Raises:
            TargetError: ``store_unavailable``; what was fetched before stays.
        """
        version = self.stored_version()
        with _reachable():
            index = cast(dict[bytes, bytes], self.redis.hgetall(INDEX))
            loaded: dict[str, tuple[str, Target]] = {}
            for raw_name, raw_revision in index.items():
                name, revision = raw_name.decode(), raw_revision.decode()
                known = self._loaded.get(name)
                if known is not None and known[0] == revision:
                    loaded[name] = known
                    continue
                fields = cast(dict[bytes, bytes], self.redis.hgetall(_key(revision)))
                if not fields:  # replaced since the index was read: the next version has it
                    continue
                try:
                    loaded[name] = (revision, _target(name, fields))
                except Exception as exc:  # a bad entry is skipped, never fatal
                    log.warning("skipping target %r in Redis: %s", name, exc)
        self._loaded = loaded
        self._version = version

    def save(
        self, name: str, images: list[ImageBGR], views: tuple[Features, ...], replace: bool
    ) -> str:
        """Store ``name`` as a new revision (returned) and announce it, in one transaction."""
        revision = uuid.uuid4().hex
        meta = {"format": FORMAT, "name": name, "images": len(images), "features": FEATURE_VERSION}
        fields: dict[str, bytes] = {
            "meta": json.dumps(meta).encode(),
            "features": pack_features(views),
            **{f"image:{i}": encode_photo(image) for i, image in enumerate(images)},
        }

        def change(pipe: Any, old: bytes | None) -> None:
            if old is not None and not replace:
                raise TargetError("target_exists", f"a target named {name!r} exists (replace it?)")
            pipe.hset(_key(revision), mapping=fields)
            pipe.hset(INDEX, name, revision)

        self._transaction(name, change)
        return revision

    def remove(self, name: str) -> None:
        def change(pipe: Any, old: bytes | None) -> None:
            if old is None:
                raise TargetError("unknown_target", f"no target named {name!r}")
            pipe.hdel(INDEX, name)

        self._transaction(name, change)

    def _transaction(self, name: str, change: Any) -> None:
        """Apply ``change(pipe, old revision)`` atomically with the version bump and the
        announcement, again if another server changed the index in between."""
        with _reachable(), self.redis.pipeline() as pipeline:
            pipe: Any = pipeline  # redis-py leaves watch() untyped
            while True:
                try:
                    pipe.watch(INDEX)
                    old = cast(bytes | None, pipe.hget(INDEX, name))
                    pipe.multi()
                    change(pipe, old)
                    if old is not None:
                        pipe.delete(_key(old.decode()))
                    pipe.incr(VERSION)
                    pipe.publish(CHANNEL, name)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue


def _target(name: str, fields: dict[bytes, bytes]) -> Target:
    """A target from its Redis hash; features of another version are recomputed from photos.

    Raises:
        ValueError, KeyError, TargetError: the entry is not a valid target.
    """
    meta = json.loads(fields[b"meta"])
    if meta.get("format") != FORMAT or meta.get("name") != name:
        raise ValueError(f"unknown format {meta.get('format')!r} or name {meta.get('name')!r}")
    check_name(name)
    count = int(meta["images"])
    views = None
    if meta.get("features") == FEATURE_VERSION:
        views = unpack_features(fields[b"features"], count, f"Redis target {name!r}")
    if views is None:
        log.info("target %r: computing features (%s)", name, FEATURE_VERSION)
        photos = [decode_photo(fields[f"image:{i}".encode()], f"{name} #{i}") for i in range(count)]
        views = tuple(reference_features(photo) for photo in photos)
    return Target(name, views)


class TargetWatcher:
    """A thread that keeps ``store`` up to date with Redis (see module doc).

    :meth:`start` it once the server runs and :meth:`stop` it on shutdown; fetches happen in
    this thread, never on the event loop or in a frame's inference.
    """

    def __init__(self, store: RedisTargetStore) -> None:
        self.store = store
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="targets-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=TIMEOUT_S + POLL_S)

    def _run(self) -> None:
        pubsub: Any = None
        reachable = True
        while not self._stop.is_set():
            try:
                if pubsub is None:
                    client: Any = self.store.redis  # redis-py leaves pubsub() untyped
                    pubsub = client.pubsub(ignore_subscribe_messages=True)
                    pubsub.subscribe(CHANNEL)
                if self.store.stored_version() != self.store.version():
                    self.store.refresh()
                if not reachable:
                    log.warning("Redis reachable again (%s)", self.store.url)
                    reachable = True
                pubsub.get_message(timeout=POLL_S)
            except (redis.RedisError, TargetError, OSError) as exc:
                if reachable:
                    log.warning("Redis unreachable (%s), recognising what was loaded: %s",
                                self.store.url, exc)  # fmt: skip
                    reachable = False
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        pubsub.close()
                    pubsub = None
                self._stop.wait(RETRY_S)
        if pubsub is not None:
            pubsub.close()


@dataclass(slots=True)
class RedisLease:
    """One session's slot among its client's; :meth:`release` (idempotent) gives it back."""

    owner: RedisLeases
    client: str
    member: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.owner.forget(self)


class RedisLeases:
    """Per-client session counts over every server (a :class:`stream.leases.ClientLeases`).

    Call from the event loop; :meth:`run` (a task for the server's lifetime) renews this
    server's leases and finds Redis again after an outage.
    """

    def __init__(self, client: redis.asyncio.Redis, ttl_s: float = LEASE_TTL_S) -> None:
        self.redis = client
        self.ttl_ms = int(ttl_s * 1000)
        self.instance = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.reachable = True
        self._numbers = itertools.count()
        self._live: dict[str, RedisLease] = {}
        self._removals: set[asyncio.Task[None]] = set()
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)

    @staticmethod
    def key(client: str) -> str:
        return f"{PREFIX}leases:{client}"

    async def acquire(self, client: str, limit: int) -> RedisLease | None:
        """A lease, or ``None`` when ``client`` holds ``limit`` over the cluster. While Redis
        is unreachable every lease is granted (the server's own limits still hold) and
        counted once Redis is back."""
        lease = RedisLease(self, client, f"{self.instance}:{next(self._numbers)}")
        if self.reachable:
            try:
                granted = await self._acquire(
                    keys=[self.key(client)], args=[lease.member, limit, self.ttl_ms]
                )
            except redis.RedisError as exc:
                self._unreachable(exc)
            else:
                if not granted:
                    return None
        self._live[lease.member] = lease
        return lease

    def forget(self, lease: RedisLease) -> None:
        """Stop renewing ``lease`` and delete it from Redis (it expires if that fails)."""
        self._live.pop(lease.member, None)
        task = asyncio.get_running_loop().create_task(self._remove(lease))
        self._removals.add(task)
        task.add_done_callback(self._removals.discard)

    async def _remove(self, lease: RedisLease) -> None:
        with contextlib.suppress(redis.RedisError):
            await self.redis.zrem(self.key(lease.client), lease.member)

    async def renew(self) -> None:
        """Renew every live lease (or, with none, check that Redis answers)."""
        leases = list(self._live.values())
        try:
            if leases:
                await self._renew(
                    keys=[self.key(lease.client) for lease in leases],
                    args=[self.ttl_ms, *(lease.member for lease in leases)],
                )
            else:
                await self.redis.ping()
        except redis.RedisError as exc:
            self._unreachable(exc)
            return
        if not self.reachable:
            log.warning("Redis reachable again: session leases renewed")
            self.reachable = True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            await self.renew()

    async def close(self) -> None:
        for lease in list(self._live.values()):
            lease.release()
        if self._removals:
            await asyncio.wait(self._removals, timeout=TIMEOUT_S)
        await self.redis.aclose()

    def _unreachable(self, exc: Exception) -> None:
        if self.reachable:
            log.warning("Redis unreachable, admitting on this server's limits: %s", exc)
            self.reachable = False


@dataclass(slots=True)
class SharedState:
    """Everything ``serve --redis URL`` shares: the targets and the per-client session leases."""

    registry: TargetRegistry
    leases: RedisLeases
    watcher: TargetWatcher

    @classmethod
    def open(cls, url: str) -> SharedState:
        """Connect and load the registered targets.

        Raises:
            TargetError: ``store_unavailable`` when Redis cannot be reached now.
        """
        store = RedisTargetStore(connect(url), url)
        store.refresh()
        registry = TargetRegistry(store)
        return cls(registry, RedisLeases(connect_async(url)), TargetWatcher(store))

    async def lifetime(self, _: object) -> AsyncIterator[None]:
        """An aiohttp ``cleanup_ctx``: watch and renew while the server runs."""
        self.watcher.start()
        renewal = asyncio.create_task(self.leases.run())
        yield
        renewal.cancel()
        await asyncio.get_running_loop().run_in_executor(None, self.watcher.stop)
        await self.leases.close()
