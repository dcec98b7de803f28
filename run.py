#!/usr/bin/env python3
"""The one entry point: ``python run.py serve | replay | ...``."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path

from clients.bench import add_arguments as bench_arguments
from clients.cli_types import non_negative_int, positive_int, positive_number
from clients.loadtest import add_arguments as loadtest_arguments
from clients.replay import add_arguments as replay_arguments
from clients.ws_client import add_arguments as client_arguments
from detectors.card import MODELS_DIR
from detectors.objects.cli import add_arguments as targets_arguments
from detectors.synth.scenes import add_scene_arguments, scene_options
from evals import real as eval_real
from stream.admission import ServerConfig

OWN_PARSERS = {
    "eval-model": (
        "detectors.evaluate",
        "every detector tier, FP32 vs INT8: AP50, hard negatives, size, latency",
    ),
    "quantize": (
        "detectors.quantize",
        "your FP32 ONNX model -> calibrated INT8, with a before/after report",
    ),
    "eval-voting": (
        "voting.evaluate",
        "labelled clips through voting: precision, recall, time to decision per preset",
    ),
    "eval-targets": (
        "detectors.objects.evaluate",
        "object scan on synthetic clips: precision, recall, cost per frame",
    ),
}
"""Commands whose module parses its own options: ``run.py NAME --help`` is that module's help."""


