"""``--announce-ip``: host candidates and connection lines name the announced address."""

import pytest

from stream.announce import announce_address, check_announce_ip, gather_addresses

ANSWER = (
    "v=0\r\n"
    "o=- 3920 3920 IN IP4 0.0.0.0\r\n"
    "m=video 40001 UDP/TLS/RTP/SAVPF 97\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "a=candidate:1 1 udp 2130706431 0.0.0.0 40001 typ host\r\n"
    "a=candidate:2 1 udp 1694498815 198.51.100.7 40001 typ srflx raddr 0.0.0.0 rport 40001\r\n"
    "m=application 40002 DTLS/SCTP 5000\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "a=candidate:3 1 udp 2130706431 0.0.0.0 40002 typ host\r\n"
)


def test_host_candidates_and_connection_lines_carry_the_announced_address():
    sdp = announce_address(ANSWER, "203.0.113.9")
    assert sdp.count("c=IN IP4 203.0.113.9\r\n") == 2
    assert "udp 2130706431 203.0.113.9 40001 typ host\r\n" in sdp
    assert "udp 2130706431 203.0.113.9 40002 typ host\r\n" in sdp
    # STUN's own answer stays: it is already an outside address
    assert "198.51.100.7 40001 typ srflx raddr 0.0.0.0 rport 40001\r\n" in sdp
    assert sdp.startswith("v=0\r\no=- 3920 3920 IN IP4 0.0.0.0\r\n")  # the origin is no route


def test_an_ipv6_address_is_announced_as_one():
    assert "c=IN IP6 2001:db8::5\r\n" in announce_address(ANSWER, "2001:db8::5")


@pytest.mark.parametrize(
    ("address", "gathered"),
    [
        ("127.0.0.2", ["127.0.0.2"]),  # this host has it: gather there
        ("203.0.113.9", ["0.0.0.0"]),  # behind NAT: every interface, rewritten in the answer
    ],
)
def test_candidates_are_gathered_where_the_announced_address_arrives(address, gathered):
    assert gather_addresses(address) == gathered


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "224.0.0.1", "example.com", "1.2.3"])
def test_an_address_no_client_can_send_to_is_refused(address):
    with pytest.raises(ValueError):
        check_announce_ip(address)
