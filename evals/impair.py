"""A UDP relay that impairs what passes: seeded loss, delay with jitter, a bandwidth cap.

This machine's kernel has no ``netem``, so the impairment sits on the media path as a
relay of our own: a browser's TURN server URL points at it, and it forwards to the TURN
server (and back), each direction through its own :class:`Link`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import cast

MAX_QUEUE_S = 0.5
"""Packets that would wait longer than this for the capped link are dropped (a bounded
queue, as a router's)."""


@dataclass(frozen=True, slots=True)
class Impairment:
    loss: float = 0.05
    delay_s: float = 0.100
    jitter_s: float = 0.030
    rate_kbps: float = 300.0


@dataclass(slots=True)
class Link:
    """One direction of an impaired path: when each packet leaves, by a seeded schedule."""

    impairment: Impairment
    seed: int
    free_at: float = 0.0  # when the capped link has sent what it holds
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def departure(self, now: float, size: int) -> float | None:
        """When a packet of ``size`` bytes arriving at ``now`` is delivered; ``None``: dropped.
        Jitter reorders packets as it does on a real path."""
        spec = self.impairment
        if self.rng.random() < spec.loss:
            return None
        start = max(now, self.free_at)
        if start - now > MAX_QUEUE_S:
            return None
        self.free_at = start + size * 8 / (spec.rate_kbps * 1000)
        jitter = self.rng.uniform(-spec.jitter_s, spec.jitter_s)
        return self.free_at + max(0.0, spec.delay_s + jitter)


class _Upstream(asyncio.DatagramProtocol):
    """The relay's socket toward the server for one client: replies go back impaired."""

    def __init__(self, relay: ImpairedRelay, client: tuple[str, int]) -> None:
        self.relay, self.client = relay, client

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.relay.forward(self.relay.down, self.relay.listener, data, self.client)


class ImpairedRelay(asyncio.DatagramProtocol):
    """Listens on a loopback UDP port and relays every client's datagrams to ``upstream``
    and back, through a seeded :class:`Link` each way."""

    def __init__(self, upstream: tuple[str, int], impairment: Impairment, seed: int) -> None:
        self.upstream = upstream
        self.up = Link(impairment, seed)
        self.down = Link(impairment, seed + 1)
        self.listener: asyncio.DatagramTransport | None = None
        self.clients: dict[tuple[str, int], asyncio.DatagramTransport] = {}
        self.sent = self.dropped = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.listener = cast(asyncio.DatagramTransport, transport)  # asyncio's is no subclass

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        upstream = self.clients.get(addr)
        if upstream is None:
            asyncio.get_running_loop().create_task(self._open(addr, data))
            return
        self.forward(self.up, upstream, data, None)

    async def _open(self, client: tuple[str, int], first: bytes) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Upstream(self, client), remote_addr=self.upstream
        )
        self.clients[client] = transport
        self.forward(self.up, transport, first, None)

    def forward(
        self,
        link: Link,
        transport: asyncio.DatagramTransport | None,
        data: bytes,
        to: tuple[str, int] | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        departure = link.departure(loop.time(), len(data))
        if departure is None or transport is None:
            self.dropped += 1
            return
        self.sent += 1
        loop.call_at(departure, _send, transport, data, to)

    def close(self) -> None:
        for transport in self.clients.values():
            transport.close()
        if self.listener is not None:
            self.listener.close()


def _send(transport: asyncio.DatagramTransport, data: bytes, to: tuple[str, int] | None) -> None:
    if not transport.is_closing():  # the relay closed while the packet was on its way
        transport.sendto(data, to)


async def start_relay(
    upstream: tuple[str, int], impairment: Impairment, seed: int
) -> tuple[ImpairedRelay, int]:
    """A running relay on a loopback port the OS picks, and that port."""
    relay = ImpairedRelay(upstream, impairment, seed)
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: relay, local_addr=("127.0.0.1", 0)
    )
    return relay, int(transport.get_extra_info("sockname")[1])
