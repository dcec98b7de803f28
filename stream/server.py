"""One aiohttp application on one port: the demo page, WebRTC signalling and the websocket API."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import re
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import aioice.ice
import uvloop
from aiohttp import web
from aiohttp.web_log import AccessLogger
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from detectors.objects import TargetError, TargetRegistry, default_dir
from hw_sim import PROFILES, get_profile
from stream.admission import Admission, ServerConfig, guard_middleware
from stream.announce import check_announce_ip, gather_addresses
from stream.forwarded import forwarded_middleware, proxy_networks
from stream.leases import ClientLeases
from stream.pipelines import Pipelines, SessionOptions
from stream.probes import add_probes
from stream.tls import DEFAULT_TLS_DIR, lan_addresses, self_signed_certificate, server_context
from stream.webrtc import WebRtcGateway, check_ice_server
from stream.ws_api import WebsocketApi

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
    pipelines: Pipelines, config: ServerConfig | None = None, leases: ClientLeases | None = None
) -> web.Application:
    """The server's routes; ``leases`` count each client's sessions over a cluster."""
    config = config or ServerConfig()
    default_profile = config.default_profile
    admission = Admission(config.max_sessions, config.max_sessions_per_client, shared=leases)
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

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

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
    app.router.add_post("/offer", gateway.offer)
    app.router.add_get("/ws", api.handle)
    app.router.add_get("/metrics", metrics_page)
    app.router.add_static("/static/", WEB_ROOT)
    add_probes(app, admission, lambda: gateway.shutting_down or api.shutting_down)
    app.on_shutdown.append(on_shutdown)
    return app


def loopback_host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    """Stands in for ``aioice.ice.get_host_addresses``: ICE host candidates on loopback only.

    aioice skips loopback and uses every other interface; a server bound to a
    loopback address is meant to talk to this machine alone, so its media
    should too (the browser must then offer loopback candidates).
    """
    return (["127.0.0.1"] if use_ipv4 else []) + (["::1"] if use_ipv6 else [])


def serve(
    host: str,
    port: int,
    config: ServerConfig,
    precision: str = "int8",
    https: bool = False,
    cert: Path | None = None,
    key: Path | None = None,
    targets: Path | None = None,
    redis_url: str | None = None,
) -> None:
    """Run the server until interrupted. ``https`` uses ``cert``/``key`` or a self-signed pair.

    ``targets`` is the folder of registered scan targets (default: :func:`default_dir`);
    ``redis_url``: targets and per-client session counts live there, shared by every server
    given the same URL (:mod:`stream.redis_state`).
    A wrong flag, or an address that cannot be listened on, ends the process with one line
    on stderr (status 2, as argparse, for a flag; 1 for the address).
    """
    loopback = _check_arguments(host, port, config, cert, key)
    if config.announce_ip:
        announced = gather_addresses(config.announce_ip)
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: announced
    elif loopback:
        aioice.ice.get_host_addresses = loopback_host_addresses
    context = None
    if https or cert:
        lan = [] if loopback else lan_addresses()
        if cert is None or key is None:
            cert, key = self_signed_certificate(DEFAULT_TLS_DIR, lan)
        try:
            context = server_context(cert, key)
        except OSError as exc:  # a missing file, or one that is not PEM (ssl.SSLError)
            _exit(f"--cert {cert} / --key {key}: {exc}")
    shared = None
    if redis_url is not None:
        from stream.redis_state import SharedState  # imports redis-py: only when asked for

        try:
            shared = SharedState.open(redis_url)
        except TargetError as exc:
            _exit(f"--redis {redis_url}: {exc}", status=1)
        registry = shared.registry
    else:
        try:
            registry = TargetRegistry.open(targets or default_dir())
        except TargetError as exc:
            _exit(f"--targets: {exc}")
    pipelines = Pipelines.from_models(precision, targets=registry)
    app = build_app(pipelines, config, shared.leases if shared else None)
    if shared is not None:
        app.cleanup_ctx.append(shared.lifetime)
    scheme = "https" if context else "http"
    shown = [host] if host not in ("0.0.0.0", "::") else ["127.0.0.1", *lan_addresses()]
    try:
        sockets = listen(host, port)
    except OSError as exc:
        if exc.errno not in _BIND_ERRORS:
            raise
        _exit(f"cannot listen on {host}:{port}: {os.strerror(exc.errno).lower()}", status=1)
    bound_port = sockets[0].getsockname()[1]  # the OS's choice for --port 0

    def announce(*_: object) -> None:  # run_app calls it once the sockets accept
        for address in shown:
            print(f"open {scheme}://{url_host(address)}:{bound_port}/", flush=True)
        if context and not loopback:
            print(
                "(self-signed certificate: accept the browser's warning once per device)",
                flush=True,
            )

    # SIGTERM/SIGINT: stop accepting, tell clients (on_shutdown), wait at most this long.
    # uvloop: aiortc handles every RTP packet in the event loop, and uvloop's cheaper
    # socket and callback handling cut the loop's CPU per WebRTC frame by 12-19%
    # (docs/benchmarks.md).
    web.run_app(
        app,
        sock=sockets,
        ssl_context=context,
        print=announce,
        access_log_class=RedactingAccessLogger,
        shutdown_timeout=5.0,
        loop=uvloop.new_event_loop(),
    )


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
            sockets.append(socket.create_server((address[0], port, *address[2:]), family=family))
            port = sockets[0].getsockname()[1]
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


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
            check_ice_server(url)
        except ValueError as exc:
            _exit(f"--ice-server {url}: {exc}")
    if config.announce_ip:
        try:
            check_announce_ip(config.announce_ip)
        except ValueError as exc:
            _exit(f"--announce-ip {config.announce_ip}: {exc}")
    try:
        proxy_networks(config.forwarded_allow)
    except ValueError as exc:
        _exit(f"--forwarded-allow-ips: {exc}")
    if len(config.ice_servers) > 1:  # aiortc would use the first and ignore the others
        _exit(f"--ice-server: aiortc uses one STUN server, not {len(config.ice_servers)}")
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        _exit(f"--host {host}: cannot resolve it ({exc.strerror})")
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in addresses)


def _exit(message: str, status: int = 2) -> NoReturn:
    """End start-up with one line on stderr and no traceback."""
    print(f"run.py serve: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(status)
