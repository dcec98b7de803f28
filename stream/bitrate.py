"""The video bitrate the server asks a WebRTC client for: no more than the detector can use.

A browser sends a 640x480 camera at up to about 1.7 Mbit/s on a fast network (aiortc's
encoder up to 1.5 Mbit/s), and every packet costs the server's event loop its RTP, SRTP,
jitter-buffer and bitrate-estimation Python (`run.py bench --only capacity`). The
detector looks at the frame shrunk to 320x240 and at close-ups of it; on
generated clips its per-frame recall is the same from 350 kbit/s to uncoded frames
(``python run.py bench --only bitrate``). So the server asks for less, twice:

- in its SDP answer, ``b=AS`` (kbit/s, RFC 4566) and ``b=TIAS`` (bit/s, RFC 3890) on
  every video section, which browsers apply as their encoder's ceiling;
- in its REMB feedback (the receiver's estimate of the bitrate the path can carry, which
  aiortc's sender and browsers negotiating ``goog-remb`` follow), never above the limit.

The limit is ``ServerConfig.max_video_kbps`` (``serve --max-video-kbps``).
"""

from __future__ import annotations

import logging
import re

from aiortc import RTCRtpReceiver
from aiortc.rate import RemoteBitrateEstimator

log = logging.getLogger(__name__)

_ESTIMATOR_ATTRIBUTE = "_RTCRtpReceiver__remote_bitrate_estimator"  # aiortc's, name-mangled
_BANDWIDTH_LINE = re.compile(r"b=(?:AS|TIAS|CT):")
_ASKED_KBPS = re.compile(r"^b=AS:(\d+)\s*$", re.MULTILINE)


def limit_video_bitrate(sdp: str, kbps: int) -> str:
    """``sdp`` with each video section asking for at most ``kbps`` kbit/s.

    The section's own bandwidth lines are replaced by ``b=AS`` and ``b=TIAS``, placed
    where RFC 4566 puts them: after the ``m=``, ``i=`` and ``c=`` lines. Other sections
    and line endings are kept.

    Raises:
        ValueError: ``kbps`` is not positive.
    """
    if kbps <= 0:
        raise ValueError(f"a bitrate limit must be positive, not {kbps} kbit/s")
    newline = "\r\n" if "\r\n" in sdp else "\n"
    limit = [f"b=AS:{kbps}", f"b=TIAS:{kbps * 1000}"]
    out: list[str] = []
    in_video = pending = False  # pending: the video section's limit is still to be written
    for line in sdp.split(newline):
        if pending and not line.startswith(("i=", "c=")):
            out += limit
            pending = False
        if line.startswith("m="):
            in_video = pending = line.startswith("m=video ")
        elif in_video and _BANDWIDTH_LINE.match(line):
            continue
        out.append(line)
    if pending:
        out += limit
    return newline.join(out)


def asked_video_kbps(sdp: str) -> int | None:
    """The ``b=AS`` limit of ``sdp``'s first video section, kbit/s; ``None`` when it has none."""
    match = re.search(r"^m=video .*?(?=^m=|\Z)", sdp, re.MULTILINE | re.DOTALL)
    found = None if match is None else _ASKED_KBPS.search(match.group(0))
    return None if found is None else int(found.group(1))


class CappedEstimator(RemoteBitrateEstimator):
    """aiortc's receive-side bitrate estimator whose REMB estimate never exceeds ``limit_bps``."""

    def __init__(self, limit_bps: int) -> None:
        super().__init__()
        self.limit_bps = limit_bps

    def add(
        self, arrival_time_ms: int, abs_send_time: int, payload_size: int, ssrc: int
    ) -> tuple[int, list[int]] | None:
        estimate = super().add(arrival_time_ms, abs_send_time, payload_size, ssrc)
        if estimate is None:
            return None
        bitrate, ssrcs = estimate
        return min(bitrate, self.limit_bps), ssrcs


def cap_remb(receiver: RTCRtpReceiver, kbps: int) -> bool:
    """Give a video ``receiver`` a :class:`CappedEstimator`; call before media flows.

    Returns:
        Whether the estimator was replaced; False (with a warning) when this aiortc keeps
        it elsewhere, and the receiver is left untouched (the SDP limit still applies).
    """
    current = getattr(receiver, _ESTIMATOR_ATTRIBUTE, None)
    if isinstance(current, CappedEstimator):
        current.limit_bps = kbps * 1000
        return True
    if type(current) is not RemoteBitrateEstimator:
        log.warning("aiortc receiver without the expected bitrate estimator; REMB not capped")
        return False
    setattr(receiver, _ESTIMATOR_ATTRIBUTE, CappedEstimator(kbps * 1000))
    return True
