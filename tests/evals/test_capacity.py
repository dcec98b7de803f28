"""``run.py capacity``: the model's arithmetic on numbers worked out by hand."""

import dataclasses

import pytest

from evals.capacity import LEASE_BYTES, Inputs, main, plan

BASE = Inputs(
    streams=1000,
    fps=10.0,
    cpu_ms_per_frame=10.0,  # 0.1 core a stream: 100 cores
    cores_per_host=10,
    utilization=0.5,  # 5 cores a host: 20 hosts
    video_kbps=500.0,
    result_bytes=250.0,
    session_s=50.0,
    targets=10,
    target_bytes=1000.0,
    lease_ttl_s=15.0,
    poll_s=0.5,
)


def test_cores_hosts_network_and_redis_follow_the_model():
    result = plan(BASE)
    assert result.cores == pytest.approx(100.0)
    assert (result.hosts, result.streams_per_host) == (20, 50)
    assert result.ingress_gbps == pytest.approx(0.5)  # 1000 x 500 kbit/s
    assert result.egress_gbps == pytest.approx(0.02)  # 1000 x 10 x 250 B x 8
    assert result.host_ingress_mbps == pytest.approx(25.0)
    # 40 lease takes and returns, 200 workers renewing every 5 s, polling every 0.5 s
    assert result.redis_ops_per_s == pytest.approx(40 + 40 + 400)
    assert result.redis_memory_mib == pytest.approx((10_000 + 1000 * LEASE_BYTES) / 2**20)


def test_a_small_peak_still_needs_one_host():
    assert plan(dataclasses.replace(BASE, streams=1)).hosts == 1


def test_the_command_prints_its_assumptions(capsys):
    assert main(["--streams", "100000", "--fps", "15"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("100000 streams at 15 fps:")
    assert "assumptions (flags):" in out and "--utilization" in out


def test_a_utilization_over_one_is_refused(capsys):
    assert main(["--utilization", "1.5"]) == 2
