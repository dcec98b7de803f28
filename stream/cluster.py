"""``python run.py cluster``: a whole cluster on loopback, behind one URL.

Starts, in a temporary folder: ``redis-server`` (append-only file, fsync on every write, on
a unix socket), N ``run.py serve --redis`` instances on ports their OS picks, and HAProxy
(its configuration generated from ``stream/haproxy.cfg.in``) on ``--port``, health-checking
each instance's ``/readyz``. Prints the one URL to open; Ctrl-C or SIGTERM stops all of it
(the servers drain as on their own SIGTERM, Redis writes its file) and removes the folder.

The tests drive the same :class:`Cluster` (``tests/stream/test_cluster.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import socket
import string
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from stream.cli_types import positive_int
from stream.local_server import STOP_TIMEOUT_S, LocalServer, start_server, stop_server

TEMPLATE = Path(__file__).with_name("haproxy.cfg.in")
READY_TIMEOUT_S = 30.0
"""Longest wait for Redis to answer, or for HAProxy to reach a ready instance."""
REDIS_CONFIG = """\
port 0
unixsocket {folder}/redis.sock
unixsocketperm 700
dir {folder}
appendonly yes
appendfsync always
save ""
"""
"""Redis on a unix socket only (no port to pick, nothing on the network); every write is in
the append-only file before it is acknowledged, so a restart loses no registration."""


def redis_url(folder: Path) -> str:
    return f"unix://{folder}/redis.sock"


def haproxy_config(bind: str, servers: list[tuple[str, int]]) -> str:
    """HAProxy's configuration: listen on ``bind`` (``ADDRESS:PORT`` or ``fd@N``), balance
    over ``servers`` (host, port)."""
    lines = [f"    server s{i} {host}:{port}" for i, (host, port) in enumerate(servers, 1)]
    return string.Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        bind=bind, servers="\n".join(lines)
    )


def _wait(check: Callable[[], bool], what: str) -> None:
    """Call ``check()`` until it returns true, at most :data:`READY_TIMEOUT_S`."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.1)


def _terminate(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class Cluster:
    """Redis, the server instances and HAProxy, all on loopback (see module doc)."""

    folder: Path
    port: int
    instances: list[LocalServer] = field(default_factory=list)
    redis: subprocess.Popen[bytes] | None = None
    haproxy: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def redis_url(self) -> str:
        return redis_url(self.folder)

    def start_redis(self) -> None:
        """Start (or, after :meth:`stop_redis`, restart) Redis on its folder's files."""
        config = self.folder / "redis.conf"
        config.write_text(REDIS_CONFIG.format(folder=self.folder), encoding="utf-8")
        self.redis = subprocess.Popen(
            ["redis-server", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait(self._redis_answers, "redis-server")

    def _redis_answers(self) -> bool:
        assert self.redis is not None
        if self.redis.poll() is not None:
            raise RuntimeError(f"redis-server exited with status {self.redis.returncode}")
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(1.0)
                sock.connect(str(self.folder / "redis.sock"))
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop_redis(self) -> None:
        """SIGTERM: Redis syncs its append-only file and exits."""
        if self.redis is not None:
            _terminate(self.redis)
            self.redis = None

    def start_instances(self, count: int, *serve_args: str) -> None:
        """``count`` servers sharing this Redis, started side by side."""
        args = (
            *("--redis", self.redis_url, "--forwarded-allow-ips", "127.0.0.1"),
            *("--workers", "1"),  # several instances share this one machine already
            *serve_args,
        )
        with ThreadPoolExecutor(count) as pool:
            started = list(pool.map(lambda _: start_server(*args, quiet=True), range(count)))
        self.instances.extend(started)

    def start_haproxy(self, listener: socket.socket) -> None:
        """HAProxy on ``listener`` (bound here, inherited: no port picked and released)."""
        config = self.folder / "haproxy.cfg"
        servers = [("127.0.0.1", instance.port) for instance in self.instances]
        config.write_text(haproxy_config(f"fd@{listener.fileno()}", servers), encoding="utf-8")
        self.haproxy = subprocess.Popen(
            ["haproxy", "-db", "-f", str(config)],
            pass_fds=[listener.fileno()],
            stdout=subprocess.DEVNULL,
        )
        _wait(self._balancer_ready, "HAProxy")

    def _balancer_ready(self) -> bool:
        assert self.haproxy is not None
        if self.haproxy.poll() is not None:
            raise RuntimeError(f"haproxy exited with status {self.haproxy.returncode}")
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Stop everything that runs (balancer first, Redis last) and remove the folder."""
        if self.haproxy is not None:
            _terminate(self.haproxy)
            self.haproxy = None
        with ThreadPoolExecutor(max(1, len(self.instances))) as pool:
            list(pool.map(stop_server, self.instances))
        self.instances.clear()
        self.stop_redis()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running_cluster(instances: int = 3, port: int = 0, *serve_args: str) -> Iterator[Cluster]:
    """A started :class:`Cluster` on ``port`` (0: one the OS picks), stopped on exit."""
    for program in ("redis-server", "haproxy"):
        if shutil.which(program) is None:
            raise RuntimeError(f"{program} is not installed: run 'make system-deps'")
    with socket.create_server(("127.0.0.1", port)) as listener:
        cluster = Cluster(Path(tempfile.mkdtemp(prefix="fuscan-cluster-")), 0)
        cluster.port = listener.getsockname()[1]
        try:
            cluster.start_redis()
            cluster.start_instances(instances, *serve_args)
            cluster.start_haproxy(listener)
            yield cluster
        finally:
            cluster.stop()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8080, help="HAProxy's port (0: any free)")
    parser.add_argument("--instances", type=positive_int, default=3, help="servers behind it")
    parser.add_argument(
        "--profile", default="host", help="default device profile of the servers' sessions"
    )


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(number: int, _: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with running_cluster(args.instances, args.port, "--profile", args.profile) as cluster:
            for i, instance in enumerate(cluster.instances, 1):
                print(f"instance {i}: {instance.url} (pid {instance.process.pid})", flush=True)
            print(f"redis: {cluster.redis_url} (append-only file in {cluster.folder})")
            print(f"open {cluster.url}/", flush=True)
            reported: set[int] = set()
            while not stop.wait(1.0):
                for i, instance in enumerate(cluster.instances, 1):
                    code = instance.process.poll()
                    if code is not None and i not in reported:
                        reported.add(i)
                        print(f"instance {i} exited ({code}): HAProxy sends its clients to "
                              "the others", flush=True)  # fmt: skip
            print("stopping the cluster", flush=True)
    except (RuntimeError, OSError) as exc:
        print(f"run.py cluster: error: {exc}", flush=True)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py cluster", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
