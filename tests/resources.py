"""What this test process holds (file descriptors, asyncio tasks, memory), to check releases."""

from __future__ import annotations

import asyncio
import gc

import psutil


def snapshot() -> tuple[int, int, int]:
    """Open file descriptors, live asyncio tasks and RSS bytes, after a garbage collection."""
    gc.collect()
    process = psutil.Process()
    return process.num_fds(), len(asyncio.all_tasks()), process.memory_info().rss


async def released(fds: int, tasks: int, timeout: float = 10.0) -> None:
    """Wait (bounded) until no more than ``fds`` descriptors and ``tasks`` tasks are held.

    Closed sockets and finished handlers are let go over a few loop turns, not at once.

    Raises:
        TimeoutError: something is still held after ``timeout`` seconds.
    """
    async with asyncio.timeout(timeout):
        while True:
            held_fds, held_tasks, _ = snapshot()
            if held_fds <= fds and held_tasks <= tasks:
                return
            await asyncio.sleep(0.05)
