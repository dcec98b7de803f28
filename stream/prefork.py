"""Pre-forked workers: a parent process that keeps N worker processes running.

``serve --workers N`` runs :class:`Supervisor` in the parent. Each worker is a fresh
(spawned) interpreter with its own event loop, peer connections and ONNX Runtime
sessions; it reports once it accepts connections, and from then on the parent's
:class:`stream.dispatch.Dispatcher` hands it connections. The parent restarts a worker that dies
after that (its clients see their connections close and reconnect), and on SIGTERM or
SIGINT asks every worker to drain, as a single process does, and waits for them.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from stream.dispatch import Dispatcher, channel_pair

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's
    cpuset), not every core of the host."""
    return len(os.sched_getaffinity(0)) or os.cpu_count() or 1


def worker_cores(slot: int, count: int, usable: Sequence[int]) -> set[int]:
    """The cores worker ``slot`` of ``count`` is pinned to: its own equal share of ``usable``,
    in order (with 16 cores and 8 workers, worker 0 gets the first two).

    Raises:
        ValueError: fewer ``usable`` cores than workers.
    """
    share = len(usable) // count
    if share == 0:
        raise ValueError(f"{count} workers cannot each have a core of their own: {len(usable)}")
    first = slot * share
    return set(sorted(usable)[first : first + share])


Ready = Callable[[], None]
"""What a worker calls once it accepts connections."""


class WorkerStartError(RuntimeError):
    """A worker exited before it was ready (a model that does not load, a port taken)."""


@dataclass(slots=True)
class Worker:
    process: BaseProcess
    said_ready: Connection  # the worker's one message once it accepts connections
    channel: socket.socket  # the parent's end of the worker's connections (stream.dispatch)
    ready: bool = False
    reaped: bool = False


def notify_ready(connection: Connection) -> Ready:
    """The ``ready`` a worker gets: tells the parent on ``connection``."""

    def ready() -> None:
        connection.send(True)
        connection.close()

    return ready


class Supervisor:
    """Runs ``target(*args, channel, ready)`` in ``count`` spawned processes until told to stop.

    ``target`` must be a module-level function (it is pickled by reference) that serves the
    connections ``dispatcher`` hands it on ``channel`` (:class:`stream.dispatch.Receiver`),
    calls ``ready()`` once it does, and returns after SIGTERM once it has drained.
    ``on_exit(pid)`` runs in the parent for every worker that ended, whatever the cause,
    before any replacement starts (free what it held). With ``pin``, each worker (and its
    replacement) runs on its own share of the parent's cores only (:func:`worker_cores`).

    Call :meth:`start`, then :meth:`run`; :meth:`run` returns after a stop signal once every
    worker has ended (those still running ``stop_timeout`` s after it are killed).
    """

    def __init__(
        self,
        target: Callable[..., None],
        args: tuple[Any, ...],
        count: int,
        on_exit: Callable[[int], None],
        stop_timeout: float,
        dispatcher: Dispatcher,
        pin: bool = False,
    ) -> None:
        self.target, self.args, self.count = target, args, count
        self.cores = sorted(os.sched_getaffinity(0)) if pin else None
        self.dispatcher = dispatcher
        self.on_exit = on_exit
        self.stop_timeout = stop_timeout
        self.workers: list[Worker] = []
        self.restarts = 0
        self._context = multiprocessing.get_context("spawn")
        self._stopping = False
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)

    def start(self) -> None:
        """Start every worker and wait until each accepts connections (or a stop signal).

        Raises:
            WorkerStartError: a worker exited first; the others are stopped.
        """
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        signal.set_wakeup_fd(self._wake_write.fileno())
        self.workers = [self._spawn(slot) for slot in range(self.count)]
        while not self._stopping and not all(w.ready for w in self.workers):
            for slot, worker in enumerate(self.workers):
                if not worker.process.is_alive() and not worker.ready:
                    code = worker.process.exitcode
                    self.stop()
                    raise WorkerStartError(f"worker {slot} exited with status {code} at start")
            self._wait_once()

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers if w.process.pid is not None]

    def run(self) -> None:
        """Keep the workers running until a stop signal, then stop them."""
        while not self._stopping:
            self._wait_once()
            for slot, worker in enumerate(self.workers):
                if worker.process.is_alive() or self._stopping:
                    continue
                self._reap(worker)
                if not worker.ready:
                    self.stop()
                    raise WorkerStartError(f"worker {slot}'s replacement exited at start")
                log.warning(
                    "worker %d (pid %s) exited with status %s; starting another",
                    slot,
                    worker.process.pid,
                    worker.process.exitcode,
                )
                self.workers[slot] = self._spawn(slot)
                self.restarts += 1
        self.stop()

    def stop(self) -> None:
        """Stop accepting, SIGTERM every worker (each drains), wait, kill those left, reap
        them all."""
        self._stopping = True
        self.dispatcher.close()
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.terminate()
        deadline = time.monotonic() + self.stop_timeout
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.warning("worker pid %s did not stop in time: killing it", worker.process.pid)
                worker.process.kill()
                worker.process.join()
            self._reap(worker)
        signal.set_wakeup_fd(-1)
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        self._wake_read.close()
        self._wake_write.close()

    def _spawn(self, slot: int) -> Worker:
        said_ready, tell_ready = self._context.Pipe(duplex=False)
        channel, theirs = channel_pair()
        process = self._context.Process(
            target=self.target,
            args=(*self.args, theirs, tell_ready),
            name=f"fuscan-worker-{slot}",
        )
        process.start()
        if self.cores is not None and process.pid is not None:
            # Set before the child starts any thread: its threads inherit it.
            os.sched_setaffinity(process.pid, worker_cores(slot, self.count, self.cores))
        tell_ready.close()  # the worker holds the only writer: its death reads as EOF
        theirs.close()  # and the only other end of its channel
        return Worker(process, said_ready, channel)

    def _reap(self, worker: Worker) -> None:
        if worker.reaped:
            return
        worker.reaped = True
        worker.said_ready.close()
        if worker.process.pid is not None:
            self.dispatcher.remove(worker.process.pid)
        worker.channel.close()
        worker.process.join()
        if worker.process.pid is not None:
            self.on_exit(worker.process.pid)

    def _wait_once(self) -> None:
        """Block until a worker says it is ready, one ends, or a signal arrives."""
        waiting = [w.said_ready for w in self.workers if not w.said_ready.closed]
        sentinels = [w.process.sentinel for w in self.workers if not w.reaped]
        dispatched = self.dispatcher.sources()
        for source in wait([*waiting, *sentinels, *dispatched, self._wake_read]):
            if source is not self._wake_read and isinstance(source, socket.socket):
                self.dispatcher.handle(source)
            elif source is self._wake_read:
                with contextlib.suppress(BlockingIOError):
                    while self._wake_read.recv(64):  # the wake-up bytes of the signals so far
                        pass
            elif isinstance(source, Connection):
                worker = next(w for w in self.workers if w.said_ready is source)
                with contextlib.suppress(EOFError):  # ended first: its sentinel says the rest
                    worker.ready = bool(source.recv())
                source.close()
                if worker.ready and worker.process.pid is not None:
                    self.dispatcher.add(worker.process.pid, worker.channel)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True
