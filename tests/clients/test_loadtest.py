"""The load generator survives a server that drops one of its streams."""

import asyncio
import json
import time

from websockets.asyncio.server import ServerConnection, serve

from clients.loadtest import StreamStats, websocket_stream


async def test_a_websocket_stream_closed_by_the_server_is_counted_lost_not_raised() -> None:
    async def close_after_three_frames(ws: ServerConnection) -> None:
        await ws.recv()  # start
        await ws.send(json.dumps({"type": "ready"}))
        for _ in range(6):  # three timestamp + frame pairs
            await ws.recv()
        await ws.close(1011, "test: server gives up")

    async with serve(close_after_three_frames, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        stats = StreamStats("websocket")
        stop = time.monotonic() + 3.0
        await asyncio.wait_for(
            websocket_stream(f"ws://127.0.0.1:{port}", [b"jpeg"], 50.0, stop, stats), 5.0
        )
    assert stats.lost
    assert 3 <= stats.sent < 50
