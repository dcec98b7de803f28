"""WebRTC signalling (one POST per peer) and the media path from an aiortc track into a Session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiortc import MediaStreamTrack, RTCDataChannel, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from stream.images import video_frame_decoder
from stream.pipelines import OptionError, Pipelines, SessionOptions
from stream.session import Message, Session

log = logging.getLogger(__name__)

MAX_CHANNEL_BUFFER = 256 * 1024
"""Bytes queued on a data channel past which ``frame`` messages are dropped (events never are)."""


@dataclass(slots=True)
class Peer:
    """One browser: its peer connection, result channel, session and tasks."""

    pc: RTCPeerConnection
    session: Session | None = None
    channel: RTCDataChannel | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def send(self, message: Message) -> None:
        channel = self.channel
        if channel is None or channel.readyState != "open":
            return
        if message["type"] == "frame" and channel.bufferedAmount > MAX_CHANNEL_BUFFER:
            return
        channel.send(json.dumps(message))


async def drain(track: MediaStreamTrack, session: Session) -> None:
    """Pull every frame off ``track`` as it arrives (aiortc's own queue is unbounded) into the
    session's newest-frame slot; media time is relative to the first frame."""
    first: float | None = None
    with contextlib.suppress(MediaStreamError):
        while True:
            frame = await track.recv()
            t = float(frame.time or 0.0)
            first = t if first is None else first
            session.submit(video_frame_decoder(frame), t - first)


class WebRtcGateway:
    """Owns every peer connection; ``offer`` is the aiohttp handler for ``POST /offer``."""

    def __init__(self, pipelines: Pipelines, default_profile: str) -> None:
        self.pipelines = pipelines
        self.default_profile = default_profile
        self.peers: dict[str, Peer] = {}

    async def offer(self, request: web.Request) -> web.Response:
        try:
            params: Any = await request.json()
            if not isinstance(params, dict):
                raise ValueError("body must be a JSON object")
            sdp, kind = params.get("sdp"), params.get("type")
            if not isinstance(sdp, str) or kind != "offer":
                raise ValueError("need {'sdp': str, 'type': 'offer'}")
            options = SessionOptions.from_json(params, self.default_profile)
        except (ValueError, OptionError) as exc:
            return web.json_response({"error": str(exc)}, status=400)

        peer_id = uuid.uuid4().hex
        peer = Peer(RTCPeerConnection())
        self.peers[peer_id] = peer
        pc = peer.pc

        @pc.on("datachannel")
        def on_datachannel(channel: RTCDataChannel) -> None:
            peer.channel = channel

        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind != "video" or peer.session is not None:
                return
            peer.session = self.pipelines.open(options, peer.send)
            for job in (peer.session.run(), drain(track, peer.session)):
                task = asyncio.create_task(job)
                peer.tasks.add(task)
                task.add_done_callback(peer.tasks.discard)

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await self.close(peer_id)

        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            if pc.sctp is None or not any(t.kind == "video" for t in pc.getTransceivers()):
                raise ValueError("the offer needs a video track and a data channel")
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:  # aiortc raises many types for bad SDP
            await self.close(peer_id)
            return web.json_response({"error": f"bad offer: {exc}"}, status=400)
        answer = pc.localDescription
        return web.json_response({"sdp": answer.sdp, "type": answer.type, "peer": peer_id})

    async def close(self, peer_id: str) -> None:
        peer = self.peers.pop(peer_id, None)
        if peer is None:
            return
        if peer.session is not None:
            peer.session.close()
        for task in list(peer.tasks):
            task.cancel()
        await peer.pc.close()

    async def close_all(self) -> None:
        await asyncio.gather(*(self.close(pid) for pid in list(self.peers)))
