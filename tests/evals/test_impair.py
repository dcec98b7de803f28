"""The impairing UDP relay: its seeded schedule, and packets through it on loopback."""

from __future__ import annotations

import asyncio
import itertools

from evals.impair import MAX_QUEUE_S, Impairment, Link, start_relay

SPEC = Impairment(loss=0.05, delay_s=0.100, jitter_s=0.030, rate_kbps=300.0)


def test_the_schedule_drops_delays_and_caps_as_specified():
    link = Link(SPEC, seed=3)
    size = 100  # bytes: 2.7 ms each at 300 kbit/s
    departures = [link.departure(i * 0.01, size) for i in range(5000)]  # 80 kbit/s offered
    kept = [(i, d) for i, d in enumerate(departures) if d is not None]
    assert 0.04 < 1 - len(kept) / len(departures) < 0.06
    waits = [d - i * 0.01 for i, d in kept]
    assert min(waits) >= 0.070 and max(waits) <= 0.130 + size * 8 / 300_000
    assert any(b < a for (_, a), (_, b) in itertools.pairwise(kept))  # reordered
    again = Link(SPEC, seed=3)
    assert departures == [again.departure(i * 0.01, size) for i in range(5000)]  # seeded


def test_more_than_the_cap_is_queued_then_dropped():
    link = Link(Impairment(loss=0.0, delay_s=0.0, jitter_s=0.0, rate_kbps=300.0), seed=0)
    size = 1250  # 33 ms each at 300 kbit/s, offered all at once
    departures = [link.departure(0.0, size) for _ in range(40)]
    kept = [d for d in departures if d is not None]
    assert len(kept) == int(MAX_QUEUE_S / (size * 8 / 300_000)) + 1
    assert max(kept) <= MAX_QUEUE_S + size * 8 / 300_000 + 1e-9


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data, addr)


class Client(asyncio.DatagramProtocol):
    def __init__(self):
        self.got: dict[int, float] = {}

    def datagram_received(self, data, addr):
        self.got[int(data[:4].decode())] = asyncio.get_running_loop().time()


async def test_packets_go_through_the_relay_and_back_impaired():
    loop = asyncio.get_running_loop()
    echo, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    relay, port = await start_relay(echo.get_extra_info("sockname"), SPEC, seed=1)
    client = Client()
    sender, _ = await loop.create_datagram_endpoint(lambda: client, remote_addr=("127.0.0.1", port))
    sent = {}
    for i in range(100):
        sent[i] = loop.time()
        sender.sendto(f"{i:04d}".encode() + bytes(96))
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)
    sender.close(), relay.close(), echo.close()
    assert 80 <= len(client.got) < 100  # about 5 % lost each way
    assert min(client.got[i] - sent[i] for i in client.got) >= 0.140  # two 100 +- 30 ms legs
