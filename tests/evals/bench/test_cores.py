"""Bench section ``cores``: pinned processes at once, each timing the whole frame."""

import argparse
import json
import os

import numpy as np
import pytest
from bench_cases import needs_model
from fakes import jpeg

from evals.bench import cli
from evals.bench.cores import CoresRow, core_counts, cores_rows, format_cores


@pytest.mark.parametrize(
    ("usable", "counts"),
    [(1, [1]), (2, [1, 2]), (6, [1, 2, 4, 6]), (16, [1, 2, 4, 8, 16])],
)
def test_the_ladder_doubles_up_to_every_usable_core(usable, counts):
    assert core_counts(usable) == counts


def test_more_processes_than_cores_is_an_error():
    too_many = len(os.sched_getaffinity(0)) + 1
    with pytest.raises(ValueError, match=f"{too_many} processes need as many cores"):
        cores_rows([too_many], [], 0.1)


def test_the_table_compares_each_count_with_one_process():
    rows = [CoresRow(1, 20.0, 20.0, 100), CoresRow(2, 25.0, 26.0, 160)]
    lines = format_cores(rows).splitlines()
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]]
    assert cells == [["1", "20.00", "20.00", "1.00", "100"], ["2", "25.00", "26.00", "1.25", "160"]]


@needs_model
def test_the_section_runs_pinned_processes_and_reports_them(tmp_path):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    frames = tmp_path / "frames"
    frames.mkdir()
    (frames / "0.jpg").write_bytes(jpeg(np.full((120, 160, 3), 200, np.uint8)))
    out = tmp_path / "cores.json"
    counts = core_counts(len(os.sched_getaffinity(0)))[:2]
    args = parser.parse_args(
        ["--only", "cores", "--cores", ",".join(map(str, counts)), "--cores-seconds", "0.3",
         "--clip", str(frames), "--clock-ghz", "3.0", "--json", str(out)]
    )  # fmt: skip
    lines: list[str] = []
    cli.run_bench(args, lines.append)
    rows = json.loads(out.read_text())["cores"]
    assert [r["processes"] for r in rows] == counts
    assert all(r["cpu_ms"] > 0 and r["frames"] >= r["processes"] for r in rows)
    assert any("## Cores" in line for line in lines)


def test_a_process_that_fails_is_an_error_not_a_wait():
    frame = np.zeros((120, 160, 3), np.uint8)
    with pytest.raises(RuntimeError, match="not every one gave a result: exit codes \\[1\\]"):
        cores_rows([1], [frame], 0.1, tier="no-such-tier")
