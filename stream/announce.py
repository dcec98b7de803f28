"""``serve --announce-ip ADDRESS``: media straight to this server from behind NAT or a balancer.

aiortc offers the addresses of this host's interfaces as ICE host candidates. Behind a 1:1
NAT (a cloud VM's public IP, a Kubernetes pod on the host network of a node with a public
IP) clients cannot reach those. As mediasoup's ``announcedIp`` and Janus's ``nat_1_1_mapping``
do, the server then gathers one host candidate per peer on the wildcard address (so the
NAT's forwarded packets arrive whichever interface they come in on) and the answer names
``ADDRESS`` instead, with the same port: the media of a session goes to the server that
answered its offer, never through the signalling balancer. An ``ADDRESS`` of this host
itself (one of several interfaces) is where the candidates are gathered, and nothing
needs rewriting.
"""

from __future__ import annotations

import ipaddress
import re
import socket

_HOST_CANDIDATE = re.compile(
    r"^(a=candidate:\S+ \d+ udp \d+ )(\S+)( \d+ typ host\b.*)$", re.IGNORECASE | re.MULTILINE
)
_CONNECTION = re.compile(r"^c=IN IP[46] \S+(?=\r?$)", re.MULTILINE)


def check_announce_ip(address: str) -> str:
    """``address`` if it is an IPv4 or IPv6 address a client can send to, else ``ValueError``."""
    ip = ipaddress.ip_address(address)  # ValueError: not an address
    if ip.is_unspecified or ip.is_multicast:
        raise ValueError("not an address a client can send to")
    return str(ip)


def gather_addresses(announce_ip: str) -> list[str]:
    """Where to gather host candidates when announcing ``announce_ip`` (stands in for
    ``aioice.ice.get_host_addresses``): that address itself when this host has it (one of
    several interfaces), else the wildcard address of its family (behind NAT)."""
    ip = ipaddress.ip_address(announce_ip)
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((announce_ip, 0))
    except OSError:  # not this host's: packets come in through the NAT on any interface
        return ["::" if ip.version == 6 else "0.0.0.0"]
    return [announce_ip]


def announce_address(sdp: str, announce_ip: str) -> str:
    """``sdp`` with every host candidate's address, and every ``c=`` line, set to
    ``announce_ip``; server-reflexive and relay candidates (STUN, TURN) are left as they are."""
    family = "IP6" if ipaddress.ip_address(announce_ip).version == 6 else "IP4"
    sdp = _HOST_CANDIDATE.sub(lambda m: f"{m[1]}{announce_ip}{m[3]}", sdp)
    return _CONNECTION.sub(f"c=IN {family} {announce_ip}", sdp)
