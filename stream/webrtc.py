"""WebRTC signalling (one POST per peer) and the media path from an aiortc track into a Session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from aiohttp import web
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCDataChannel,
    RTCIceServer,
    RTCIceTransportPolicy,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from av import VideoFrame

from stream import metrics
from stream.admission import SHUTTING_DOWN, Admission, ServerConfig, Ticket, refuse
from stream.announce import announce_address
from stream.bitrate import cap_remb, limit_video_bitrate
from stream.client_json import JsonError, parse_object
from stream.ice import session_ice_servers
from stream.images import MAX_PIXELS, video_frame_decoder
from stream.jitter import bound_decoder_backlog, complete_frames_on_marker, nack_lost_not_late
from stream.offers import check_offer
from stream.pipelines import OptionError, Pipelines, SessionOptions
from stream.session import Message, Session, SessionError, error_message, run_or_close

log = logging.getLogger(__name__)

MAX_CHANNEL_BUFFER = 256 * 1024
"""Bytes queued on a data channel past which ``frame`` messages are dropped."""
MAX_CHANNEL_BACKLOG = 4 * MAX_CHANNEL_BUFFER
"""Bytes queued past which every message is dropped, events and errors too: a peer that
keeps ICE alive but stops reading its channel must not grow the queue forever."""
MAX_EARLY_MESSAGES = 16
"""Events and errors kept for a peer whose data channel has not opened yet."""
TRANSPORT = "webrtc"
OFFER_SHAPE = "need {'sdp': str, 'type': 'offer'}"


def rtc_configuration(config: ServerConfig, now: float) -> RTCConfiguration:
    """The server's ICE servers for one peer connection made at Unix time ``now``:
    ``iceServers=[]`` when none are configured, as ``None`` would mean aiortc's default,
    Google's STUN server."""
    servers = session_ice_servers(config.ice_servers, config.turn_secret, config.turn_ttl_s, now)
    return RTCConfiguration(
        iceServers=[
            RTCIceServer(urls=s.url, username=s.username, credential=s.credential) for s in servers
        ],
        iceTransportPolicy=(
            RTCIceTransportPolicy.RELAY if config.ice_relay_only else RTCIceTransportPolicy.ALL
        ),
    )


@dataclass(slots=True)
class Peer:
    """One browser: its peer connection, result channel, session, tasks and admission ticket."""

    pc: RTCPeerConnection
    ticket: Ticket
    session: Session | None = None
    channel: RTCDataChannel | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    early: deque[Message] = field(default_factory=lambda: deque(maxlen=MAX_EARLY_MESSAGES))

    async def send(self, message: Message) -> None:
        """Send ``message`` on the data channel, within its bounds. Until the client's channel
        arrives, events and errors wait in :attr:`early` (frame results do not: a newer one
        follows): it opens round trips after the media can flow, and on a slow path a
        session can recognize before, once and for all."""
        channel = self.channel
        if channel is None:
            if message["type"] != "frame":
                self.early.append(message)
            return
        if channel.readyState != "open":
            return
        limit = MAX_CHANNEL_BUFFER if message["type"] == "frame" else MAX_CHANNEL_BACKLOG
        if channel.bufferedAmount > limit:
            return
        metrics.observe(TRANSPORT, message)
        channel.send(json.dumps(message))

    async def attach(self, channel: RTCDataChannel) -> None:
        """Send results on ``channel`` (open: aiortc announces a channel the client opened),
        the :attr:`early` messages first."""
        self.channel = channel
        while self.early:
            await self.send(self.early.popleft())

    def spawn(self, job: Any) -> None:
        task = asyncio.create_task(job)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def drain(track: MediaStreamTrack, session: Session) -> None:
    """Pull every frame off ``track`` as it arrives (aiortc's own queue is unbounded) into the
    session's newest-frame slot; media time is relative to the first frame."""
    first: float | None = None
    # SessionError: the session failed; run_or_close is closing the peer.
    with contextlib.suppress(MediaStreamError, SessionError):
        while True:
            frame = await track.recv()
            if not isinstance(frame, VideoFrame):
                continue  # a video track yields decoded frames; anything else is not ours
            t = float(frame.time or 0.0)
            first = t if first is None else first
            session.submit(video_frame_decoder(frame, MAX_PIXELS), t - first)


