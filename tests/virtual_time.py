"""An asyncio event loop on a virtual clock: sleeps take no real time, timers fire in order.

When nothing is ready to run, the loop jumps its clock to the next timer
instead of waiting. Code that reads ``loop.time()`` and sleeps with asyncio
(as ``Session`` does in real time) then runs deterministically and instantly.
Use it with an inline executor, so that no work runs in other threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._virtual_now = 0.0
        real_select = self._selector.select  # type: ignore[attr-defined]

        def select(timeout: float | None = None) -> list[Any]:
            events = real_select(0)
            if events:
                return events
            if timeout is None:  # nothing scheduled: only another thread can wake us
                return real_select(1.0)
            self._virtual_now += timeout  # jump to the next timer
            return events

        self._selector.select = select  # type: ignore[attr-defined]

    def time(self) -> float:
        return self._virtual_now


def run_virtual(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


class InlineExecutor(concurrent.futures.Executor):
    """Runs each submitted call at once, in the calling thread."""

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting task
            future.set_exception(exc)
        return future
