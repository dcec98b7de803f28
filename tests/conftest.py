"""Fixtures shared by the stream and client tests: an in-process server on a free port."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import RedSquareDetector

from stream.pipelines import Pipelines
from stream.server import build_app


@pytest.fixture
async def fake_server() -> AsyncIterator[TestServer]:
    """The real application on 127.0.0.1, with a red-square detector instead of the model."""
    server = TestServer(
        build_app(Pipelines({"l": RedSquareDetector()}, workers=1)), host="127.0.0.1"
    )
    await server.start_server()
    yield server
    await server.close()
