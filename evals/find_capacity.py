"""How many streams one host holds per worker count: ``run.py loadtest --find-capacity``.

    python run.py loadtest --find-capacity --workers 1,2
    python run.py loadtest --find-capacity --workers 1,4,8,14 --client-procs 2 --duration 6
    python run.py loadtest --find-capacity --workers 1,4,8,14 --client-procs 2 --cores-per-worker 1

For each worker count, a local ``run.py serve --workers N`` and a search over the number
of streams (15 fps each): a step is held when the server-side p95 latency stays within
the bound, (almost) every frame is answered and the lag does not grow, as in
``run.py bench``'s capacity section. The search starts from the last count's streams per
worker, grows by half until a step fails, then halves the gap down to a tenth. The table
says the streams held, how that compares with linear scaling from one worker, and what a
stream costs the server (CPU per stream, CPU per frame).

With ``--cores-per-worker K``, a server of N workers runs on N*K cores only and the clients on
cores of their own, so that capacity is compared per core given: one unpinned worker already
spreads its inference threads over several cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from evals.bench.capacity import CapacityRow, capacity_row
from evals.loadtest import LoadClients, local_server
from evals.tables import table

MAX_STREAMS = 1024
"""The local server's session limit: the search goes no further."""
PRECISION = 0.1
"""The search stops once the held and the failed step are this close (relative)."""
LINEAR_SHARE = 0.8
"""The target: capacity grows at least this share of linearly with workers."""
WARM_UP_S = 3.0
"""Seconds of one stream a worker before a fresh server's first step, not measured: a
worker's first frames pay for its model sessions' first runs."""
DRAIN_TIMEOUT_S = 15.0
"""The longest a step waits for the sessions of the one before to close: a worker still
holding them would be handed fewer of the new streams than its share."""


@dataclass(frozen=True, slots=True)
class Capacity:
    workers: int
    streams: int
    """The most streams a step held (0: not even one)."""
    row: CapacityRow | None
    """That step's measurements."""
    steps: int


