"""Argument types shared by the command lines (serve, replay, client, eval-hw)."""

from __future__ import annotations

import argparse
import math


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
