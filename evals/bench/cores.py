"""Bench section ``cores``: what a frame costs one core while the other cores work too.

N processes, each pinned to a core of its own, run the whole frame (the l INT8 detector at one
thread, close-ups included) on the load-test clip's frames for a few seconds, all at once;
each reports the median CPU ms a frame. If that cost rises with N (SMT siblings sharing a core,
an all-core clock below the one-core clock, shared caches), every stream of a host gets dearer
as its workers are added, whatever the server does: ``serve --workers N`` cannot scale better
than this table (docs/scaling.md).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Barrier
from typing import Any

from clients.ws_client import encode_jpeg
from detectors.core import ImageBGR
from evals.tables import table

WARM_UP_FRAMES = 5
START_S = 120.0
"""Seconds a step's processes may take to load their model, beyond the step itself."""


@dataclass(frozen=True, slots=True)
class CoresRow:
    processes: int
    cpu_ms: float
    """Median CPU ms a frame, the mean over the processes..."""
    slowest_ms: float
    """...and the slowest process's."""
    frames: int
    """Frames all the processes ran in all."""


def core_counts(usable: int) -> list[int]:
    """1, 2, 4, ... and every usable core: the processes run at once, one ladder step each."""
    counts, n = [], 1
    while n < usable:
        counts.append(n)
        n *= 2
    return [*counts, usable]


def cores_rows(
    counts: Sequence[int], frames: Sequence[ImageBGR], seconds: float, tier: str = "l"
) -> list[CoresRow]:
    """Per count, that many pinned processes running ``tier`` INT8 on ``frames`` at once for
    ``seconds``.

    Raises:
        ValueError: a count exceeds this process's usable cores.
        RuntimeError: a process ended without a result (its traceback is on stderr).
    """
    cores = sorted(os.sched_getaffinity(0))
    if max(counts) > len(cores):
        raise ValueError(
            f"{max(counts)} processes need as many cores; this one may use {len(cores)}"
        )
    jpegs = [encode_jpeg(frame) for frame in frames]
    context = multiprocessing.get_context("spawn")
    rows = []
    for count in counts:
        start, results = context.Barrier(count), context.Queue()
        processes = [
            context.Process(target=_run, args=(cores[k], tier, jpegs, seconds, start, results))
            for k in range(count)
        ]
        for process in processes:
            process.start()
        try:
            measured = _results(processes, results, time.monotonic() + seconds + START_S)
        finally:
            for process in processes:
                process.kill()  # a no-op for those that ended, as each does once it has reported
                process.join()
        medians = [ms for ms, _ in measured]
        frames_run = sum(n for _, n in measured)
        rows.append(CoresRow(count, statistics.mean(medians), max(medians), frames_run))
    return rows


def _results(
    processes: Sequence[BaseProcess], results: Any, deadline: float
) -> list[tuple[float, int]]:
    """One result from each of ``processes``, or an error as soon as one has failed."""
    got: list[tuple[float, int]] = []
    while len(got) < len(processes):
        try:
            got.append(results.get(timeout=0.5))
        except queue.Empty:
            codes = [p.exitcode for p in processes]
            if time.monotonic() > deadline or any(code for code in codes):
                raise RuntimeError(
                    f"{len(processes)} pinned processes, not every one gave a result: exit "
                    f"codes {codes}"
                ) from None
    return got


def _run(
    core: int, tier: str, jpegs: list[bytes], seconds: float, start: Barrier, results: Any
) -> None:
    """One pinned process of :func:`cores_rows`: (median CPU ms a frame, frames) to ``results``."""
    import cv2

    from detectors.onnx_detector import load_detector
    from stream.images import image_decoder
    from stream.session import decode_for

    os.sched_setaffinity(0, {core})
    cv2.setNumThreads(1)
    detector = load_detector(tier, "int8", threads=1)
    side = detector.model.input_side  # decoded as a session decodes a client's JPEG
    frames = [decode_for(image_decoder(jpeg), side)[0] for jpeg in jpegs]
    for frame in frames[:WARM_UP_FRAMES]:
        detector.detect(frame)
    start.wait()
    spent: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        before = time.process_time()
        detector.detect(frames[len(spent) % len(frames)])
        spent.append(time.process_time() - before)
    results.put((statistics.median(spent) * 1000, len(spent)))


def format_cores(rows: Sequence[CoresRow]) -> str:
    """The rows as a table, each row's CPU ms against the first row's."""
    first = rows[0]
    return table(
        ["processes at once", "CPU ms a frame", "slowest process",
         f"x {first.processes} at once", "frames"],
        [
            [str(r.processes), f"{r.cpu_ms:.2f}", f"{r.slowest_ms:.2f}",
             f"{r.cpu_ms / first.cpu_ms:.2f}", str(r.frames)]
            for r in rows
        ],
    )  # fmt: skip
