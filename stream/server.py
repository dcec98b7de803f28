"""One aiohttp application on one port: the demo page, WebRTC signalling and the websocket API."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import re
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import aioice.ice
import cv2
import uvloop
from aiohttp import web
from aiohttp.web_log import AccessLogger
from prometheus_client.multiprocess import mark_process_dead

from detectors.objects import TargetError, TargetRegistry, TargetStore, default_dir
from hw_sim import PROFILES, get_profile
from stream import metrics
from stream.admission import (
    SHUTTING_DOWN,
    Admission,
    LocalCounter,
    ServerConfig,
    SessionCounter,
    guard_middleware,
)
from stream.announce import check_announce_ip, gather_addresses
from stream.dispatch import Dispatcher, Receiver
from stream.forwarded import forwarded_middleware, proxy_networks
from stream.host_counter import HostCounter
from stream.ice import check_ice_servers, parse_ice_server, session_ice_servers
from stream.leases import ClientLeases
from stream.pipelines import Pipelines, SessionOptions
from stream.prefork import Ready, Supervisor, WorkerStartError, notify_ready, usable_cores
from stream.tls import DEFAULT_TLS_DIR, lan_addresses, self_signed_certificate, server_context
from stream.webrtc import WebRtcGateway
from stream.ws_api import WebsocketApi

if TYPE_CHECKING:
    from stream.redis_state import SharedState

log = logging.getLogger(__name__)

GATEWAY = web.AppKey("gateway", WebRtcGateway)
ADMISSION = web.AppKey("admission", Admission)
WEBSOCKETS = web.AppKey("websockets", WebsocketApi)

WEB_ROOT = Path(__file__).resolve().parent.parent / "clients" / "web"

_TOKEN_VALUE = re.compile(r"(?<=[?&]token=)[^&#\s\"]+")
_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)


class RedactingAccessLogger(AccessLogger):
    """aiohttp's access log with every ``token=`` query value shown as ``***``.

    Browsers pass the token as ``?token=SECRET`` (docs/api.md), so it would show in the
    request line and in the ``Referer`` of every request the demo page makes.
    """

    def _format_line(
        self, request: web.BaseRequest, response: web.StreamResponse, time: float
    ) -> Iterable[tuple[str | tuple[str, str], str]]:
        return [
            (key, _TOKEN_VALUE.sub("***", value) if isinstance(value, str) else value)
            for key, value in super()._format_line(request, response, time)
        ]


def build_app(
    pipelines: Pipelines,
    config: ServerConfig | None = None,
    counter: SessionCounter | None = None,
    leases: ClientLeases | None = None,
) -> web.Application:
    """The server's routes over ``pipelines``; sessions are counted in ``counter`` (default:
    this process's own; :class:`HostCounter` when workers share the limits), and each
    client's over a cluster in ``leases`` (``serve --redis``)."""
    config = config or ServerConfig()
    default_profile = config.default_profile
    admission = Admission(
        config.max_sessions, config.max_sessions_per_client, counter or LocalCounter(), leases
    )
    gateway = WebRtcGateway(pipelines, config, admission)
    api = WebsocketApi(pipelines, config, admission)

    async def index(_: web.Request) -> web.FileResponse:
        return web.FileResponse(WEB_ROOT / "index.html")

    async def profiles(_: web.Request) -> web.Response:
        listed = []
        for name in PROFILES:
            simulator, _detector = pipelines.simulator_for(SessionOptions(profile=name))
            listed.append(
                {"name": name, "tier": simulator.tier, "default": name == default_profile}
            )
        return web.json_response(listed)

    async def ice_servers(_: web.Request) -> web.Response:
        servers = session_ice_servers(
            config.ice_servers, config.turn_secret, config.turn_ttl_s, time.time()
        )
        return web.json_response(
            {"iceServers": [server.to_json() for server in servers]},
            headers={"Cache-Control": "no-store"},  # minted credentials expire
        )

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(
            body=metrics.exposition(), headers={"Content-Type": metrics.CONTENT_TYPE}
        )

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"alive": True})

    async def readyz(_: web.Request) -> web.Response:
        if gateway.shutting_down or api.shutting_down:
            reason: str | None = SHUTTING_DOWN
        else:
            reason = admission.full_reason if admission.full else None
        body: dict[str, object] = {
            "ready": reason is None,
            "sessions": admission.total,
            "max_sessions": admission.max_total,
        }
        if reason is not None:
            body["reason"] = reason
        return web.json_response(body, status=200 if reason is None else 503)

    async def on_shutdown(_: web.Application) -> None:
        await asyncio.gather(gateway.close_all(), api.close_all())
        pipelines.shutdown()

    middlewares = [guard_middleware(config)]
    if config.forwarded_allow:
        middlewares.insert(0, forwarded_middleware(proxy_networks(config.forwarded_allow)))
    app = web.Application(middlewares=middlewares)
    app[GATEWAY] = gateway
    app[ADMISSION] = admission
    app[WEBSOCKETS] = api
    app.router.add_get("/", index)
    app.router.add_get("/profiles", profiles)
    app.router.add_get("/ice-servers", ice_servers)
    app.router.add_post("/offer", gateway.offer)
    app.router.add_get("/ws", api.handle)
    app.router.add_get("/metrics", metrics_page)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_static("/static/", WEB_ROOT)
    app.on_shutdown.append(on_shutdown)
    return app


