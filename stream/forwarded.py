"""The client's address behind a balancer: ``X-Forwarded-For`` from proxies named by the operator.

Behind HAProxy (``run.py cluster``) or a Kubernetes ingress every request comes from the
proxy, so the per-client session limit would count all clients as one. As gunicorn's and
uvicorn's ``--forwarded-allow-ips``: a request whose peer is one of the listed proxies is
taken to come from the address that proxy appended, the last one of ``X-Forwarded-For``
(earlier entries are whatever the client sent, and are not trusted).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def proxy_networks(allowed: Iterable[str]) -> tuple[Network, ...]:
    """``allowed`` (addresses or CIDR networks) parsed; ``ValueError`` names a bad one."""
    return tuple(ipaddress.ip_network(item, strict=False) for item in allowed)


def forwarded_client(remote: str | None, header: str | None, proxies: tuple[Network, ...]) -> str:
    """The client address of a request from ``remote`` with ``X-Forwarded-For: header``."""
    if remote is None or not header:
        return remote or "?"
    try:
        peer = ipaddress.ip_address(remote)
    except ValueError:  # a unix socket's peer: not a listed proxy
        return remote
    if not any(peer in network for network in proxies):
        return remote
    last = header.rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return remote


def forwarded_middleware(
    proxies: tuple[Network, ...],
) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Requests from ``proxies`` carry their client's address as ``request.remote``."""

    @web.middleware
    async def forwarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        client = forwarded_client(request.remote, request.headers.get("X-Forwarded-For"), proxies)
        if client != request.remote:
            request = request.clone(remote=client)
        return await handler(request)

    return forwarded
