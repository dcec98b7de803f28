"""Parsing the JSON a client sends (websocket text messages, the ``POST /offer`` body).

One parser for both, so that every way a client's JSON can be wrong ends in the same
clear :class:`JsonError` and never in an exception that drops the connection or
answers HTTP 500: bytes that are not UTF-8, text that is not JSON, nesting deeper than
the decoder's recursion limit, and numbers that are not finite. Python's decoder
accepts ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON at all) and turns ``1e999``
into infinity; such a number must never reach the pure cores (``hw_sim``'s timeline
overflows on it) nor be echoed in a result (browsers' ``JSON.parse`` rejects it).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from stream.session import FrameError

FLOAT_MAX = sys.float_info.max


class JsonError(FrameError):
    """A client's JSON cannot be used; ``code`` is ``bad_json``, or ``bad_field`` for a number
    that is not finite."""


class _NotFinite(Exception):
    """Raised by the decoder hooks (which the decoder does not wrap) with the number's text."""

    def __init__(self, text: str) -> None:
        super().__init__(text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _float_sized_int(text: str) -> int:
    # Beyond float range an int overflows as soon as it meets a float (a timestamp, a
    # voting time), so it is no more usable than Infinity. Over 309 digits it is beyond
    # that range before int() (which refuses over 4300 digits) need be asked.
    if len(text) <= 310:
        value = int(text)
        if -FLOAT_MAX <= value <= FLOAT_MAX:
            return value
    raise _NotFinite(text)


def _constant(text: str) -> float:
    raise _NotFinite(text)


def parse_object(data: str | bytes, what: str) -> dict[str, Any]:
    """The JSON object in ``data``; ``what`` names it in error messages (``"the body"``).

    Raises:
        JsonError: ``bad_json`` when ``data`` is not UTF-8, not JSON, nested too deeply
            or not an object; ``bad_field`` when a number is NaN, infinite or beyond
            float range.
    """
    try:
        text = data.decode() if isinstance(data, bytes) else data
        value = json.loads(
            text,
            parse_float=_finite_float,
            parse_int=_float_sized_int,
            parse_constant=_constant,
        )
    except UnicodeDecodeError:
        raise JsonError("bad_json", f"{what} is not UTF-8 text") from None
    except _NotFinite as exc:
        raise JsonError(
            "bad_field", f"{what} has a number that is NaN, infinite or beyond float range: {exc}"
        ) from None
    except RecursionError:
        raise JsonError("bad_json", f"{what} nests arrays or objects too deeply") from None
    except ValueError:
        raise JsonError("bad_json", f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise JsonError("bad_json", f"{what} is not a JSON object")
    return value