def loopback_host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    """Stands in for ``aioice.ice.get_host_addresses``: ICE host candidates on loopback only.

    aioice skips loopback and uses every other interface; a server bound to a
    loopback address is meant to talk to this machine alone, so its media
    should too (the browser must then offer loopback candidates).
    """
    return (["127.0.0.1"] if use_ipv4 else []) + (["::1"] if use_ipv6 else [])


SHUTDOWN_TIMEOUT_S = 5.0
"""SIGTERM/SIGINT: stop accepting, tell clients (on_shutdown), wait at most this long."""
WORKER_STOP_S = SHUTDOWN_TIMEOUT_S + 10.0
"""How long the parent of ``--workers N`` waits for its workers to drain before killing them."""
ORPHAN_CHECK_S = 1.0
"""How often a worker checks that its parent still runs (a ``kill -9``'d parent's workers stop)."""
SESSIONS_FILE = "sessions"
"""The host's session table (:class:`HostCounter`) in the workers' runtime folder."""
METRICS_DIR = "metrics"
"""The workers' prometheus-client multiprocess files, in the runtime folder."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What each worker of ``serve --workers N`` builds its server from (pickled to it)."""

    host: str
    port: int
    config: ServerConfig
    precision: str
    tls: tuple[Path, Path] | None
    targets: Path
    loopback: bool
    threads: int
    """Inference threads of this worker (and OpenCV's): the host's cores shared by the workers."""
    runtime: Path
    """The parent's folder for what the workers share: the session table, the metrics files."""
    redis_url: str | None = None


def serve(
    host: str,
    port: int,
    config: ServerConfig,
    precision: str = "int8",
    https: bool = False,
    cert: Path | None = None,
    key: Path | None = None,
    targets: Path | None = None,
    workers: int = 1,
    redis_url: str | None = None,
    pin_workers: bool = False,
) -> None:
    """Run the server until interrupted. ``https`` uses ``cert``/``key`` or a self-signed pair.

    ``targets`` is the folder of registered scan targets (default: :func:`default_dir`);
    ``redis_url``: targets and per-client session counts live there instead, shared by every
    server given the same URL (:mod:`stream.redis_state`).
    ``workers`` > 1: a parent process holds the port and runs that many worker processes
    (:func:`serve_workers`), with ``pin_workers`` each on its own cores. A wrong flag, or an
    address that cannot be listened on, ends the process with one line on stderr (status 2,
    as argparse, for a flag; 1 for the address).
    """
    loopback = _check_arguments(host, port, config, cert, key)
    tls = None
    if https or cert:
        lan = [] if loopback else lan_addresses()
        if cert is None or key is None:
            cert, key = self_signed_certificate(DEFAULT_TLS_DIR, lan)
        tls = (cert, key)
    context = _tls_context(tls)
    folder = targets or default_dir()
    if workers > 1:
        try:
            TargetStore(folder)
        except TargetError as exc:
            _exit(f"--targets: {exc}")
        serve_workers(
            host, port, config, precision, tls, folder, loopback, workers, redis_url, pin_workers
        )
        return
    _gather_ice_addresses(config, loopback)
    registry, shared = open_targets(folder, redis_url)
    app = build_app(
        Pipelines.from_models(precision, targets=registry),
        config,
        leases=shared.leases if shared else None,
    )
    if shared is not None:
        app.cleanup_ctx.append(shared.lifetime)
    sockets = _listen_or_exit(host, port)
    bound_port = sockets[0].getsockname()[1]  # the OS's choice for --port 0
    run_server(app, sockets, context, lambda: announce(host, bound_port, tls, loopback))


def _gather_ice_addresses(config: ServerConfig, loopback: bool) -> None:
    """Where aioice gathers host candidates: at the announced address, on loopback only for
    a loopback server, else on every interface (aioice's own choice)."""
    if config.announce_ip:
        announced = gather_addresses(config.announce_ip)
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: announced
    elif loopback:
        aioice.ice.get_host_addresses = loopback_host_addresses


