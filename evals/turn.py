"""Debian's coturn on a loopback port with a shared secret, for tests and evaluations."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port free for both UDP and TCP (coturn listens on both)."""
    while True:
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        ):
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            try:
                tcp.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


@contextlib.contextmanager
def local_turn_server(folder: Path, secret: str) -> Iterator[int]:
    """``turnserver`` on loopback with ``use-auth-secret`` and ``secret``, its files in
    ``folder``; yields its port once it accepts, stops it after.

    Raises:
        RuntimeError: it exited or did not listen within ``START_TIMEOUT_S``.
    """
    port = free_port()
    process = subprocess.Popen(
        [
            "turnserver",
            "-n",  # no configuration file: only these flags
            "--listening-ip=127.0.0.1",
            f"--listening-port={port}",
            "--relay-ip=127.0.0.1",
            "--use-auth-secret",
            f"--static-auth-secret={secret}",
            "--realm=fuscan.test",
            "--allow-loopback-peers",  # the server and the browser are on loopback too
            "--no-tls",
            "--no-dtls",
            "--no-cli",
            f"--db={folder / 'turndb'}",
            f"--pidfile={folder / 'turnserver.pid'}",
            f"--log-file={folder / 'turnserver.log'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # it listens on TCP as on UDP: accepting means it is up
            if process.poll() is not None:
                raise RuntimeError(f"turnserver exited ({process.returncode})")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("turnserver did not listen") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
