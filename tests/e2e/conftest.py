"""A real ``run.py serve`` process on a free loopback port, shared by the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clients.local_server import local_server


@pytest.fixture(scope="session")
def live_server() -> Iterator[str]:
    """Base URL of ``python run.py serve`` on the bundled model; stopped after the session."""
    with local_server("--host", "127.0.0.1") as server:
        yield server.url
