"""The asyncio layer: sockets, peer connections and executors that feed the pure cores."""
