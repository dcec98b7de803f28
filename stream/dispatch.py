"""Connections of ``serve --workers N``: the parent accepts each, the least-loaded worker serves it.

With ``SO_REUSEPORT`` the kernel would pick a worker by a hash of each connection's
addresses, blind to load, so long-lived streams pile up on some workers while the cores of
others idle (docs/scaling.md has the figures). So the parent listens,
accepts, and passes each connection (its file descriptor, ``SCM_RIGHTS`` over a Unix
socket pair per worker) to the ready worker with the least load, as Node.js's cluster
module hands connections round-robin, with HAProxy's ``leastconn`` choice:

load = the connections the worker holds + the session slots it holds

The worker reports each connection it closes on the same socket pair, so the first term is
exact the moment a connection is handed on, whatever the timing; the second counts WebRTC
peers, which outlive their signalling connection (a websocket session counts in both, the
same for every worker). Ties go to the worker started first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

HANDED = b"c"
"""The byte each handed connection travels with (parent to worker)."""
CLOSED = b"x"
"""What a worker sends once a connection it was handed has closed."""
ACCEPT_BURST = 64
"""Connections accepted per wake-up of one listening socket before the parent looks again."""


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """The parent's and the worker's end of one worker's channel (message boundaries kept)."""
    parent, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    parent.setblocking(False)
    return parent, worker


@dataclass(slots=True)
class _Worker:
    channel: socket.socket
    open: int = 0
    """Connections handed to it and not yet reported closed."""


class Dispatcher:
    """The parent's side: accepts on ``listening`` and hands each connection to a worker.

    ``sessions()`` gives the session slots each process holds (by pid). Workers take part
    from :meth:`add` (once ready) until :meth:`remove` (once reaped). Call from one thread.
    """

    def __init__(
        self, listening: list[socket.socket], sessions: Callable[[], Mapping[int, int]]
    ) -> None:
        self.listening = listening
        for sock in listening:
            sock.setblocking(False)
        self.sessions = sessions
        self._workers: dict[int, _Worker] = {}

    def add(self, pid: int, channel: socket.socket) -> None:
        self._workers[pid] = _Worker(channel)

    def remove(self, pid: int) -> None:
        """Forget a worker that ended; the connections still in its channel close with it."""
        worker = self._workers.pop(pid, None)
        if worker is not None:
            worker.channel.close()

    def close(self) -> None:
        """Stop accepting (new connections are refused); keep the workers' channels."""
        for sock in self.listening:
            sock.close()
        self.listening = []

    def sources(self) -> list[socket.socket]:
        """What to wait on: the listening sockets while a worker is ready, and the channels."""
        channels = [w.channel for w in self._workers.values()]
        return [*self.listening, *channels] if self._workers else channels

    def loads(self) -> dict[int, int]:
        """Each ready worker's load (pid: connections open + session slots held)."""
        held = self.sessions()
        return {pid: w.open + held.get(pid, 0) for pid, w in self._workers.items()}

    def handle(self, source: socket.socket) -> None:
        """``source`` is readable: accept its connections, or read a worker's reports."""
        if source in self.listening:
            self._accept(source)
            return
        pid = next(pid for pid, w in self._workers.items() if w.channel is source)
        while True:
            try:
                report = source.recv(len(CLOSED))
            except BlockingIOError:
                return
            except ConnectionError:
                report = b""
            if not report:  # the worker ended: its sentinel tells the supervisor the rest
                self.remove(pid)
                return
            self._workers[pid].open -= 1

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(ACCEPT_BURST):
            try:
                conn, _address = listening.accept()
            except (BlockingIOError, ConnectionAbortedError):
                return
            with conn:
                self._hand_on(conn)

    def _hand_on(self, conn: socket.socket) -> None:
        loads = self.loads()
        for pid in sorted(loads, key=loads.__getitem__):  # stable: ties in start order
            worker = self._workers[pid]
            try:
                socket.send_fds(worker.channel, [HANDED], [conn.fileno()])
            except (BlockingIOError, ConnectionError) as exc:  # stuck or gone: the next one
                log.warning("worker pid %d took no connection (%s)", pid, exc)
                continue
            worker.open += 1
            return
        log.warning("no worker took a connection: closed")


class Receiver:
    """A worker's side: serves the connections the parent hands over ``channel``.

    ``protocol`` makes the server's protocol for each (aiohttp's ``runner.server``); once
    a connection has closed, the parent is told.
    """

    def __init__(
        self,
        channel: socket.socket,
        protocol: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext | None,
    ) -> None:
        self.channel = channel
        self.protocol = protocol
        self.context = context
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        channel.setblocking(False)

    def start(self) -> None:
        self._loop.add_reader(self.channel.fileno(), self._receive)

    def stop(self) -> None:
        """Take no more connections (those in the channel close when the parent ends it)."""
        self._loop.remove_reader(self.channel.fileno())

    def _receive(self) -> None:
        while True:
            try:
                _message, fds, _flags, _address = socket.recv_fds(self.channel, len(HANDED), 1)
            except BlockingIOError:
                return
            except ConnectionError:
                fds = []
            if not fds:  # the parent is gone: its death is noticed by the orphan check
                self.stop()
                return
            task = self._loop.create_task(self._serve(socket.socket(fileno=fds[0])))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(
                lambda: _Reported(self.protocol(), self._closed), conn, ssl=self.context
            )
        except (OSError, ssl.SSLError) as exc:  # reset, or a TLS handshake that failed
            log.info("a handed connection failed to start: %s", exc)
            self._closed()

    def _closed(self) -> None:
        with contextlib.suppress(BlockingIOError, ConnectionError):  # the parent is gone
            self.channel.send(CLOSED)


class _Reported(asyncio.Protocol):
    """``inner`` as it is, and ``closed()`` once its connection is lost."""

    def __init__(self, inner: asyncio.Protocol, closed: Callable[[], None]) -> None:
        self.inner = inner
        self.closed = closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self.inner.connection_lost(exc)
        finally:
            self.closed()

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()
