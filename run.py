#!/usr/bin/env python3
"""The one entry point: ``python run.py COMMAND [options]``; ``run.py COMMAND --help`` for each.

Every command is a module with ``add_arguments(parser)`` and ``run(args) -> int``,
named in :data:`COMMANDS`; only the chosen command's module is imported. A
command's ``run`` raises :class:`stream.cli_types.UsageError` for options that
do not fit together (usage and exit status 2, as argparse); ``args.argv`` holds
``run.py``'s arguments, for a command that records how it was run.
``--profiles FILE`` before any command (or after one that offers it) loads more
device profiles before the command runs.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from stream.cli_types import UsageError, add_profiles_option

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("stream.cli", "serve the demo page, WebRTC and the websocket API"),
    "replay": ("clients.replay", "run recorded videos through the session pipeline"),
    "client": ("clients.ws_client", "stream a webcam, video or image folder to a server"),
    "targets": ("detectors.objects.cli", "object scan: add, list or remove scan targets"),
    "quantize": (
        "detectors.quantize",
        "your FP32 ONNX model -> calibrated INT8, with a before/after report",
    ),
    "eval-model": (
        "evals.detectors.evaluate",
        "every detector tier, FP32 vs INT8: AP50, hard negatives, size, latency",
    ),
    "eval-voting": (
        "evals.voting.evaluate",
        "labelled clips through voting: precision, recall, time to decision per preset",
    ),
    "eval-targets": (
        "evals.detectors.targets",
        "object scan on synthetic clips: precision, recall, cost per frame",
    ),
    "profiles": ("evals.hw.profiles", "device profiles, their model tier and latency"),
    "eval-hw": ("evals.hw.devices", "the same clips on each device profile: fps, recall"),
    "eval-frame-cost": (
        "evals.frame_cost",
        "whole frame vs first look's network, with 福 in view or not",
    ),
    "eval-real": ("evals.real", "real pictures of 福 held up to a phone: recall, stages"),
    "eval-network": ("evals.network", "the page through TURN, clean and impaired: recall, time"),
    "loadtest": ("evals.loadtest", "N websocket + M WebRTC streams; latency, CPU, RSS"),
    "bench": ("evals.bench.cli", "where the milliseconds go: detector, pipeline, capacity"),
    "cluster": ("stream.cluster", "on loopback: Redis + HAProxy + 3 servers behind one URL"),
    "capacity": ("evals.capacity", "cores, hosts, network and Redis load of a campaign peak"),
}
"""Command name -> (its module, one line of help)."""


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """``run.py``'s parser, with the options of command ``chosen`` only (its module imported)."""
    parser = argparse.ArgumentParser(prog="run.py", description=__doc__.split("\n\n")[0])
    add_profiles_option(parser, "profiles")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (path, summary) in COMMANDS.items():
        if name != chosen:
            sub.add_parser(name, help=summary, add_help=False)
            continue
        module = importlib.import_module(path)
        command = sub.add_parser(
            name,
            help=summary,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(command)
        parser.set_defaults(command_parser=command)
    return parser


def load_profiles(args: argparse.Namespace) -> str | None:
    """Load the ``--profiles`` files into the catalogue; what is wrong with them, if anything."""
    files = [*args.profiles, *getattr(args, "command_profiles", [])]
    if not files:
        return None
    from detectors.card import list_cards
    from hw_sim import PROFILES, ModelSpec, ProfileError, check_tiers
    from hw_sim import load_profiles as read_into_catalogue

    try:
        loaded = [name for path in files for name in read_into_catalogue(path)]
        specs = [ModelSpec.from_card(card) for card in list_cards()]
        check_tiers([PROFILES[name] for name in loaded], specs)
    except ProfileError as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen, _ = build_parser().parse_known_args(argv)  # which command: nothing imported yet
    args = build_parser(chosen.command).parse_args(argv)
    args.argv = argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    problem = load_profiles(args)
    if problem is not None:
        print(f"run.py: {problem}", file=sys.stderr)  # a bad file, not a usage error
        return 2
    try:
        status: int = importlib.import_module(COMMANDS[args.command][0]).run(args)
    except UsageError as exc:
        command: argparse.ArgumentParser = args.command_parser
        command.error(str(exc))
    return status


if __name__ == "__main__":
    sys.exit(main())
