"""ICE servers of a session: STUN, TURN with fixed credentials, or TURN with credentials
minted per session from a shared secret (the TURN REST convention that coturn's
``use-auth-secret`` implements), so no long-lived password reaches a page."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from urllib.parse import unquote

ICE_URL = re.compile(
    r"(?P<scheme>stun|turns?):"
    r"(?:(?P<user>[^:@/?]+):(?P<password>[^@/?]+)@)?"
    r"(?P<host>[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?"
    r"(?:\?transport=(?P<transport>udp|tcp))?"
)
"""``stun:HOST[:PORT]``, ``turn:[USER:PASSWORD@]HOST[:PORT][?transport=udp|tcp]`` or
``turns:[USER:PASSWORD@]HOST[:PORT][?transport=tcp]``: HOST a name or an IPv4 address
(aioice resolves IPv4 only), USER and PASSWORD percent-encoded."""
TURN_USER = "fuscan"
"""The user part of minted TURN usernames (``EXPIRY:fuscan``)."""


@dataclass(frozen=True, slots=True)
class IceServer:
    """One ICE server as ``RTCIceServer`` (both aiortc's and a browser's) takes it."""

    url: str
    username: str | None = None
    credential: str | None = None

    @property
    def is_turn(self) -> bool:
        return self.url.startswith("turn")

    def to_json(self) -> dict[str, str]:
        """The browser's ``RTCIceServer`` dictionary."""
        body = {"urls": self.url}
        if self.username is not None and self.credential is not None:
            body |= {"username": self.username, "credential": self.credential}
        return body


def parse_ice_server(text: str) -> IceServer:
    """The server of an ``--ice-server`` URL, its credentials apart from its URL.

    Raises:
        ValueError: the reason ``text`` is no :data:`ICE_URL` aiortc can use.
    """
    match = ICE_URL.fullmatch(text)
    if match is None:
        raise ValueError(
            "not stun:HOST[:PORT] or turn[s]:[USER:PASSWORD@]HOST[:PORT][?transport=udp|tcp]"
        )
    scheme, port, transport = match["scheme"], match["port"], match["transport"]
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError("port outside 1..65535")
    if scheme == "stun" and (match["user"] or transport):
        raise ValueError("a STUN URL takes no credentials and no transport")
    if scheme == "turns" and transport == "udp":
        raise ValueError("turns: runs over TCP only (aiortc has no DTLS to a TURN server)")
    url = f"{scheme}:{match['host']}" + (f":{port}" if port else "")
    url += f"?transport={transport}" if transport else ""
    if match["user"] is None:
        return IceServer(url)
    return IceServer(url, unquote(match["user"]), unquote(match["password"]))


def turn_credentials(secret: str, expires: int, user: str = TURN_USER) -> tuple[str, str]:
    """``(username, credential)`` a TURN server with ``use-auth-secret`` and ``secret`` accepts
    until the Unix time ``expires``: ``EXPIRY:USER`` and base64(HMAC-SHA1(secret, username))."""
    username = f"{expires}:{user}"
    digest = hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()
    return username, base64.b64encode(digest).decode()


def check_ice_servers(urls: tuple[str, ...], turn_secret: str | None) -> None:
    """Raises ``ValueError`` with the reason unless ``urls`` are servers aiortc uses as given:
    at most one STUN and one TURN server, and TURN credentials in its URL or from
    ``turn_secret``, not both and not neither."""
    servers = [parse_ice_server(url) for url in urls]
    for kind, name in ((False, "STUN"), (True, "TURN")):
        count = sum(server.is_turn == kind for server in servers)
        if count > 1:  # aiortc would use the first and ignore the others
            raise ValueError(f"aiortc uses one {name} server, not {count}")
    for server in servers:
        if server.is_turn and (server.username is None) == (turn_secret is None):
            raise ValueError(
                f"{server.url}: give USER:PASSWORD@ in the URL or --turn-secret, one of them"
            )
    if turn_secret is not None and not any(server.is_turn for server in servers):
        raise ValueError("--turn-secret needs a turn: or turns: --ice-server")


def session_ice_servers(
    urls: tuple[str, ...], turn_secret: str | None, ttl_s: int, now: float
) -> list[IceServer]:
    """The ICE servers of a session that starts at Unix time ``now``: TURN credentials from
    ``turn_secret`` valid ``ttl_s`` seconds, where the URLs carry none (checked first with
    :func:`check_ice_servers`)."""
    servers = [parse_ice_server(url) for url in urls]
    if turn_secret is None:
        return servers
    username, credential = turn_credentials(turn_secret, int(now) + ttl_s)
    return [
        IceServer(server.url, username, credential) if server.is_turn else server
        for server in servers
    ]
