"""Start ``python run.py serve`` on a loopback port: for tests, load tests, benchmarks and the
instances of ``run.py cluster``."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
ANNOUNCEMENT = re.compile(rb"open (\S+:(\d+))/")
"""The line ``serve`` prints once its sockets accept (``stream.server.serve``): its URL, port."""

Announced = queue.SimpleQueue[tuple[str, int] | None]


@dataclass(frozen=True, slots=True)
class LocalServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    relay: threading.Thread = field(repr=False)  # reads the server's stdout (relay_output)


def relay_output(stdout: IO[bytes], announced: Announced, quiet: bool) -> None:
    """Pass the server's stdout on (unless ``quiet``) to its end, then close it; put each URL
    it announces, as ``(url, port)``, in ``announced``, then ``None`` when the process ended.
    """
    # Read to the end even when quiet: a full pipe would block the server's next print.
    with stdout:
        for line in stdout:
            if not quiet:
                sys.stdout.write(line.decode(errors="replace"))
                sys.stdout.flush()
            if match := ANNOUNCEMENT.fullmatch(line.rstrip()):
                announced.put((match[1].decode(), int(match[2])))
    announced.put(None)


def start_server(
    *serve_args: str,
    port: int | None = None,
    quiet: bool = False,
    cores: Collection[int] | None = None,
) -> LocalServer:
    """A running server (its sockets accept) with ``serve_args``; stop it with :func:`stop_server`.

    It listens on ``port``, or by default on one its OS picks (``--port 0``) and announces:
    a port picked here and released would be free for another process to take first.
    It runs one process (``--workers 1``) unless ``serve_args`` name a count: a test or a
    benchmark on a machine of many cores would otherwise start a worker per core.
    With ``cores``, the server and its workers run on those cores only (its CPU affinity).

    Raises:
        RuntimeError: the process exited or did not announce its URL within ``START_TIMEOUT_S``.
    """
    workers = [] if "--workers" in serve_args else ["--workers", "1"]
    command = [sys.executable, str(ROOT / "run.py"), "serve", "--port", str(port or 0)]
    process = subprocess.Popen(
        [*command, *workers, *serve_args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        preexec_fn=None if cores is None else partial(os.sched_setaffinity, 0, cores),
    )
    assert process.stdout is not None  # stdout=PIPE
    announced: Announced = queue.SimpleQueue()
    relay = threading.Thread(
        target=relay_output, args=(process.stdout, announced, quiet), daemon=True
    )
    relay.start()
    try:
        first = announced.get(timeout=START_TIMEOUT_S)
    except queue.Empty:
        first = None
    if first is None:
        _stop(process, relay)
        raise RuntimeError(f"run.py serve {' '.join(serve_args)} did not start")
    url, bound = first
    return LocalServer(url, bound, process, relay)


def _stop(process: subprocess.Popen[bytes], relay: threading.Thread) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    # Its last lines are written before the caller moves on (a test's capture may close).
    relay.join(timeout=STOP_TIMEOUT_S)


def stop_server(server: LocalServer) -> None:
    """SIGTERM (graceful shutdown), then kill if it lingers."""
    _stop(server.process, server.relay)


@contextlib.contextmanager
def local_server(
    *serve_args: str, quiet: bool = False, cores: Collection[int] | None = None
) -> Iterator[LocalServer]:
    server = start_server(*serve_args, quiet=quiet, cores=cores)
    try:
        yield server
    finally:
        stop_server(server)
