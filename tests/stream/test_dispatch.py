"""The parent of ``serve --workers N`` hands each connection to the least-loaded worker."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from stream.dispatch import CLOSED, HANDED, Dispatcher, channel_pair
from stream.server import listen

WORKERS = (101, 102, 103)


class Host:
    """A dispatcher over a loopback port and three stand-in workers (their channel ends)."""

    def __init__(self) -> None:
        self.sessions: dict[int, int] = {}
        self.dispatcher = Dispatcher(listen("127.0.0.1", 0), lambda: self.sessions)
        self.channels: dict[int, socket.socket] = {}
        self.ends: dict[int, socket.socket] = {}
        for pid in WORKERS:
            self.channels[pid], self.ends[pid] = channel_pair()
            self.dispatcher.add(pid, self.channels[pid])
        self.clients: list[socket.socket] = []

    @property
    def port(self) -> int:
        return int(self.dispatcher.listening[0].getsockname()[1])

    def connect(self, count: int) -> None:
        """``count`` clients connect at once; the parent accepts once they all wait."""
        for _ in range(count):
            self.clients.append(socket.create_connection(("127.0.0.1", self.port)))
        self.dispatcher.handle(self.dispatcher.listening[0])

    def received(self) -> dict[int, list[socket.socket]]:
        """The connections each worker was handed since the last call."""
        handed: dict[int, list[socket.socket]] = {pid: [] for pid in WORKERS}
        for pid, end in self.ends.items():
            end.setblocking(False)
            while True:
                try:
                    message, fds, _, _ = socket.recv_fds(end, 1, 1)
                except BlockingIOError:
                    break
                assert (message, len(fds)) == (HANDED, 1)
                handed[pid].append(socket.socket(fileno=fds[0]))
        return handed

    def report_closed(self, pid: int) -> None:
        self.ends[pid].send(CLOSED)
        self.dispatcher.handle(self.channels[pid])

    def end_worker(self, pid: int) -> None:
        self.ends.pop(pid).close()
        self.dispatcher.handle(self.channels[pid])

    def close(self) -> None:
        self.dispatcher.close()
        for sock in [*self.clients, *self.ends.values(), *self.channels.values()]:
            sock.close()


@pytest.fixture
def host() -> Iterator[Host]:
    running = Host()
    yield running
    running.close()


def counts(handed: dict[int, list[socket.socket]]) -> list[int]:
    return [len(handed[pid]) for pid in WORKERS]


def test_a_burst_of_connections_is_spread_evenly(host):
    host.connect(10)
    assert counts(host.received()) == [4, 3, 3]
    assert host.dispatcher.loads() == {101: 4, 102: 3, 103: 3}


def test_the_handed_socket_is_the_clients_connection(host):
    host.connect(1)
    (conn,) = host.received()[101]
    host.clients[0].sendall(b"hello")
    assert conn.recv(5) == b"hello"


def test_closed_connections_and_held_sessions_count_in_the_load(host):
    host.connect(3)
    host.received()
    host.sessions = {101: 2}  # e.g. two WebRTC peers whose offer connections have closed
    host.report_closed(102)
    assert host.dispatcher.loads() == {101: 3, 102: 0, 103: 1}
    host.connect(4)
    assert counts(host.received()) == [0, 3, 1]


def test_a_worker_that_ended_takes_no_more_connections(host):
    host.end_worker(102)
    assert host.channels[102] not in host.dispatcher.sources()
    host.connect(4)
    assert counts(host.received()) == [2, 0, 2]


def test_without_a_ready_worker_connections_wait_in_the_backlog(host):
    for pid in WORKERS:
        host.dispatcher.remove(pid)
    assert host.dispatcher.sources() == []
