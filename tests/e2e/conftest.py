"""A real ``run.py serve`` process on a free loopback port, shared by the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stream.local_server import local_server


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of ``python run.py serve`` on the bundled model, with no registered targets
    (not the user's own folder); stopped after the session."""
    targets = tmp_path_factory.mktemp("targets")
    with local_server("--host", "127.0.0.1", "--targets", str(targets)) as server:
        yield server.url
