"""Video frames out of aiortc's receiver as soon as they are complete, not one frame later.

aiortc's ``JitterBuffer`` finds the end of a frame only when a packet with the *next*
timestamp arrives, so every video frame waits one frame interval (66.7 ms at 15 fps)
before decoding. RTP marks the last packet of a video frame with the marker bit
(RFC 7741 for VP8, RFC 6184 for H.264; aiortc's sender and browsers set it), so a frame
whose packets run contiguously from the buffer's origin to a marker packet is complete.
"""

from __future__ import annotations

import logging

from aiortc import RTCRtpReceiver
from aiortc.jitterbuffer import JitterBuffer, JitterFrame

log = logging.getLogger(__name__)

# aiortc keeps the buffer in a private, name-mangled attribute; if a release renames it,
# ``complete_frames_on_marker`` leaves the receiver as it is and says so.
_BUFFER_ATTRIBUTE = "_RTCRtpReceiver__jitter_buffer"


class MarkerJitterBuffer(JitterBuffer):
    """A video ``JitterBuffer`` that releases a frame when its marker-bit packet completes it.

    Packets still go in through ``add``; everything else (reordering, loss, PLI requests,
    overflow) is aiortc's. A sender that never sets the marker bit gets aiortc's behaviour:
    the frame is released when the next frame's first packet arrives.
    """

    def _remove_frame(self, sequence_number: int) -> JitterFrame | None:
        assert self._origin is not None  # add() sets it before calling here
        timestamp: int | None = None
        for count in range(self.capacity):
            packet = self._packets[(self._origin + count) % self.capacity]
            if packet is None:
                return None  # a hole: wait for the missing packet (or a retransmission)
            if timestamp is None:
                timestamp = packet.timestamp
            elif packet.timestamp != timestamp:
                # No marker seen but the next frame has begun: aiortc's rule applies.
                return super()._remove_frame(sequence_number)
            if packet.marker:
                packets = [
                    self._packets[(self._origin + i) % self.capacity] for i in range(count + 1)
                ]
                data = b"".join(p._data for p in packets if p is not None)  # type: ignore[attr-defined]
                self.remove(count + 1)
                return JitterFrame(data=data, timestamp=timestamp)
        return None


def complete_frames_on_marker(receiver: RTCRtpReceiver) -> bool:
    """Give a video ``receiver`` a :class:`MarkerJitterBuffer`; call before media flows.

    Returns:
        Whether the buffer was replaced; False (with a warning) when this aiortc keeps its
        buffer elsewhere or already has another kind, and the receiver is left untouched.
    """
    current = getattr(receiver, _BUFFER_ATTRIBUTE, None)
    if isinstance(current, MarkerJitterBuffer):
        return True
    if type(current) is not JitterBuffer or not current._is_video:
        log.warning("aiortc receiver without the expected video JitterBuffer; frames lag one")
        return False
    setattr(receiver, _BUFFER_ATTRIBUTE, MarkerJitterBuffer(current.capacity, is_video=True))
    return True
