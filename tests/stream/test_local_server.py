"""``run.py serve`` as a subprocess: on the port its OS picked, announced back, and stopped."""

import os
import socket
import time
import urllib.request

import psutil
import pytest

from stream.local_server import START_TIMEOUT_S, local_server, start_server, stop_server


def test_the_server_listens_where_it_announced_without_a_port_picked_here(
    monkeypatch, capsys, tmp_path
):
    # A port bound and released here could be taken by another process before the server's.
    def no_bind(*_):
        raise AssertionError("a port was picked outside the server")

    monkeypatch.setattr(socket.socket, "bind", no_bind)
    with local_server("--targets", str(tmp_path)) as server:
        assert urllib.request.urlopen(server.url + "/", timeout=10).status == 200
    assert server.url == f"http://127.0.0.1:{server.port}"
    assert server.process.returncode == 0  # a graceful shutdown
    # Not quiet: the server's own output is passed on.
    assert f"open {server.url}/\n" in capsys.readouterr().out


def test_a_server_started_again_on_its_port_gets_that_port(tmp_path):
    first = start_server("--targets", str(tmp_path), quiet=True)
    stop_server(first)
    again = start_server("--targets", str(tmp_path), port=first.port, quiet=True)
    try:
        assert (again.url, again.port) == (first.url, first.port)
    finally:
        stop_server(again)


def test_a_port_in_use_fails_as_the_server_exits_not_at_the_timeout(tmp_path):
    began = time.monotonic()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="did not start"):
            start_server("--targets", str(tmp_path), port=port, quiet=True)
    assert time.monotonic() - began < START_TIMEOUT_S


def test_a_server_given_cores_runs_its_workers_on_them_and_splits_them_among_them(tmp_path, capsys):
    one = min(os.sched_getaffinity(0))
    with local_server("--targets", str(tmp_path), "--workers", "2", cores={one}) as server:
        processes = [psutil.Process(server.process.pid)]
        processes += processes[0].children(recursive=True)
        assert len(processes) >= 3  # the parent and its two workers
        assert {tuple(p.cpu_affinity()) for p in processes} == {(one,)}
    # One core over two workers: each still gets an inference thread.
    assert "2 workers, 1 inference threads each" in capsys.readouterr().out