def most_held(
    measure: Callable[[int], CapacityRow], guess: int, limit: int = MAX_STREAMS
) -> tuple[int, CapacityRow | None, int]:
    """The most streams ``measure`` holds, its row, and the steps measured: up from
    ``guess`` by half until a step is not held, then bisecting to :data:`PRECISION`."""
    held, held_row, failed, steps = 0, None, limit + 1, 0
    n = max(1, min(guess, limit))
    while True:
        row = measure(n)
        steps += 1
        if row.held:
            held, held_row = n, row
        else:
            failed = n
        if failed - held <= max(1, int(held * PRECISION)) or held == limit:
            return held, held_row, steps
        n = min(limit, max(n + 1, n * 3 // 2)) if failed > limit else (held + failed) // 2


@dataclass(frozen=True, slots=True)
class Pinning:
    """Where ``--cores-per-worker`` runs each side: a server of N workers on the first
    N * ``per_worker`` of ``server_cores``, the clients on ``client_cores``."""

    per_worker: int
    server_cores: tuple[int, ...]
    client_cores: tuple[int, ...]

    @classmethod
    def split(
        cls, per_worker: int, client_procs: int, counts: Sequence[int], usable: Sequence[int]
    ) -> Pinning:
        """The last ``client_procs`` of the ``usable`` cores for the clients, the rest for
        the servers.

        Raises:
            ValueError: the largest of ``counts`` needs more cores than that leaves.
        """
        cores = sorted(usable)
        need = max(counts) * per_worker
        if need + client_procs > len(cores):
            raise ValueError(
                f"{max(counts)} workers of {per_worker} cores and {client_procs} client "
                f"processes need {need + client_procs} cores; this process may use {len(cores)}"
            )
        return cls(per_worker, tuple(cores[:-client_procs]), tuple(cores[-client_procs:]))

    def server(self, workers: int) -> tuple[int, ...]:
        return self.server_cores[: workers * self.per_worker]


@dataclass(frozen=True, slots=True)
class Load:
    """What every step streams: ``transport`` streams at ``fps`` for ``duration`` s."""

    transport: str
    fps: float
    duration: float
    phases: str = "independent"
    clip: str | None = None
    """``run.py loadtest --clip``: the camera clip (``None``: the generated one)."""


def find_capacity(
    counts: Sequence[int],
    load: Load,
    profile: str,
    clients: LoadClients,
    max_video_kbps: int | None = None,
    out: Callable[[str], None] = print,
    pinning: Pinning | None = None,
    pin_workers: bool = False,
) -> list[Capacity]:
    """Per worker count, a fresh local server and the most streams of ``load`` it holds
    (on the cores ``pinning`` gives it, if any; with ``pin_workers``, each worker on its own)."""
    logging.getLogger("aioice").setLevel(logging.WARNING)
    found: list[Capacity] = []
    per_worker = 4.0  # streams a worker holds: a first guess, then the last count's
    for workers in counts:
        cores = None if pinning is None else pinning.server(workers)
        server = local_server(profile, max_video_kbps, workers, cores, pin_workers)
        with server as (url, pid):
            warm_up = dataclasses.replace(load, duration=WARM_UP_S)
            step(clients, url, None, warm_up, "warm-up", lambda _line: None, workers)
            measure = partial(step, clients, url, pid, load, f"{workers} workers", out)
            streams, row, steps = most_held(measure, round(per_worker * workers))
        found.append(Capacity(workers, streams, row, steps))
        out(f"{workers} workers: {streams} streams held" + (
            f", server CPU {row.server_cpu / streams:.1f}% of a core per stream"
            if row and streams else ""
        ))  # fmt: skip
        per_worker = max(1.0, streams / workers)
    return found


def sessions_open(url: str) -> int:
    """The sessions the server at ``url`` holds now, the host's, as its ``/readyz`` says
    (503 while full or draining, with the same body)."""
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=5.0) as response:
            body = response.read()
    except urllib.error.HTTPError as refused:
        body = refused.read()
    return int(json.loads(body)["sessions"])


def wait_drained(url: str, timeout: float = DRAIN_TIMEOUT_S) -> int:
    """Wait until the server at ``url`` holds no session (at most ``timeout`` s); the
    sessions still open then."""
    deadline = time.monotonic() + timeout
    while (left := sessions_open(url)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def step(
    clients: LoadClients,
    url: str,
    pid: int | None,
    load: Load,
    name: str,
    out: Callable[[str], None],
    n: int,
) -> CapacityRow:
    """``n`` streams of ``load`` against the server at ``url`` (``pid``: the process to sample,
    ``None``: none), once the sessions before have closed: held or not, and why."""
    if left := wait_drained(url):
        out(f"  {name}: {left} sessions of the step before still open")
    ws, rtc = (n, 0) if load.transport == "websocket" else (0, n)
    result = clients.measure(
        url, pid, ws, rtc, load.fps, load.duration, 1.0, load.phases, load.clip
    )
    row = capacity_row(result, load.transport)
    out(
        f"  {name}, {n} streams: {'held' if row.held else 'not held'} (server p95 "
        f"{row.server_p95:.0f} ms, {100 * row.result_share:.0f}% answered, "
        f"server CPU {row.server_cpu:.0f}% = {row.server_cpu_ms_per_frame:.1f} ms a frame, "
        f"busiest process {row.busiest_cpu:.0f}%, client CPU {row.client_cpu:.0f}%, "
        f"load {row.loadavg:.1f})"
    )
    return row


def format_capacity(found: Sequence[Capacity]) -> str:
    """The table: streams held, scaling against one worker and the target, CPU per stream."""
    base = next((c for c in found if c.workers == 1), None)
    header = ["workers", "streams held", "per worker", "x 1 worker", "target x",
              "server CPU %", "CPU % per stream", "CPU ms/frame", "server p95 ms",
              "client CPU %", "steps"]  # fmt: skip
    body = []
    for c in found:
        row = c.row
        scale = f"{c.streams / base.streams:.2f}" if base and base.streams else "-"
        target = f"{LINEAR_SHARE * c.workers:.1f}"
        per_stream = f"{row.server_cpu / c.streams:.1f}" if row and c.streams else "-"
        body.append([
            str(c.workers), str(c.streams), f"{c.streams / c.workers:.1f}", scale, target,
            f"{row.server_cpu:.0f}" if row else "-", per_stream,
            f"{row.server_cpu_ms_per_frame:.1f}" if row else "-",
            f"{row.server_p95:.1f}" if row else "-", f"{row.client_cpu:.0f}" if row else "-",
            str(c.steps),
        ])  # fmt: skip
    return table(header, body)


def find_capacity_main(args: argparse.Namespace) -> int:
    usable = sorted(os.sched_getaffinity(0))
    counts = args.workers or [1, len(usable)]
    pinning = None
    if args.cores_per_worker:
        try:
            pinning = Pinning.split(args.cores_per_worker, args.client_procs, counts, usable)
        except ValueError as exc:
            print(f"loadtest: --cores-per-worker: {exc}", file=sys.stderr)
            return 2
        os.sched_setaffinity(0, pinning.client_cores)  # this process and its client pool
    with LoadClients(args.client_procs) as clients:
        load = Load(args.transport, args.fps, args.duration, args.phases, args.clip)
        found = find_capacity(
            counts,
            load,
            args.profile,
            clients,
            args.max_video_kbps,
            pinning=pinning,
            pin_workers=args.pin_workers,
        )
    where = (
        f"the same {len(usable)} cores"
        if pinning is None
        else f"cores of their own ({len(pinning.client_cores)}); each server on "
        f"{pinning.per_worker} core(s) a worker"
    ) + (", each worker on cores of its own" if args.pin_workers else "")
    print(
        f"\n{args.transport} streams at {args.fps:g} fps held per worker count, "
        f"{args.duration:g} s a step, profile {args.profile!r}, {args.phases} camera phases, "
        f"clip {args.clip or 'generated'}, {args.client_procs} client processes on {where}"
    )
    print(format_capacity(found))
    return 0