def open_targets(folder: Path, redis_url: str | None) -> tuple[TargetRegistry, SharedState | None]:
    """The registry of ``folder``, or with ``redis_url`` Redis's and the cluster's leases;
    ends the process with one line when either cannot be opened."""
    if redis_url is None:
        try:
            return TargetRegistry.open(folder), None
        except TargetError as exc:
            _exit(f"--targets: {exc}")
    from stream.redis_state import SharedState  # imports redis-py: only when asked for

    try:
        shared = SharedState.open(redis_url)
    except TargetError as exc:
        _exit(f"--redis {redis_url}: {exc}", status=1)
    return shared.registry, shared


def serve_workers(
    host: str,
    port: int,
    config: ServerConfig,
    precision: str,
    tls: tuple[Path, Path] | None,
    targets: Path,
    loopback: bool,
    workers: int,
    redis_url: str | None = None,
    pin: bool = False,
) -> None:
    """The parent of ``workers`` worker processes; returns once they drained after a signal.

    The parent listens, accepts each connection and hands it to the least-loaded worker
    that is ready (:mod:`stream.dispatch`): a dead worker's share goes to the others until
    its replacement is ready, and after a stop signal the parent stops listening. Limits and metrics
    live in a runtime folder the workers share; a dead worker's slots and live metrics are
    freed before its replacement starts. With ``redis_url`` each worker is a server of the
    cluster on its own (its own Redis connections and leases). With ``pin``, each worker runs
    on its own share of the cores (:func:`stream.prefork.worker_cores`).
    """
    listening = _listen_or_exit(host, port)
    bound_port = listening[0].getsockname()[1]
    runtime = Path(tempfile.mkdtemp(prefix="fuscan-serve-"))
    try:
        HostCounter.create(runtime / SESSIONS_FILE, config.max_sessions)
        (runtime / METRICS_DIR).mkdir()
        # Read when each worker imports prometheus-client; set before any starts.
        os.environ[metrics.MULTIPROC_ENV] = str(runtime / METRICS_DIR)
        threads = max(1, usable_cores() // workers)
        spec = WorkerSpec(
            host, bound_port, config, precision, tls, targets, loopback, threads, runtime, redis_url
        )
        counter = HostCounter(runtime / SESSIONS_FILE)

        def on_exit(pid: int) -> None:
            freed = counter.reclaim(pid)
            if freed:
                log.info("worker pid %d ended holding %d session slots: freed", pid, freed)
            mark_process_dead(pid, str(runtime / METRICS_DIR))  # type: ignore[no-untyped-call]

        dispatcher = Dispatcher(listening, counter.held)
        supervisor = Supervisor(
            serve_worker, (spec,), workers, on_exit, WORKER_STOP_S, dispatcher, pin
        )
        try:
            supervisor.start()
            announce(host, bound_port, tls, loopback)
            pinned = ", each on cores of its own" if pin else ""
            print(f"{workers} workers, {threads} inference threads each{pinned}", flush=True)
            supervisor.run()
        except WorkerStartError as exc:
            _exit(str(exc), status=1)
        finally:
            counter.close()
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        for sock in listening:
            sock.close()


def serve_worker(spec: WorkerSpec, channel: socket.socket, said_ready: Connection) -> None:
    """One worker process of :func:`serve_workers` (spawned: a fresh interpreter): serves the
    connections the parent hands it on ``channel``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    _gather_ice_addresses(spec.config, spec.loopback)
    cv2.setNumThreads(spec.threads)
    registry, shared = open_targets(spec.targets, spec.redis_url)
    pipelines = Pipelines.from_models(spec.precision, targets=registry, threads=spec.threads)
    counter = HostCounter(spec.runtime / SESSIONS_FILE)
    app = build_app(pipelines, spec.config, counter, shared.leases if shared else None)
    if shared is not None:
        app.cleanup_ctx.append(shared.lifetime)
    run_server(app, [], _tls_context(spec.tls), notify_ready(said_ready), os.getppid(), channel)


def announce(host: str, port: int, tls: tuple[Path, Path] | None, loopback: bool) -> None:
    """The lines ``serve`` prints once its sockets accept: one URL per address."""
    scheme = "https" if tls else "http"
    shown = [host] if host not in ("0.0.0.0", "::") else ["127.0.0.1", *lan_addresses()]
    for address in shown:
        print(f"open {scheme}://{url_host(address)}:{port}/", flush=True)
    if tls and not loopback:
        print("(self-signed certificate: accept the browser's warning once per device)", flush=True)


def run_server(
    app: web.Application,
    sockets: list[socket.socket],
    context: ssl.SSLContext | None,
    ready: Ready,
    parent: int | None = None,
    channel: socket.socket | None = None,
) -> None:
    """Serve ``app`` on ``sockets``, and the connections handed over ``channel`` (a worker
    of :func:`serve_workers`), until SIGTERM or SIGINT (or, with ``parent``, until that
    process is gone), then drain: stop accepting, tell clients, wait at most
    :data:`SHUTDOWN_TIMEOUT_S`. A second signal while draining changes nothing.

    uvloop: aiortc handles every RTP packet in the event loop, and uvloop's cheaper socket
    and callback handling cut the loop's CPU per WebRTC frame by 12-19% (docs/benchmarks.md).
    """
    uvloop.run(_serve_until_stopped(app, sockets, context, ready, parent, channel))


async def _serve_until_stopped(
    app: web.Application,
    sockets: list[socket.socket],
    context: ssl.SSLContext | None,
    ready: Ready,
    parent: int | None,
    channel: socket.socket | None,
) -> None:
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log_class=RedactingAccessLogger,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
    )
    await runner.setup()
    assert runner.server is not None  # made by setup()
    receiver = None if channel is None else Receiver(channel, runner.server, context)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        for sock in sockets:
            await web.SockSite(runner, sock, ssl_context=context).start()
        if receiver is not None:
            receiver.start()
        ready()
        while not await _stopped(stop, ORPHAN_CHECK_S if parent else None):
            if os.getppid() != parent:
                log.warning("the parent process %s is gone: stopping", parent)
                stop.set()
    finally:
        if receiver is not None:
            receiver.stop()
        await runner.cleanup()


async def _stopped(stop: asyncio.Event, within: float | None) -> bool:
    """Whether ``stop`` is set within ``within`` seconds (``None``: wait for it)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), within)
    return stop.is_set()


