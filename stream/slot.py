"""A one-frame mailbox: the newest frame replaces the waiting one, so latency never builds up."""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")


class LatestFrameSlot(Generic[T]):
    """Holds at most one item; ``put`` never blocks, and an item not yet taken is dropped."""

    def __init__(self) -> None:
        self._item: T | None = None
        self._ready = asyncio.Event()
        self._closed = False
        self.dropped = 0

    @property
    def empty(self) -> bool:
        return self._item is None

    def put(self, item: T) -> None:
        if self._closed:
            return
        if self._item is not None:
            self.dropped += 1
        self._item = item
        self._ready.set()

    async def get(self) -> T | None:
        """The newest item, waiting for one if empty; ``None`` once the slot is closed."""
        while self._item is None and not self._closed:
            self._ready.clear()
            await self._ready.wait()
        item, self._item = self._item, None
        return item

    def close(self) -> None:
        self._closed = True
        self._item = None
        self._ready.set()
