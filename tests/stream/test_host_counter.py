"""The session table that every worker of a host shares: limits over processes, reclaim."""

import os
import subprocess
import sys

import pytest

from stream.admission import Admission
from stream.host_counter import HostCounter


@pytest.fixture
def table(tmp_path):
    HostCounter.create(tmp_path / "sessions", 4)
    return tmp_path / "sessions"


def test_two_counters_on_one_table_share_the_limits(table):
    first, second = HostCounter(table), HostCounter(table)
    assert first.take("a", 4, 2) is None
    assert second.take("a", 4, 2) is None
    assert second.take("a", 4, 2) == "client"
    assert first.take("b", 4, 2) is None
    assert second.take("c", 4, 2) is None
    assert first.take("d", 4, 2) == "full"
    assert first.total() == second.total() == 4
    first.give_back("a")
    assert (second.total(), second.take("d", 4, 2)) == (3, None)


def test_held_counts_the_slots_of_each_process(table):
    counter = HostCounter(table)
    assert counter.held() == {}
    assert counter.take("a", 4, 4) is None
    assert counter.take("b", 4, 4) is None
    assert counter.held() == {os.getpid(): 2}


def test_admission_over_a_host_counter_says_why_it_refuses(table):
    admission = Admission(1, 1, HostCounter(table))
    ticket = admission.admit("a")
    assert admission.admit("b") == "server full (1 sessions)"
    assert not isinstance(ticket, str)
    ticket.release()
    ticket.release()
    assert admission.total == 0


def test_the_slots_of_a_dead_process_are_reclaimed_and_no_one_elses(table):
    script = (
        "import os, sys; from pathlib import Path; from stream.host_counter import HostCounter; "
        "c = HostCounter(Path(sys.argv[1])); c.take('x', 4, 4); c.take('x', 4, 4); "
        "print(os.getpid())"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, str(table)], check=True, capture_output=True, text=True
    )
    mine = HostCounter(table)
    assert mine.take("x", 4, 4) is None
    assert mine.total() == 3
    assert mine.reclaim(os.getpid() + 10**7) == 0  # no such process: nothing freed
    assert mine.reclaim(int(child.stdout)) == 2
    assert mine.total() == 1
    assert mine.take("x", 4, 2) is None  # the dead process's two no longer count for "x"


def test_giving_back_frees_only_a_slot_this_process_took_for_that_client(table):
    counter = HostCounter(table)
    counter.take("a", 4, 4)
    counter.give_back("b")  # never taken: nothing changes
    assert counter.total() == 1
    counter.give_back("a")
    assert counter.total() == 0
