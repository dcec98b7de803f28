"""``run.py serve``: the demo page, WebRTC signalling and the websocket API."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from stream.admission import ServerConfig
from stream.cli_types import UsageError, non_negative_int, positive_int, positive_number
from stream.prefork import usable_cores, worker_cores


def add_arguments(parser: argparse.ArgumentParser) -> None:
    limits = ServerConfig()
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (%(default)s)")
    parser.add_argument("--profile", default="host", help="default device profile of sessions")
    parser.add_argument(
        "--precision",
        default="int8",
        choices=["int8", "fp32"],
        help="model precision of sessions (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=usable_cores(),
        help="worker processes sharing the port, the limits and the targets (default: one per "
        "core it may use, %(default)s here; 1: one process, no parent; docs/scaling.md)",
    )
    parser.add_argument(
        "--pin-workers",
        action="store_true",
        help="run each worker on its own share of the cores it may use, as nginx's "
        "worker_cpu_affinity: for a host or container whose cores the server owns "
        "(docs/scaling.md)",
    )
    parser.add_argument(
        "--https", action="store_true", help="TLS (self-signed unless --cert/--key): phones on LAN"
    )
    parser.add_argument("--cert", type=Path, help="PEM certificate for --https")
    parser.add_argument("--key", type=Path, help="PEM private key for --https")
    parser.add_argument(
        "--max-sessions",
        type=positive_int,
        default=limits.max_sessions,
        help="sessions open at once over all clients (default: %(default)s)",
    )
    parser.add_argument(
        "--max-sessions-per-client",
        type=positive_int,
        default=limits.max_sessions_per_client,
        help="sessions open at once from one client address (default: %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("FUSCAN_TOKEN"),
        help="require this token for /offer and /ws (default: $FUSCAN_TOKEN; none)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="accept session requests only from these origins (repeatable; default: any)",
    )
    parser.add_argument(
        "--ice-timeout",
        type=positive_number,
        default=limits.ice_timeout_s,
        help="seconds a peer connection may take to connect after its offer (default: %(default)s)",
    )
    parser.add_argument(
        "--ice-server",
        action="append",
        default=[],
        metavar="URL",
        help="an ICE server for the server's peers and the page (repeatable: one STUN, one "
        "TURN): stun:HOST[:PORT], or turn:[USER:PASSWORD@]HOST[:PORT][?transport=udp|tcp] "
        "or turns:...?transport=tcp, credentials from --turn-secret unless in the URL "
        "(default: none; host candidates only, which is all a localhost or LAN server needs, "
        "and nothing leaves it; docs/networks.md)",
    )
    parser.add_argument(
        "--turn-secret",
        default=os.environ.get("FUSCAN_TURN_SECRET"),
        metavar="SECRET",
        help="the TURN server's shared secret (coturn: use-auth-secret, static-auth-secret): "
        "each session gets TURN credentials made from it that expire, instead of a password "
        "(default: $FUSCAN_TURN_SECRET; none)",
    )
    parser.add_argument(
        "--turn-ttl",
        type=positive_int,
        default=limits.turn_ttl_s,
        metavar="SECONDS",
        help="how long TURN credentials from --turn-secret are valid (default: %(default)s)",
    )
    parser.add_argument(
        "--ice-relay-only",
        action="store_true",
        help="the server's peers offer TURN relay candidates only (needs a TURN --ice-server)",
    )
    parser.add_argument(
        "--max-video-kbps",
        type=non_negative_int,
        default=limits.max_video_kbps,
        help="the most video a WebRTC client is asked to send, kbit/s (SDP b=AS and REMB; "
        "default: %(default)s, a third of a browser's 640x480 rate at the same recall; "
        "0: no limit)",
    )
    parser.add_argument(
        "--targets",
        type=Path,
        default=None,
        metavar="DIR",
        help="registered scan targets (default: $FUSCAN_TARGETS or ~/.local/share/fuscan/targets)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("FUSCAN_REDIS"),
        metavar="URL",
        help="share scan targets and per-client session counts with every server given this "
        "Redis (redis://HOST:PORT/DB or unix:///PATH; default: $FUSCAN_REDIS; none; "
        "docs/deploy.md)",
    )
    parser.add_argument(
        "--announce-ip",
        metavar="ADDRESS",
        help="behind NAT: the address clients reach this host's media at, put in the "
        "answer's ICE candidates (default: the host's own addresses)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default="",
        metavar="ADDRS",
        help="comma-separated proxies (addresses or networks) whose X-Forwarded-For names "
        "the client, for the per-client limit behind a balancer (default: none)",
    )


def run(args: argparse.Namespace) -> int:
    from stream.server import serve  # aiortc and aiohttp: only when serving

    if args.redis and args.targets:
        raise UsageError("--targets and --redis exclude each other: targets live in one place")
    if args.pin_workers:
        try:
            worker_cores(0, args.workers, sorted(os.sched_getaffinity(0)))
        except ValueError as exc:
            raise UsageError(f"--pin-workers: {exc}") from None
    config = ServerConfig(
        default_profile=args.profile,
        max_sessions=args.max_sessions,
        max_sessions_per_client=args.max_sessions_per_client,
        token=args.token,
        allowed_origins=frozenset(args.allow_origin),
        ice_timeout_s=args.ice_timeout,
        ice_servers=tuple(args.ice_server),
        turn_secret=args.turn_secret,
        turn_ttl_s=args.turn_ttl,
        ice_relay_only=args.ice_relay_only,
        max_video_kbps=args.max_video_kbps,
        announce_ip=args.announce_ip,
        forwarded_allow=tuple(filter(None, args.forwarded_allow_ips.split(","))),
    )
    serve(
        args.host,
        args.port,
        config,
        args.precision,
        args.https,
        args.cert,
        args.key,
        targets=args.targets,
        workers=args.workers,
        redis_url=args.redis,
        pin_workers=args.pin_workers,
    )
    return 0
