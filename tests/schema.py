"""Validation of result messages against docs/api.schema.json (the published protocol)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "api.schema.json").read_text(encoding="utf-8")
)


def _validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{definition}"})


SERVER_MESSAGE = _validator("server_message")
CLIENT_MESSAGE = _validator("client_message")


def checked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` itself, after asserting it is a valid server message."""
    SERVER_MESSAGE.validate(message)
    return message


async def receive_until(ws: Any, predicate: Any, limit: float = 5.0) -> list[dict[str, Any]]:
    """Checked messages received on ``ws`` until one satisfies ``predicate`` (inclusive)."""
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(limit):
        while True:
            seen.append(checked(json.loads(await ws.recv())))
            if predicate(seen[-1]):
                return seen
