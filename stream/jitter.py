"""Three fixes to aiortc's video receiver, installed per receiver before media flows.

1. Frames out as soon as they are complete, not one frame later (``MarkerJitterBuffer``).

aiortc's ``JitterBuffer`` finds the end of a frame only when a packet with the *next*
timestamp arrives, so every video frame waits one frame interval (66.7 ms at 15 fps)
before decoding. RTP marks the last packet of a video frame with the marker bit
(RFC 7741 for VP8, RFC 6184 for H.264; aiortc's sender and browsers set it), so a frame
whose packets run contiguously from the buffer's origin to a marker packet is complete.

2. A bounded wait for the decoder (``DecodeBacklog``). aiortc queues every encoded frame
for its decoder thread without limit, so a server that falls behind builds latency
without limit (seconds, measured). Past ``DECODE_BACKLOG`` waiting frames the waiting
ones are dropped, and so is every frame up to the next keyframe (inter frames cannot be
decoded without their predecessors), which is requested with a PLI.

3. NACKs for lost packets, not for late ones (``PatientNackGenerator``). aiortc asks for a
packet again (NACK) the moment a later one arrives, so every packet that a jittery path
merely reorders is sent twice, on a path whose bandwidth is short already. A packet is
asked for once ``REORDER_PACKETS`` later packets have arrived without it.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from aiortc import RTCRtpReceiver
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.rtcrtpreceiver import NackGenerator
from aiortc.rtp import RtpPacket
from aiortc.utils import uint16_add, uint16_gt

log = logging.getLogger(__name__)

# aiortc keeps the buffer in a private, name-mangled attribute; if a release renames it,
# ``complete_frames_on_marker`` leaves the receiver as it is and says so.
_BUFFER_ATTRIBUTE = "_RTCRtpReceiver__jitter_buffer"
_QUEUE_ATTRIBUTE = "_RTCRtpReceiver__decoder_queue"
_ERROR_ATTRIBUTE = "_RTCRtpReceiver__decoder_error"  # set: aiortc sends a PLI on the next packet
_NACK_ATTRIBUTE = "_RTCRtpReceiver__nack_generator"

DECODE_BACKLOG = 3
"""Encoded frames that may wait for the decoder (200 ms at 15 fps) before it counts as behind."""
KEYFRAME_RETRY = 15
"""Frames dropped while waiting for a keyframe between two keyframe requests."""
REORDER_PACKETS = 3
"""Later packets that arrive before a missing packet is asked for again: a jitter of
about two packet intervals reorders without loss (30 ms at 300 kbit/s)."""


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


def is_keyframe(codec: str, data: bytes) -> bool | None:
    """Whether an encoded frame decodes on its own; ``None`` for a codec not known here."""
    if codec == "VP8":  # RFC 6386 frame tag: bit 0 of the first byte is 0 on a key frame
        return bool(data) and data[0] & 1 == 0
    if codec == "H264":  # an IDR slice among the Annex B NAL units
        parts = data.split(b"\x00\x00\x01")[1:]
        return any(part and part[0] & 0x1F == 5 for part in parts)
    return None


class DecodeBacklog(queue.Queue[Any]):
    """aiortc's decoder queue (items ``(codec, JitterFrame)``, or ``None`` to stop), bounded.

    Args:
        limit: waiting frames past which the decoder is behind.
        request_keyframe: asks the sender for a keyframe (thread-safe).
    """

    def __init__(self, limit: int, request_keyframe: Callable[[], None]) -> None:
        super().__init__()
        self.limit = limit
        self.request_keyframe = request_keyframe
        self.skipping = False  # behind: dropping up to the next keyframe
        self.dropped = 0

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        key = None if item is None else is_keyframe(item[0].name, item[1].data)
        if key is not None and not self._admit(key):
            self.dropped += 1
            if self.dropped % KEYFRAME_RETRY == 0:
                self.request_keyframe()  # the request or its keyframe may have been lost
            return
        super().put(item, block, timeout)

    def _admit(self, key: bool) -> bool:
        behind = self.qsize() >= self.limit
        if behind:
            with self.mutex:  # the waiting frames would only add latency
                self.dropped += len(self.queue)
                self.queue.clear()
        if key:
            self.skipping = False
            return True
        if behind and not self.skipping:
            self.skipping = True
            self.request_keyframe()
        return not self.skipping


def bound_decoder_backlog(receiver: RTCRtpReceiver, limit: int = DECODE_BACKLOG) -> bool:
    """Give a video ``receiver`` a :class:`DecodeBacklog`; call before media flows.

    Returns:
        Whether the queue was replaced; False (with a warning) when this aiortc keeps it
        elsewhere, and the receiver is left untouched.
    """
    current = getattr(receiver, _QUEUE_ATTRIBUTE, None)
    error = getattr(receiver, _ERROR_ATTRIBUTE, None)
    if isinstance(current, DecodeBacklog):
        return True
    if type(current) is not queue.Queue or not isinstance(error, threading.Event):
        log.warning("aiortc receiver without the expected decoder queue; it stays unbounded")
        return False
    setattr(receiver, _QUEUE_ATTRIBUTE, DecodeBacklog(limit, error.set))
    return True


class PatientNackGenerator(NackGenerator):
    """aiortc's NACK bookkeeping, with a packet counted missing (and NACKed, by the receiver,
    with every other missing one) only once ``reorder`` later packets arrived without it."""

    def __init__(self, reorder: int = REORDER_PACKETS) -> None:
        super().__init__()
        self.reorder = reorder
        self.late: set[int] = set()  # not arrived, not yet missing: maybe only reordered

    def add(self, packet: RtpPacket) -> bool:
        """Mark ``packet`` received. Returns whether packets became missing: the receiver
        then NACKs all of :attr:`missing`."""
        seq = packet.sequence_number
        if self.max_seq is None:
            self.max_seq = seq
            return False
        if uint16_gt(seq, self.max_seq):
            gap = uint16_add(self.max_seq, 1)
            while uint16_gt(seq, gap):
                self.late.add(gap)
                gap = uint16_add(gap, 1)
            self.max_seq = seq
        else:
            self.late.discard(seq)
            self.missing.discard(seq)
        newest = self.max_seq
        due = {s for s in self.late if uint16_add(newest, -s) >= self.reorder}
        self.late -= due
        self.missing |= due
        self.truncate()
        return bool(due)


def nack_lost_not_late(receiver: RTCRtpReceiver) -> bool:
    """Give a video ``receiver`` a :class:`PatientNackGenerator`; call before media flows.

    Returns:
        Whether it was replaced; False (with a warning) when this aiortc keeps its NACK
        bookkeeping elsewhere, and the receiver is left untouched.
    """
    current = getattr(receiver, _NACK_ATTRIBUTE, None)
    if isinstance(current, PatientNackGenerator):
        return True
    if type(current) is not NackGenerator:
        log.warning("aiortc receiver without the expected NACK generator; late packets NACKed")
        return False
    setattr(receiver, _NACK_ATTRIBUTE, PatientNackGenerator())
    return True
