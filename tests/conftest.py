"""Fixtures shared by the stream and client tests: an in-process server on a free port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp.test_utils import TestServer
from fakes import RedSquareDetector

from stream.admission import ServerConfig
from stream.pipelines import Pipelines
from stream.server import build_app

ServerFactory = Callable[[ServerConfig], Awaitable[TestServer]]


@pytest.fixture
async def make_server() -> AsyncIterator[ServerFactory]:
    """Starts the real application on 127.0.0.1 with a red-square detector instead of the model."""
    servers: list[TestServer] = []

    async def start(config: ServerConfig) -> TestServer:
        pipelines = Pipelines({"l": RedSquareDetector()}, workers=1)
        server = TestServer(build_app(pipelines, config), host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def fake_server(make_server: ServerFactory) -> TestServer:
    return await make_server(ServerConfig())
