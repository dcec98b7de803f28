"""Admission control, auth and origin checks: who may open a session, and how many at once."""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from aiohttp import web

from stream.leases import ClientLeases, Lease

GUARDED_PATHS = ("/offer", "/ws", "/targets", "/ice-servers")
"""Paths that need the token and an allowed origin (``/healthz`` and ``/readyz`` do not:
probes carry neither)."""
SHUTTING_DOWN = "the server is shutting down"
"""Why sessions end, and new ones are refused, once the server's shutdown has begun."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Server-wide policy (``python run.py serve --help`` documents each flag).

    Attributes:
        default_profile: device profile of sessions that do not name one.
        max_sessions: sessions open at once over all clients (WebRTC + websocket).
        max_sessions_per_client: sessions open at once from one client address.
        token: when set, ``/offer`` and ``/ws`` need ``Authorization: Bearer TOKEN``
            or ``?token=TOKEN`` (browsers cannot set headers on websockets).
        allowed_origins: when non-empty, requests whose ``Origin`` header is not
            listed are refused (a page on another site cannot use the camera API).
        ice_timeout_s: a peer connection that is not connected this long after
            its offer is closed.
        ice_servers: ICE server URLs (:data:`stream.ice.ICE_URL`: at most one STUN and one
            TURN server) that each peer connection and the page (``GET /ice-servers``) use;
            empty: host candidates only, and no query leaves the server (aiortc alone would
            ask Google's STUN server every offer).
        turn_secret: the TURN server's shared secret (coturn's ``static-auth-secret``): each
            session gets TURN credentials minted from it, valid ``turn_ttl_s`` seconds.
        turn_ttl_s: how long minted TURN credentials are valid.
        ice_relay_only: the server's peers use relay (TURN) candidates only.
        max_video_kbps: the most video a WebRTC client is asked to send, kbit/s (SDP
            ``b=AS`` and REMB, :mod:`stream.bitrate`); 0: no limit. 500 is a third of what a
            browser sends of a 640x480 camera, at the same per-frame recall.
        announce_ip: the address clients reach this server's media at (behind NAT or a
            balancer): the answer's ICE candidates carry it (:mod:`stream.announce`).
        forwarded_allow: addresses or networks of proxies whose ``X-Forwarded-For`` names
            the client (:mod:`stream.forwarded`); empty: the peer address is the client.
    """

    default_profile: str = "host"
    max_sessions: int = 32
    max_sessions_per_client: int = 8
    token: str | None = None
    allowed_origins: frozenset[str] = frozenset()
    ice_timeout_s: float = 15.0
    ice_servers: tuple[str, ...] = ()
    turn_secret: str | None = None
    turn_ttl_s: int = 3600
    ice_relay_only: bool = False
    max_video_kbps: int = 500
    announce_ip: str | None = None
    forwarded_allow: tuple[str, ...] = ()


Refusal = Literal["full", "client"]
"""Why a :class:`SessionCounter` took no slot: the total limit, or the client's."""


class SessionCounter(Protocol):
    """Where open sessions are counted: this process (:class:`LocalCounter`), every process of
    a host (:class:`stream.host_counter.HostCounter`), or a cluster's shared store.

    Calls come from one event loop and must not block it for long: a counter that waits on
    the network keeps a local view and reconciles off the loop.
    """

    def take(self, client: str, max_total: int, max_per_client: int) -> Refusal | None:
        """Check both limits and take one slot for ``client`` in one atomic step: ``None``
        when taken, else which limit refused it."""
        ...

    def give_back(self, client: str) -> None:
        """Free one slot that this process took for ``client``."""
        ...

    def total(self) -> int:
        """Slots taken now, over every process that shares this counter."""
        ...


@dataclass(slots=True)
class LocalCounter:
    """Sessions of this process alone (``serve --workers 1``, and tests)."""

    open: Counter[str] = field(default_factory=Counter)

    def take(self, client: str, max_total: int, max_per_client: int) -> Refusal | None:
        if self.total() >= max_total:
            return "full"
        if self.open[client] >= max_per_client:
            return "client"
        self.open[client] += 1
        return None

    def give_back(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]

    def total(self) -> int:
        return sum(self.open.values())


@dataclass(slots=True)
class Ticket:
    """A granted session slot; :meth:`release` (idempotent) gives it back."""

    admission: Admission
    client: str
    released: bool = False
    lease: Lease | None = None

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.admission.counter.give_back(self.client)
            if self.lease is not None:
                self.lease.release()


@dataclass(slots=True)
class Admission:
    """The session limits, checked against a :class:`SessionCounter` (this process's own by
    default; one shared by every worker of ``serve --workers N``)."""

    max_total: int
    max_per_client: int
    counter: SessionCounter = field(default_factory=LocalCounter)
    shared: ClientLeases | None = None
    """Counts each client's sessions over every server of a cluster (``serve --redis``)."""

    @property
    def total(self) -> int:
        return self.counter.total()

    @property
    def full(self) -> bool:
        return self.total >= self.max_total

    def admit(self, client: str) -> Ticket | str:
        """A :class:`Ticket`, or the reason the session is refused."""
        refusal = self.counter.take(client, self.max_total, self.max_per_client)
        if refusal == "full":
            return self.full_reason
        if refusal == "client":
            return f"too many sessions from {client} ({self.max_per_client})"
        return Ticket(self, client)

    async def enter(self, client: str) -> Ticket | str:
        """:meth:`admit`, then, with :attr:`shared`, one of the client's slots in the cluster."""
        ticket = self.admit(client)
        if isinstance(ticket, str) or self.shared is None:
            return ticket
        lease = await self.shared.acquire(client, self.max_per_client)
        if lease is None:
            ticket.release()
            return f"too many sessions from {client} ({self.max_per_client})"
        ticket.lease = lease
        return ticket

    @property
    def full_reason(self) -> str:
        return f"server full ({self.max_total} sessions)"


def refuse(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def guard_middleware(config: ServerConfig) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Checks token and origin on the session endpoints before any work is done."""

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path.startswith(GUARDED_PATHS):
            origin = request.headers.get("Origin")
            if config.allowed_origins and origin and origin not in config.allowed_origins:
                return refuse(403, f"origin {origin} is not allowed")
            if config.token is not None:
                header = request.headers.get("Authorization", "")
                given = header.removeprefix("Bearer ") if header else request.query.get("token", "")
                if not hmac.compare_digest(given.encode(), config.token.encode()):
                    return refuse(401, "missing or wrong token")
        return await handler(request)

    return guard
