"""run.py profiles: each profile's tier and latency, from the cards or stand-in specs."""

import pytest
from fakes import SPECS

import evals.hw.profiles
import run
from detectors.card import list_cards
from evals.hw.profiles import format_profiles, profile_rows
from hw_sim import DeviceProfile, ModelSpec


def test_profile_rows_list_tier_and_latency_per_profile():
    rows = {r.profile.name: r for r in profile_rows(SPECS)}
    assert rows["host"].spec.tier == "l" and rows["host"].cold_ms is None
    assert rows["low"].spec == ModelSpec("s", "fp32", 80_000_000)
    assert rows["low"].cold_ms == pytest.approx(12.0 + 160 / 12.2, abs=0.01)
    # a frame with one close-up pays the network twice, the pre-processing once
    assert rows["low"].close_up_ms == pytest.approx(12.0 + 2 * 160 / 12.2, abs=0.01)
    assert rows["host"].close_up_ms is None
    assert rows["high"].sustained_ms > rows["high"].cold_ms  # the flagship throttles
    assert rows["low"].p95_ms > rows["low"].p50_ms
    assert "| low " in format_profiles(list(rows.values()))


def test_profile_rows_without_cards_say_so():
    assert {r.reason for r in profile_rows([])} == {"no model cards"}


def test_profiles_bench_adds_the_host_time_and_keeps_every_other_column(capsys):
    assert run.main(["profiles", "--bench"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(header, cells, strict=True))
        for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])
    }
    assert float(rows["host"]["host ms"]) > 0 and float(rows["low"]["host ms"]) > 0
    low = _rows_from_the_cards()["low"]
    assert float(rows["low"]["cold ms"]) == pytest.approx(low.cold_ms, abs=0.05)
    assert float(rows["low"]["1 close-up ms"]) == pytest.approx(low.close_up_ms, abs=0.05)


def _rows_from_the_cards():
    return {r.profile.name: r for r in profile_rows([ModelSpec.from_card(c) for c in list_cards()])}


def test_a_profile_slower_than_the_sustained_window_still_gets_a_row(monkeypatch):
    # 160 s a frame: no frame starts inside the window after SUSTAINED_S
    snail = DeviceProfile("snail", int8_gop_s=0.001, fp32_gop_s=0.001)
    monkeypatch.setattr(evals.hw.profiles, "PROFILES", {"snail": snail})
    (row,) = profile_rows(SPECS)
    assert row.sustained_ms >= row.cold_ms > 100_000
