"""``python run.py capacity --streams 100000 --fps 15``: what a campaign peak needs.

Cores, hosts, network and Redis load for ``--streams`` phones streaming at once, from the
per-stream costs measured here (each default says where) and the assumptions given as
flags (printed with the result). The model (docs/scaling.md, "Capacity model"):

- CPU: a stream costs the server ``cpu_ms_per_frame`` of CPU per frame it sends; a host
  is filled to ``utilization`` of its cores (headroom for bursts, the latency bound and
  the loss of a host); capacity grows linearly with cores (one worker per core).
- Network: each stream sends ``video_kbps`` in and gets one result message per frame out.
- Redis: each session start takes a lease (one script call) and its end gives it back (one
  call); each server renews its leases every third of the lease TTL (one call) and checks
  the targets' version every ``poll_s``; each registered target takes ``target_bytes``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from stream.cli_types import positive_int, positive_number
from stream.redis_state import LEASE_TTL_S, POLL_S

CPU_MS_PER_FRAME = 34.0
"""Server CPU per frame of a 640x480 stream with 福 in view (``run.py loadtest --save-clip``'s
clip), host profile: 33.7 ms a frame for one websocket stream on one worker, 29.8 on two
(``run.py loadtest --find-capacity --workers 1,2``), 33 ms through ``run.py replay --fast``,
on a 2-core AMD EPYC (AVX2, no VNNI) shared with other jobs (load average 6-9)."""
RESULT_BYTES = 265
"""A ``frame`` result message with a detection, JSON payload: the median over the 74
real-world 福 photos through ``run.py replay --fast`` (188 with or without a detection)."""
TARGET_BYTES = 123_280
"""Redis memory of one registered target (``MEMORY USAGE``: features and its PNG photo):
the median of 10 real-world photos of at most 480 px (58-361 KB); larger photos are
stored at up to 1024 px and take more."""
LEASE_BYTES = 287
"""Redis memory per session lease, each client with its own sorted set (2000 leases)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    streams: int
    fps: float
    cpu_ms_per_frame: float
    cores_per_host: int
    utilization: float
    video_kbps: float
    result_bytes: float
    session_s: float
    targets: int
    target_bytes: float
    lease_ttl_s: float = LEASE_TTL_S
    poll_s: float = POLL_S


@dataclass(frozen=True, slots=True)
class Plan:
    cores: float
    """CPU the streams use, in cores, before headroom."""
    hosts: int
    streams_per_host: int
    """What each host's ``--max-sessions`` should allow."""
    ingress_gbps: float
    egress_gbps: float
    host_ingress_mbps: float
    redis_ops_per_s: float
    redis_memory_mib: float


def plan(inputs: Inputs) -> Plan:
    """The resources ``inputs`` need (see the module doc for the model)."""
    cores = inputs.streams * inputs.fps * inputs.cpu_ms_per_frame / 1000.0
    hosts = max(1, math.ceil(cores / (inputs.cores_per_host * inputs.utilization)))
    ingress = inputs.streams * inputs.video_kbps * 1e3
    egress = inputs.streams * inputs.fps * inputs.result_bytes * 8
    leases = 2 * inputs.streams / inputs.session_s  # take and give back
    renewals = hosts * inputs.cores_per_host / (inputs.lease_ttl_s / 3)  # one per worker
    polls = hosts * inputs.cores_per_host / inputs.poll_s
    memory = inputs.targets * inputs.target_bytes + inputs.streams * LEASE_BYTES
    return Plan(
        cores=cores,
        hosts=hosts,
        streams_per_host=math.ceil(inputs.streams / hosts),
        ingress_gbps=ingress / 1e9,
        egress_gbps=egress / 1e9,
        host_ingress_mbps=ingress / hosts / 1e6,
        redis_ops_per_s=leases + renewals + polls,
        redis_memory_mib=memory / 2**20,
    )


