import asyncio

from stream.slot import LatestFrameSlot


async def test_newest_item_wins_and_older_ones_are_counted():
    slot: LatestFrameSlot[int] = LatestFrameSlot()
    for i in range(5):
        slot.put(i)
    assert await slot.get() == 4
    assert slot.dropped == 4
    assert slot.empty


async def test_get_waits_for_a_put():
    slot: LatestFrameSlot[str] = LatestFrameSlot()
    waiter = asyncio.create_task(slot.get())
    await asyncio.sleep(0)
    assert not waiter.done()
    slot.put("frame")
    assert await asyncio.wait_for(waiter, 1) == "frame"


async def test_close_wakes_a_waiter_and_ignores_later_puts():
    slot: LatestFrameSlot[int] = LatestFrameSlot()
    waiter = asyncio.create_task(slot.get())
    await asyncio.sleep(0)
    slot.close()
    assert await asyncio.wait_for(waiter, 1) is None
    slot.put(1)
    assert await slot.get() is None