def _tls_context(tls: tuple[Path, Path] | None) -> ssl.SSLContext | None:
    if tls is None:
        return None
    try:
        return server_context(*tls)
    except OSError as exc:  # a missing file, or one that is not PEM (ssl.SSLError)
        _exit(f"--cert {tls[0]} / --key {tls[1]}: {exc}")


def _listen_or_exit(host: str, port: int) -> list[socket.socket]:
    try:
        return listen(host, port)
    except OSError as exc:
        if exc.errno not in _BIND_ERRORS:
            raise
        _exit(f"cannot listen on {host}:{port}: {os.strerror(exc.errno).lower()}", status=1)


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of ``host``, bound as uvloop's ``create_server``
    binds them (address reuse, IPv6 only on IPv6 sockets), but all on one port: ``port``, or
    for 0 the one the OS chose for the first, so that one URL per address names it.

    Raises:
        OSError: an address cannot be bound (in use, not this machine's, not allowed).
    """
    sockets: list[socket.socket] = []
    try:
        for family, *_, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            sockets.append(_bind(family, (address[0], port, *address[2:])))
            sockets[-1].listen()
            port = sockets[0].getsockname()[1]
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _bind(family: int, address: tuple[Any, ...]) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def url_host(host: str) -> str:
    """``host`` as a URL's authority writes it: an IPv6 literal in brackets."""
    return f"[{host}]" if ":" in host else host


def _check_arguments(
    host: str, port: int, config: ServerConfig, cert: Path | None, key: Path | None
) -> bool:
    """Refuse wrong ``serve`` flags before anything is loaded; whether ``host`` is loopback."""
    if not 0 <= port <= 65535:
        _exit(f"--port {port} is outside 0..65535")
    try:
        get_profile(config.default_profile)
    except KeyError as exc:
        _exit(f"--profile: {exc.args[0]}")
    if (cert is None) != (key is None):
        _exit("--cert and --key go together: give both, or neither for a self-signed pair")
    for url in config.ice_servers:
        try:
            parse_ice_server(url)
        except ValueError as exc:
            _exit(f"--ice-server {url}: {exc}")
    try:
        check_ice_servers(config.ice_servers, config.turn_secret)
    except ValueError as exc:
        _exit(f"--ice-server: {exc}")
    if config.ice_relay_only and not any(parse_ice_server(u).is_turn for u in config.ice_servers):
        _exit("--ice-relay-only needs a turn: or turns: --ice-server")
    if config.announce_ip:
        try:
            check_announce_ip(config.announce_ip)
        except ValueError as exc:
            _exit(f"--announce-ip {config.announce_ip}: {exc}")
    try:
        proxy_networks(config.forwarded_allow)
    except ValueError as exc:
        _exit(f"--forwarded-allow-ips: {exc}")
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        _exit(f"--host {host}: cannot resolve it ({exc.strerror})")
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in addresses)


def _exit(message: str, status: int = 2) -> NoReturn:
    """End start-up with one line on stderr and no traceback."""
    print(f"run.py serve: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(status)