class WebRtcGateway:
    """Owns every peer connection; ``offer`` is the aiohttp handler for ``POST /offer``."""

    def __init__(self, pipelines: Pipelines, config: ServerConfig, admission: Admission) -> None:
        self.pipelines = pipelines
        self.config = config
        self.admission = admission
        self.peers: dict[str, Peer] = {}
        self.shutting_down = False

    async def offer(self, request: web.Request) -> web.Response:
        try:
            params = parse_object(await request.read(), "the body")
        except JsonError as exc:
            return refuse(400, f"{exc}; {OFFER_SHAPE}")
        try:
            sdp, kind = params.get("sdp"), params.get("type")
            if not isinstance(sdp, str) or kind != "offer":
                raise ValueError(OFFER_SHAPE)
            options = SessionOptions.from_json(params, self.config.default_profile)
            check_offer(sdp)  # before a peer, its ports or an admission slot exist
        except (ValueError, OptionError) as exc:
            return refuse(400, str(exc))
        if self.shutting_down:  # close_all has run: nobody would close a peer made now
            return refuse(503, SHUTTING_DOWN)
        ticket = await self.admission.enter(request.remote or "?")
        if isinstance(ticket, str):
            metrics.REFUSED.inc()
            return refuse(503, ticket)
        if self.shutting_down:  # close_all ran while admission asked the cluster
            ticket.release()
            return refuse(503, SHUTTING_DOWN)

        peer_id = uuid.uuid4().hex
        peer = Peer(RTCPeerConnection(rtc_configuration(self.config, time.time())), ticket)
        self.peers[peer_id] = peer
        metrics.session_opened(TRANSPORT)
        pc = peer.pc

        @pc.on("datachannel")
        async def on_datachannel(channel: RTCDataChannel) -> None:
            await peer.attach(channel)

            @channel.on("close")
            async def on_channel_close() -> None:
                # Results have nowhere to go: end the peer now, not when its ICE ends.
                if peer.channel is channel:
                    await self.close(peer_id)

        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            # Closing began (shutdown while aiortc still adds the offer's candidates): tasks
            # spawned now would outlive the peer, as close() has already cancelled its tasks.
            if track.kind != "video" or peer.session is not None or peer_id not in self.peers:
                return
            peer.session = self.pipelines.open(options, peer.send)
            peer.spawn(run_or_close(peer.session, partial(self.close, peer_id)))
            peer.spawn(drain(track, peer.session))

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await self.close(peer_id)

        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            for transceiver in pc.getTransceivers():
                if transceiver.kind == "video":  # before any packet can arrive
                    complete_frames_on_marker(transceiver.receiver)
                    bound_decoder_backlog(transceiver.receiver)
                    nack_lost_not_late(transceiver.receiver)
                    if self.config.max_video_kbps:
                        cap_remb(transceiver.receiver, self.config.max_video_kbps)
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:  # aiortc raises many types for bad SDP
            await self.close(peer_id)
            if self.shutting_down:  # close_all closed the peer under aiortc: the offer is fine
                return refuse(503, SHUTTING_DOWN)
            return refuse(400, f"bad offer: {exc}")
        except asyncio.CancelledError:
            # aiohttp cancelled the request before the answer (the client hung up, on a server
            # with handler_cancellation): no ICE timeout watches this peer yet, so close it here.
            await self.close(peer_id)
            raise
        if self.shutting_down:  # close_all ran during the awaits above and closed this peer
            return refuse(503, SHUTTING_DOWN)
        peer.spawn(self._close_unless_connected(peer_id))
        answer = pc.localDescription
        sdp = answer.sdp
        if self.config.max_video_kbps:  # aiortc writes no b= lines, and ignores them
            sdp = limit_video_bitrate(sdp, self.config.max_video_kbps)
        if self.config.announce_ip:
            sdp = announce_address(sdp, self.config.announce_ip)
        return web.json_response({"sdp": sdp, "type": answer.type, "peer": peer_id})

    async def _close_unless_connected(self, peer_id: str) -> None:
        """Peers whose ICE never completes would otherwise hold ports and a session forever."""
        await asyncio.sleep(self.config.ice_timeout_s)
        peer = self.peers.get(peer_id)
        if peer is not None and peer.pc.connectionState != "connected":
            log.info(
                "closing peer %s: not connected after %.0f s", peer_id, self.config.ice_timeout_s
            )
            await self.close(peer_id)

    async def close(self, peer_id: str, reason: Message | None = None) -> None:
        """Close one peer; ``reason`` is sent on its data channel first (best effort)."""
        peer = self.peers.pop(peer_id, None)
        if peer is None:
            return
        metrics.session_closed(TRANSPORT)
        peer.ticket.release()
        if reason is not None:
            with contextlib.suppress(Exception):
                await peer.send(reason)
        if peer.session is not None:
            peer.session.close()
            metrics.DROPPED.labels(TRANSPORT).inc(peer.session.dropped)
        current = asyncio.current_task()
        for task in list(peer.tasks):
            if task is not current:
                task.cancel()
        await peer.pc.close()

    async def close_all(self) -> None:
        """Close every peer, and refuse every offer from now on (for the app's shutdown)."""
        self.shutting_down = True
        notice = error_message("shutting_down", SHUTTING_DOWN)
        await asyncio.gather(*(self.close(pid, notice) for pid in list(self.peers)))
