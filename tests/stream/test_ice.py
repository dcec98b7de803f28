"""ICE server URLs and TURN credentials minted from a shared secret."""

from __future__ import annotations

import pytest

from stream.ice import IceServer, check_ice_servers, parse_ice_server, session_ice_servers


def test_turn_credentials_follow_the_turn_rest_convention():
    # base64(HMAC-SHA1("s3cret", "1700003600:fuscan")), from `openssl dgst -sha1 -hmac`
    (server,) = session_ice_servers(("turn:turn.example",), "s3cret", 3600, now=1_700_000_000.7)
    assert server == IceServer(
        "turn:turn.example", "1700003600:fuscan", "6MdMeKP9M3r8n+q+qVf5d1+lYmU="
    )


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("stun:example.org", IceServer("stun:example.org")),
        ("turn:u:p%40ss@10.0.0.1:3478", IceServer("turn:10.0.0.1:3478", "u", "p@ss")),
        (
            "turns:turn.example?transport=tcp",
            IceServer("turns:turn.example?transport=tcp"),
        ),
    ],
)
def test_credentials_in_a_url_are_kept_apart_from_it(url, server):
    assert parse_ice_server(url) == server


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("turn:[::1]", "not stun:HOST"),
        ("stun:u:p@example.org", "no credentials"),
        ("turns:example.org?transport=udp", "TCP only"),
        ("turn:example.org:70000", "outside 1..65535"),
    ],
)
def test_an_unusable_url_says_why(url, reason):
    with pytest.raises(ValueError, match=reason):
        parse_ice_server(url)


@pytest.mark.parametrize(
    ("urls", "secret", "reason"),
    [
        (("turn:a.example",), None, "one of them"),
        (("turn:u:p@a.example",), "s", "one of them"),
        (("stun:a.example",), "s", "--turn-secret needs a turn"),
        (("turn:u:p@a.example", "turns:u:p@b.example"), None, "one TURN server, not 2"),
    ],
)
def test_servers_aiortc_would_not_use_as_given_are_refused(urls, secret, reason):
    with pytest.raises(ValueError, match=reason):
        check_ice_servers(urls, secret)
