"""run.py bench: the chosen sections run and every number goes to --json."""

import argparse
import json

import pytest
from bench_cases import TIERS, needs_model

from evals.bench import cli


@needs_model
def test_run_bench_writes_json(tmp_path):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    out = tmp_path / "cli.json"
    args = parser.parse_args(
        [
            "--only",
            "detector",
            "--tiers",
            TIERS[0],
            "--rounds",
            "1",
            "--runs",
            "1",
            "--clock-ghz",
            "3.0",
            "--json",
            str(out),
        ]
    )
    lines: list[str] = []
    report = cli.run_bench(args, lines.append)
    assert json.loads(out.read_text())["detector"]["rows"] == json.loads(
        json.dumps(report["detector"]["rows"])
    )
    assert any("FP32 vs INT8" in line for line in lines)
    with pytest.raises(SystemExit):
        cli.run_bench(parser.parse_args(["--only", "nonsense"]), lines.append)
