"""Checks a WebRTC offer's SDP before any peer connection, port or admission slot exists.

aiortc accepts some offers that cannot work and only fails later (no DTLS fingerprint:
the handshake fails after ICE; no sending video: a connected peer that never streams),
and parses text without ``m=`` lines as an empty offer. Checking first turns every such
offer into one prompt HTTP 400 with a reason the client can act on (docs/api.md).
"""

from __future__ import annotations

from aiortc.sdp import MediaDescription, SessionDescription

SENDING = ("sendonly", "sendrecv")
"""Offer directions in which the client sends video to the server."""


class OfferError(ValueError):
    """The offer cannot make a session; the message says why, for the client."""


def check_offer(sdp: str) -> None:
    """Refuse an offer that lacks what a scan session needs.

    Call before creating the peer connection; aiortc's own checks (codecs, RTCP mux)
    still apply afterwards.

    Raises:
        OfferError: not SDP, no video the client sends, no data channel, or a media
            section without ICE credentials (``a=ice-ufrag``/``a=ice-pwd``) or without a
            DTLS fingerprint (``a=fingerprint``).
    """
    try:
        media = SessionDescription.parse(sdp).media
    except Exception as exc:  # aiortc's parser asserts and raises several types
        raise OfferError(f"not a valid SDP offer ({type(exc).__name__})") from None
    if not media:
        raise OfferError("not an SDP offer: no media sections (m= lines)")
    for index, section in enumerate(media):
        _check_section(index, section)
    if not any(m.kind == "video" and m.direction in SENDING for m in media):
        raise OfferError("the offer has no video track the client sends")
    if not any(m.kind == "application" for m in media):
        raise OfferError("the offer has no data channel (results are sent on it)")


def _check_section(index: int, section: MediaDescription) -> None:
    where = f"media section {index} ({section.kind})"
    if section.ice is None or not section.ice.usernameFragment or not section.ice.password:
        raise OfferError(f"{where} has no ICE credentials (a=ice-ufrag and a=ice-pwd)")
    if section.dtls is None or not section.dtls.fingerprints:
        raise OfferError(f"{where} has no DTLS fingerprint (a=fingerprint)")