def add_profiles_option(parser: argparse.ArgumentParser, dest: str) -> None:
    """``--profiles FILE``, before the subcommand or after one that uses profiles.

    A subcommand's own option needs its own ``dest``: argparse would otherwise
    replace the files given before the subcommand with the subcommand's default.
    """
    parser.add_argument(
        "--profiles",
        type=Path,
        action="append",
        default=[],
        dest=dest,
        metavar="FILE",
        help="more device profiles, TOML or JSON (repeatable; see docs/hw_sim.md)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py", description=__doc__)
    add_profiles_option(parser, "profiles")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the demo page, WebRTC and the websocket API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--profile", default="host", help="default device profile of sessions")
    serve.add_argument("--precision", default="int8", choices=["int8", "fp32"])
    serve.add_argument(
        "--https", action="store_true", help="TLS (self-signed unless --cert/--key): phones on LAN"
    )
    serve.add_argument("--cert", type=Path, help="PEM certificate for --https")
    serve.add_argument("--key", type=Path, help="PEM private key for --https")
    limits = ServerConfig()
    serve.add_argument("--max-sessions", type=positive_int, default=limits.max_sessions)
    serve.add_argument(
        "--max-sessions-per-client", type=positive_int, default=limits.max_sessions_per_client
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("FUSCAN_TOKEN"),
        help="require this token for /offer and /ws (default: $FUSCAN_TOKEN; none)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="accept session requests only from these origins (repeatable; default: any)",
    )
    serve.add_argument("--ice-timeout", type=positive_number, default=limits.ice_timeout_s)
    serve.add_argument(
        "--ice-server",
        action="append",
        default=[],
        metavar="URL",
        help="a STUN server, stun:HOST[:PORT], for peers behind NAT (default: none; host "
        "candidates only, which is all a localhost or LAN server needs, and nothing leaves it)",
    )
    serve.add_argument(
        "--max-video-kbps",
        type=non_negative_int,
        default=limits.max_video_kbps,
        help="the most video a WebRTC client is asked to send, kbit/s (SDP b=AS and REMB; "
        "default: %(default)s, a third of a browser's 640x480 rate at the same recall; "
        "0: no limit)",
    )
    serve.add_argument(
        "--targets",
        type=Path,
        default=None,
        metavar="DIR",
        help="registered scan targets (default: $FUSCAN_TARGETS or ~/.local/share/fuscan/targets)",
    )

    replay = sub.add_parser("replay", help="run recorded videos through the session pipeline")
    replay_arguments(replay)

    client = sub.add_parser("client", help="stream a webcam, video or image folder to a server")
    client_arguments(client)

    for name, (_, summary) in OWN_PARSERS.items():
        sub.add_parser(name, add_help=False, help=summary)  # options and --help: its module

    loadtest = sub.add_parser("loadtest", help="N websocket + M WebRTC streams; latency, CPU, RSS")
    loadtest_arguments(loadtest)

    bench = sub.add_parser("bench", help="where the milliseconds go: detector, pipeline, capacity")
    bench_arguments(bench)

    targets = sub.add_parser("targets", help="object scan: add, list or remove scan targets")
    targets_arguments(targets)

    profiles = sub.add_parser("profiles", help="device profiles, their model tier and latency")
    profiles.add_argument("--bench", action="store_true", help="also time each model here")
    add_profiles_option(profiles, "command_profiles")
    eval_hw = sub.add_parser("eval-hw", help="the same clips on each device profile: fps, recall")
    eval_hw.add_argument(
        "--profile",
        action="append",
        dest="hw_profiles",
        metavar="NAME",
        help="a device profile (repeatable; default: all)",
    )
    add_profiles_option(eval_hw, "command_profiles")
    eval_hw.add_argument(
        "--clips", type=positive_int, default=4, help="clips with 福 (and as many without)"
    )
    eval_hw.add_argument("--frames", type=positive_int, default=90)
    eval_hw.add_argument("--fps", type=positive_number, default=30.0)
    eval_hw.add_argument("--seed", type=int, default=0)
    eval_hw.add_argument("--tier", default=None, help="force this tier on every profile")
    eval_hw.add_argument(
        "--models-dir",
        type=Path,
        default=MODELS_DIR,
        help="the cards and models the sessions load (default: the shipped ones)",
    )
    eval_hw.add_argument(
        "--realtime", action="store_true", help="also check the real-time pace against the profile"
    )
    eval_hw.add_argument(
        "--voting",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="repeatable: an override of the balanced preset, e.g. confirm=false",
    )
    add_scene_arguments(eval_hw, clips=True)

    real = sub.add_parser(
        "eval-real", help="real pictures of 福 held up to a phone: recall, stages"
    )
    eval_real.add_arguments(real)

    args, rest = parser.parse_known_args(argv)
    if args.command in OWN_PARSERS:
        module = importlib.import_module(OWN_PARSERS[args.command][0])
        return int(module.main(rest) or 0)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    profile_files = [*args.profiles, *getattr(args, "command_profiles", [])]
    if profile_files:
        from detectors.card import list_cards
        from hw_sim import PROFILES, ModelSpec, ProfileError, check_tiers, load_profiles

        try:
            loaded = [name for path in profile_files for name in load_profiles(path)]
            specs = [ModelSpec.from_card(card) for card in list_cards()]
            check_tiers([PROFILES[name] for name in loaded], specs)
        except ProfileError as exc:
            print(f"run.py: {exc}", file=sys.stderr)  # a bad file, not a usage error
            return 2
    if args.command == "serve":
        from stream.server import serve as run_server

        config = ServerConfig(
            default_profile=args.profile,
            max_sessions=args.max_sessions,
            max_sessions_per_client=args.max_sessions_per_client,
            token=args.token,
            allowed_origins=frozenset(args.allow_origin),
            ice_timeout_s=args.ice_timeout,
            ice_servers=tuple(args.ice_server),
            max_video_kbps=args.max_video_kbps,
        )
        run_server(
            args.host,
            args.port,
            config,
            args.precision,
            args.https,
            args.cert,
            args.key,
            targets=args.targets,
        )
        return 0
    if args.command == "targets":
        from detectors.objects.cli import targets_main

        return targets_main(args)
    if args.command == "replay":
        from clients.replay import replay_main

        return replay_main(args)
    if args.command == "client":
        from clients.ws_client import client_main

        options = {k: v for k, v in (("profile", args.profile), ("tier", args.tier)) if v}
        return client_main(args.url, args.source, args.fps, options, args.token)
    if args.command == "loadtest":
        from clients.loadtest import loadtest_main

        return loadtest_main(args)
    if args.command == "bench":
        from clients.bench import bench_main

        return bench_main(args)
    if args.command == "profiles":
        from clients.hw_bench import profiles_main

        return profiles_main(args.bench)
    if args.command == "eval-hw":
        from clients.hw_bench import eval_hw_main
        from hw_sim import PROFILES

        return eval_hw_main(
            args.hw_profiles or list(PROFILES),
            args.clips,
            args.frames,
            args.fps,
            args.seed,
            args.realtime,
            args.tier,
            args.voting,
            scene_options(args),
            args.models_dir,
        )
    if args.command == "eval-real":
        return eval_real.run(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
