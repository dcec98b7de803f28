"""Argument types and options shared by the commands of ``run.py`` (serve, replay, client, ...)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


class UsageError(Exception):
    """Options that parse but do not fit together: ``run.py`` prints its usage and exits 2.

    A command's ``run(args)`` raises it where its own parser would have called
    ``parser.error``.
    """


def add_profiles_option(parser: argparse.ArgumentParser, dest: str = "command_profiles") -> None:
    """``--profiles FILE``: device profiles ``run.py`` loads before the command runs.

    ``run.py`` takes it before any command; a command that uses profiles takes
    it after its name too. The command's option needs its own ``dest``:
    argparse would otherwise replace the files given before the command with
    the command's default.
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


def positive_number(text: str) -> float:
    """An argparse type (``--fps``, timeouts): a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type (counts, limits): a whole number >= 1."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse type (a limit where 0 means none): a whole number >= 0."""
    return _whole_number(text, 0)


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {text!r}")
    return value
