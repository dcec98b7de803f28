"""Start ``python run.py serve`` on a free loopback port for tests, load tests and benchmarks."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class LocalServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(*serve_args: str, port: int | None = None, quiet: bool = False) -> LocalServer:
    """A running server (the page answers) with ``serve_args``; stop it with :func:`stop_server`.

    Raises:
        RuntimeError: the process exited or did not answer within ``START_TIMEOUT_S``.
    """
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "serve", "--port", str(port), *serve_args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    server = LocalServer(f"http://127.0.0.1:{port}", port, process)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(server.url + "/", timeout=1).close()
            return server
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_server(server)
                raise RuntimeError(f"run.py serve {' '.join(serve_args)} did not start") from None
            time.sleep(0.2)


def stop_server(server: LocalServer) -> None:
    """SIGTERM (graceful shutdown), then kill if it lingers."""
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@contextlib.contextmanager
def local_server(*serve_args: str, quiet: bool = False) -> Iterator[LocalServer]:
    server = start_server(*serve_args, quiet=quiet)
    try:
        yield server
    finally:
        stop_server(server)