def report(inputs: Inputs, result: Plan) -> str:
    per_stream = inputs.fps * inputs.cpu_ms_per_frame / 1000.0
    return "\n".join(
        [
            f"{inputs.streams} streams at {inputs.fps:g} fps:",
            f"  CPU      {result.cores:,.0f} cores in use ({per_stream:.3f} core a stream: "
            f"{inputs.cpu_ms_per_frame:g} ms a frame)",
            f"  hosts    {result.hosts} of {inputs.cores_per_host} cores at "
            f"{inputs.utilization:.0%} ({result.streams_per_host} streams each: "
            f"--max-sessions {result.streams_per_host})",
            f"  network  in {result.ingress_gbps:,.1f} Gbit/s ({result.host_ingress_mbps:,.0f} "
            f"Mbit/s a host), out {result.egress_gbps:,.2f} Gbit/s of results",
            f"  Redis    {result.redis_ops_per_s:,.0f} commands/s, "
            f"{result.redis_memory_mib:,.0f} MiB ({inputs.targets} targets + the leases)",
            "assumptions (flags):",
            f"  a host is filled to {inputs.utilization:.0%} of its cores (--utilization); "
            "capacity grows linearly with cores (one worker a core)",
            f"  a session lasts {inputs.session_s:g} s on average (--session-s): "
            f"{inputs.streams / inputs.session_s:,.0f} session starts a second",
            f"  video {inputs.video_kbps:g} kbit/s a stream (--video-kbps), results "
            f"{inputs.result_bytes:g} bytes a frame (--result-bytes); payloads, without "
            "transport headers",
            f"  one Redis client per core (worker); leases renewed every "
            f"{inputs.lease_ttl_s / 3:g} s, target version checked every {inputs.poll_s:g} s",
        ]
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--streams", type=positive_int, default=100_000, help="phones streaming at once"
    )
    parser.add_argument(
        "--fps", type=positive_number, default=15.0, help="frames a second each sends"
    )
    parser.add_argument(
        "--cpu-ms-per-frame",
        type=positive_number,
        default=CPU_MS_PER_FRAME,
        help="server CPU per frame of a 640x480 stream (default: %(default)s, measured by "
        "run.py loadtest --find-capacity on a 2-core AMD EPYC without VNNI, docs/scaling.md)",
    )
    parser.add_argument(
        "--cores-per-host", type=positive_int, default=16, help="cores of one server host"
    )
    parser.add_argument(
        "--utilization", type=positive_number, default=0.7, help="of each host's cores"
    )
    parser.add_argument(
        "--video-kbps",
        type=positive_number,
        default=490.0,
        help="video a stream sends (default: what a 640x480 15 fps clip coded at the "
        "server's 500 kbit/s ask measured, docs/benchmarks.md 'Bitrate')",
    )
    parser.add_argument(
        "--result-bytes",
        type=positive_number,
        default=RESULT_BYTES,
        help="a frame's result message (default: %(default)s, the median measured, "
        "docs/scaling.md)",
    )
    parser.add_argument(
        "--session-s", type=positive_number, default=60.0, help="average session length"
    )
    parser.add_argument("--targets", type=int, default=1000, help="registered scan targets")
    parser.add_argument(
        "--target-bytes",
        type=positive_number,
        default=TARGET_BYTES,
        help="Redis memory a target takes (default: %(default)s, measured, docs/scaling.md)",
    )


def run(args: argparse.Namespace) -> int:
    if args.utilization > 1:
        print("run.py capacity: error: --utilization is a fraction of the cores, at most 1")
        return 2
    inputs = Inputs(
        streams=args.streams,
        fps=args.fps,
        cpu_ms_per_frame=args.cpu_ms_per_frame,
        cores_per_host=args.cores_per_host,
        utilization=args.utilization,
        video_kbps=args.video_kbps,
        result_bytes=args.result_bytes,
        session_s=args.session_s,
        targets=args.targets,
        target_bytes=args.target_bytes,
    )
    print(report(inputs, plan(inputs)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py capacity", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
