"""Load and soak generator: N websocket and M WebRTC camera streams against one server.

    python run.py loadtest --ws 4 --webrtc 4 --fps 15 --duration 30
    python run.py loadtest --ws 2 --duration 3600 --sample 60     # soak: RSS/fd growth
    python run.py loadtest --save-clip clip.mp4     # the clip, for a machine without wallpapers
    python run.py loadtest --clip clip.mp4 --ws 8

Starts its own ``run.py serve`` on a free loopback port (or targets ``--url``
with ``--pid`` for resource sampling), streams a generated 福 clip (or ``--clip``'s
video or images) from every client at ``--fps``, and prints result latency
percentiles per transport, frames processed and dropped, and the server's CPU,
RSS and open files over time. Everything runs on this machine, so WebRTC clients send the clip
VP8-encoded once (a phone encodes on its own CPU): per stream they cost only RTP
and SRTP, not a live encoder, of the CPU they share with the server. As a browser
does, a WebRTC client sends at most the bitrate the server's answer asks for
(``b=AS``, ``serve --max-video-kbps``), else at a camera's usual 1.5 Mbit/s:
the clip is encoded once for each rate asked.

Streams started together would tick together: every camera's frame would arrive
in the same millisecond, a burst no set of independent phones sends. So by
default (``--phases independent``) each stream's first frame is delayed by its
own offset within one frame interval (seeded, so runs repeat);
``--phases aligned`` keeps the lockstep as a worst case.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import sys
import time
from collections.abc import Collection, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import aiohttp
import aioice.ice
import av
import numpy as np
import psutil
import uvloop
from aiortc import (
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
    VideoStreamTrack,
)
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from clients.clips import VideoPathError, check_video_path, write_video
from clients.sources import SourceError, bgr_frames
from clients.ws_client import encode_jpeg
from detectors.core import ImageBGR
from evals.video_codec import CAMERA_BITRATE, encode_video
from stream.bitrate import asked_video_kbps
from stream.cli_types import non_negative_int, positive_int
from stream.local_server import local_server as running_server
from stream.server import loopback_host_addresses

VIDEO_CLOCK = 90_000
PHASES = ("independent", "aligned")


@dataclass
class StreamStats:
    transport: str
    sent: int = 0
    results: int = 0
    dropped: int = 0
    errors: int = 0
    lost: bool = False  # the connection ended before the run (WebRTC: e.g. ICE consent expired)
    latencies: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)  # server: frame arrival -> result sent
    arrived: list[float] = field(default_factory=list)  # monotonic time of each latency sample

    def on_message(self, message: dict[str, object], origin: float) -> None:
        """Count one result; latency = now - wall time at which its frame was captured."""
        if message["type"] == "frame":
            self.results += 1
            t = message["t"]
            assert isinstance(t, int | float)
            now = time.monotonic()
            self.latencies.append(now - (origin + t))
            self.arrived.append(now)
            server_ms = message.get("server_ms")
            if isinstance(server_ms, int | float):
                self.server_ms.append(float(server_ms))
            device = message["device"]
            assert isinstance(device, dict)
            self.dropped = int(device["dropped"])
        elif message["type"] == "error":
            self.errors += 1


def stream_phases(n: int, fps: float, phases: str, seed: int = 0) -> list[float]:
    """Seconds by which each of ``n`` streams delays its first frame.

    ``independent``: uniform within one frame interval, as phones whose cameras
    started at unrelated times; ``aligned``: none, every stream in lockstep.
    """
    if phases not in PHASES:
        raise ValueError(f"phases must be one of {', '.join(PHASES)}, not {phases!r}")
    if phases == "aligned":
        return [0.0] * n
    return [float(phase) for phase in np.random.default_rng(seed).uniform(0.0, 1.0 / fps, n)]


def clip_frames(fps: float, source: str | None = None) -> list[ImageBGR]:
    """The camera clip every stream plays in a loop at ``fps``: the frames of ``source`` (a
    video file or a folder of images), else 2 s of a generated 福 scene, whose backgrounds
    are Debian's wallpaper photos (``make system-deps``).

    Raises:
        SourceError: ``source`` cannot be read, or holds no frame.
    """
    if source is None:
        from detectors.synth.scenes import make_clip

        return make_clip(3, n_frames=int(fps * 2), fps=fps, content="fu").frames
    frames = [image for _, image in bgr_frames(source, fps)]
    if not frames:
        raise SourceError(f"{source} holds no frame")
    return frames


async def websocket_stream(
    url: str, frames: list[bytes], fps: float, stop: float, stats: StreamStats, phase: float
) -> None:
    async with connect(url, max_size=2**22) as ws:
        await ws.send(json.dumps({"type": "start"}))
        json.loads(await ws.recv())
        origin = time.monotonic() + phase

        async def reader() -> None:
            with contextlib.suppress(ConnectionClosed):  # counted by the sender as lost
                async for raw in ws:
                    stats.on_message(json.loads(raw), origin)

        reading = asyncio.create_task(reader())
        n = 0
        try:
            while (due := origin + n / fps) < stop:
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                await ws.send(json.dumps({"type": "timestamp", "t": n / fps}))
                await ws.send(frames[n % len(frames)])
                stats.sent += 1
                n += 1
        except ConnectionClosed:
            stats.lost = True  # the server closed it; the other streams go on
        await asyncio.sleep(0.5)
        reading.cancel()


class ClipTrack(VideoStreamTrack):
    """A camera that plays an encoded VP8 clip (one packet per frame, the first a keyframe) in
    a loop at ``fps``, its first frame ``phase`` seconds after the sender asks for it;
    aiortc's sender packetizes ``av.Packet`` as is. Remembers its start.

    Every ``recv`` returns a new ``av.Packet``: tracks share the bytes, never a packet,
    whose ``pts`` is per stream. :meth:`request_keyframe` answers a receiver's keyframe
    request (PLI) as a browser does, with the next frame: the clip starts over.
    """

    def __init__(self, packets: list[bytes], fps: float, phase: float = 0.0) -> None:
        super().__init__()
        self.packets, self.fps, self.phase = packets, fps, phase
        self.n = 0
        self.first = 0  # the frame at which the clip last started
        self.origin: float | None = None

    def request_keyframe(self) -> None:
        self.first = self.n

    async def recv(self) -> av.Packet[Any]:  # type: ignore[override]
        if self.origin is None:
            self.origin = time.monotonic() + self.phase
        await asyncio.sleep(max(0.0, self.origin + self.n / self.fps - time.monotonic()))
        packet = av.Packet(self.packets[(self.n - self.first) % len(self.packets)])
        packet.pts = round(self.n * VIDEO_CLOCK / self.fps)
        packet.time_base = Fraction(1, VIDEO_CLOCK)
        self.n += 1
        return packet


def vp8_clip(images: list[ImageBGR], fps: float, bitrate: int) -> list[bytes]:
    """``images`` encoded once, as the pipeline benchmark's VP8 stream, at ``bitrate`` bit/s."""
    packets = encode_video(images, "libvpx", fps, bitrate)
    if len(packets) != len(images) or not packets[0].is_keyframe:
        raise RuntimeError("the VP8 clip must be one packet per frame, starting with a keyframe")
    return [bytes(p) for p in packets]


class VideoClips:
    """The load's VP8 clip at each bitrate a server's answer asks for, encoded once per rate
    (in a thread: the other streams go on) and shared by every stream."""

    def __init__(self, images: list[ImageBGR], fps: float) -> None:
        self.images, self.fps = images, fps
        self._encoded: dict[int, asyncio.Task[list[bytes]]] = {}

    def for_answer(self, sdp: str) -> asyncio.Task[list[bytes]]:
        """The clip a camera sends to a server that answered ``sdp``: at the rate it asks
        for, if less than the camera's own (:data:`evals.video_codec.CAMERA_BITRATE`)."""
        asked = asked_video_kbps(sdp)
        rate = CAMERA_BITRATE if asked is None else min(CAMERA_BITRATE, asked * 1000)
        if rate not in self._encoded:
            self._encoded[rate] = asyncio.ensure_future(
                asyncio.to_thread(vp8_clip, self.images, self.fps, rate)
            )
        return self._encoded[rate]


def send_clip(pc: RTCPeerConnection, track: ClipTrack) -> RTCRtpSender:
    """Send ``track`` on ``pc`` as VP8 (the clip's codec), restarting the clip when the
    receiver asks for a keyframe."""
    vp8 = [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType == "video/VP8"]
    transceiver = pc.addTransceiver(track, direction="sendonly")
    transceiver.setCodecPreferences(vp8)
    # aiortc's sender forces a keyframe only on frames it encodes itself; without this, a
    # server that drops frames up to a keyframe would wait for the clip's next loop (2 s).
    setattr(transceiver.sender, "_send_keyframe", track.request_keyframe)  # noqa: B010
    return transceiver.sender


async def webrtc_stream(
    url: str, clips: VideoClips, fps: float, stop: float, stats: StreamStats, phase: float
) -> None:
    # No ICE servers: the server is on this host or LAN, and aiortc's default (Google's STUN)
    # would add a lookup per stream.
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    track = ClipTrack([], fps, phase)  # its clip comes with the answer
    channel = pc.createDataChannel("results")
    channel.on(
        "message", lambda raw: stats.on_message(json.loads(raw), track.origin or time.monotonic())
    )
    send_clip(pc, track)
    try:
        await pc.setLocalDescription(await pc.createOffer())
        body = {"sdp": pc.localDescription.sdp, "type": "offer"}
        async with aiohttp.ClientSession() as http, http.post(url, json=body) as response:
            answer = await response.json()
            if response.status != 200:
                stats.errors += 1
                return
        track.packets = await clips.for_answer(answer["sdp"])  # before any frame is asked for
        await pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        await asyncio.sleep(max(0.0, stop - time.monotonic()))
        stats.sent = track.n
        stats.lost = pc.connectionState != "connected"
    finally:
        await pc.close()


@dataclass
class Sample:
    t: float
    cpu: float
    rss_mib: float
    fds: int
    busiest: float = 0.0
    """The most CPU one of the processes used (% of a core): how unevenly workers are loaded."""


async def sample_process(pid: int, every: float, stop: float, out: list[Sample]) -> None:
    """Every ``every`` s until ``stop``: CPU, RSS and open files of process ``pid`` and its
    children together (the workers of ``serve --workers N``; a replaced worker counts from
    its first interval on)."""
    tree: dict[int, psutil.Process] = {}

    def processes() -> list[psutil.Process]:
        root = tree.get(pid) or psutil.Process(pid)
        alive = [root, *root.children(recursive=True)]
        for process in alive:
            if process.pid not in tree:
                tree[process.pid] = process
                process.cpu_percent()  # the first call starts its interval
        return [tree[p.pid] for p in alive]

    processes()
    begin = time.monotonic()
    while time.monotonic() < stop:
        await asyncio.sleep(min(every, max(0.0, stop - time.monotonic())))
        cpu = rss = fds = busiest = 0.0
        for process in processes():
            with contextlib.suppress(psutil.NoSuchProcess), process.oneshot():
                used = process.cpu_percent()
                cpu, busiest = cpu + used, max(busiest, used)
                rss += process.memory_info().rss
                fds += process.num_fds()
        out.append(Sample(time.monotonic() - begin, cpu, rss / 2**20, int(fds), busiest))


def percentiles(values: list[float]) -> str:
    if not values:
        return "     -      -      -"
    p50, p95, p99 = np.percentile(np.array(values) * 1000, [50, 95, 99])
    return f"{p50:6.1f} {p95:6.1f} {p99:6.1f}"


def report(streams: list[StreamStats], samples: list[Sample], duration: float) -> str:
    lines = [
        f"{'transport':<10} {'streams':>7} {'sent':>6} {'results':>7} {'fps/str':>7} "
        f"{'dropped':>7} {'errors':>6} {'lost':>4}   latency ms p50    p95    p99"
        "   server ms p50    p95    p99",
    ]
    for transport in ("websocket", "webrtc"):
        group = [s for s in streams if s.transport == transport]
        if not group:
            continue
        results = sum(s.results for s in group)
        lines.append(
            f"{transport:<10} {len(group):>7} {sum(s.sent for s in group):>6} {results:>7} "
            f"{results / duration / len(group):>7.1f} {sum(s.dropped for s in group):>7} "
            f"{sum(s.errors for s in group):>6} {sum(s.lost for s in group):>4}   "
            + " " * 10
            + percentiles([x for s in group for x in s.latencies])
            + " " * 13
            + percentiles([x / 1000 for s in group for x in s.server_ms])
        )
    if samples:
        lines.append("")
        lines.append(f"{'t s':>6} {'cpu %':>6} {'rss MiB':>8} {'fds':>5}")
        for s in samples:
            lines.append(f"{s.t:6.0f} {s.cpu:6.0f} {s.rss_mib:8.1f} {s.fds:5d}")
        lines.append(growth(samples))
    return "\n".join(lines)


def growth(samples: list[Sample]) -> str:
    """The soak verdict: RSS and fds from the first to the last sample, and the RSS trend.

    The first sample (one ``--sample`` interval in) is the baseline, so start-up and
    first-frame allocations do not count as growth. The trend is a least-squares slope,
    which one allocator step late in the run does not dominate as last - first does.
    """
    first, last = samples[0], samples[-1]
    fds = [s.fds for s in samples]
    line = (
        f"growth over the run: RSS {last.rss_mib - first.rss_mib:+.1f} MiB, "
        f"fds {last.fds - first.fds:+d} (range {min(fds)}-{max(fds)}); server CPU median "
        f"{np.median([s.cpu for s in samples]):.0f}% of one core"
    )
    if len(samples) >= 6:  # the second half's trend tells a leak from warm-up growth
        line += (
            f"; RSS trend {rss_trend(samples):+.1f} MiB/h, "
            f"second half {rss_trend(samples[len(samples) // 2 :]):+.1f} MiB/h"
        )
    return line


def rss_trend(samples: list[Sample]) -> float:
    """Least-squares slope of RSS over time, MiB per hour."""
    hours = np.array([s.t for s in samples]) / 3600
    return float(np.polyfit(hours, np.array([s.rss_mib for s in samples]), 1)[0])


@contextlib.contextmanager
def local_server(
    profile: str,
    max_video_kbps: int | None = None,
    workers: int | None = None,
    cores: Collection[int] | None = None,
    pin_workers: bool = False,
) -> Iterator[tuple[str, int]]:
    """A quiet local server on ``profile`` with room for many sessions: (url, pid).
    ``max_video_kbps``, ``workers``, ``pin_workers``: its ``--max-video-kbps``, ``--workers``
    (``None``: the server's default) and ``--pin-workers``; ``cores``: the only cores it runs
    on (``None``: any)."""
    limit = [] if max_video_kbps is None else ["--max-video-kbps", str(max_video_kbps)]
    processes = [] if workers is None else ["--workers", str(workers)]
    if pin_workers:
        processes.append("--pin-workers")
    with running_server(
        "--profile",
        profile,
        "--max-sessions",
        "1024",
        "--max-sessions-per-client",
        "1024",
        *limit,
        *processes,
        quiet=True,
        cores=cores,
    ) as server:
        yield server.url, server.process.pid


@dataclass
class LoadResult:
    """What one load run measured: every stream, the server's resource samples, this process."""

    streams: list[StreamStats]
    samples: list[Sample]
    duration: float
    client_cpu: float  # % of one core this (client) process used during the run


async def measure_load(
    url: str,
    pid: int | None,
    ws: int,
    webrtc: int,
    fps: float,
    duration: float,
    sample: float,
    phases: str = "independent",
    seed: int = 0,
    start_at: float | None = None,
    clip: str | None = None,
) -> LoadResult:
    """Stream ``ws`` websocket and ``webrtc`` WebRTC clients to ``url`` for ``duration`` s,
    their cameras' phases as :func:`stream_phases` gives them (with ``seed``), each playing
    :func:`clip_frames` of ``clip``; ``pid``: the server process to sample (``None``: none).
    ``start_at``: the ``time.monotonic()`` at which to begin (it is the same clock in every
    process of the host), once the clip is ready."""
    aioice.ice.get_host_addresses = loopback_host_addresses  # loopback only
    images = clip_frames(fps, clip)
    jpegs = [encode_jpeg(image) for image in images]
    clips = VideoClips(images, fps)
    streams = [StreamStats("websocket") for _ in range(ws)]
    streams += [StreamStats("webrtc") for _ in range(webrtc)]
    if start_at is not None:
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    stop = time.monotonic() + duration
    samples: list[Sample] = []
    jobs = [
        websocket_stream(url.replace("http", "ws") + "/ws", jpegs, fps, stop, s, phase)
        if s.transport == "websocket"
        else webrtc_stream(url + "/offer", clips, fps, stop, s, phase)
        for s, phase in zip(streams, stream_phases(len(streams), fps, phases, seed), strict=True)
    ]
    if pid is not None:
        jobs.append(sample_process(pid, sample, stop, samples))
    me = psutil.Process()
    me.cpu_percent()
    await asyncio.gather(*jobs)
    return LoadResult(streams, samples, duration, me.cpu_percent())


SHARE_LEAD_S = 3.0
"""Seconds the client processes get to make their clips before a step's streams begin."""


class LoadClients:
    """The processes that send a load's streams: this one (``procs`` 1), or a pool of
    ``procs`` (one Python process cannot send for a hundred streams). Use it as a context
    manager; the pool's processes start once and serve every :meth:`measure`."""

    def __init__(self, procs: int = 1) -> None:
        self.procs = procs
        self._pool = None
        if procs > 1:
            spawn = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(procs, mp_context=spawn)
            # Each submit finding no idle process starts one: all start now, not mid-step.
            for started in [self._pool.submit(time.sleep, 0.1) for _ in range(procs)]:
                started.result()

    def __enter__(self) -> LoadClients:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def measure(
        self,
        url: str,
        pid: int | None,
        ws: int,
        webrtc: int,
        fps: float,
        duration: float,
        sample: float,
        phases: str = "independent",
        clip: str | None = None,
    ) -> LoadResult:
        """:func:`measure_load` with the streams dealt out over the processes, this one
        sampling the server; ``client_cpu`` is then the processes' sum."""
        if self._pool is None:
            return uvloop.run(
                measure_load(url, pid, ws, webrtc, fps, duration, sample, phases, clip=clip)
            )
        n, start_at = self.procs, time.monotonic() + SHARE_LEAD_S
        jobs = [
            self._pool.submit(
                _measure_share, url, ws * i // n, ws * (i + 1) // n,
                webrtc * i // n, webrtc * (i + 1) // n, fps, duration, phases, i, start_at,
                clip,
            )
            for i in range(n)
        ]  # fmt: skip
        samples: list[Sample] = []
        if pid is not None:
            time.sleep(max(0.0, start_at - time.monotonic()))
            uvloop.run(sample_process(pid, sample, start_at + duration, samples))
        results = [job.result() for job in jobs]
        streams = [stream for result in results for stream in result.streams]
        return LoadResult(streams, samples, duration, sum(r.client_cpu for r in results))


def _measure_share(
    url: str,
    ws_from: int,
    ws_to: int,
    webrtc_from: int,
    webrtc_to: int,
    fps: float,
    duration: float,
    phases: str,
    seed: int,
    start_at: float,
    clip: str | None,
) -> LoadResult:
    """One pool process's share of :meth:`LoadClients.measure` (seeded apart: phases differ)."""
    ws, webrtc = ws_to - ws_from, webrtc_to - webrtc_from
    return uvloop.run(
        measure_load(url, None, ws, webrtc, fps, duration, 0.0, phases, seed, start_at, clip)
    )


def run_load(args: argparse.Namespace, url: str, pid: int | None) -> str:
    with LoadClients(args.client_procs) as clients:
        result = clients.measure(
            url, pid, args.ws, args.webrtc, args.fps, args.duration, args.sample, args.phases,
            args.clip,
        )  # fmt: skip
    streams, samples = result.streams, result.samples
    header = (
        f"{args.ws} websocket + {args.webrtc} WebRTC streams at {args.fps:g} fps for "
        f"{args.duration:g} s, {args.phases} camera phases, "
        f"clients on the same {psutil.cpu_count()}-core machine "
        f"({args.client_procs} client processes, {result.client_cpu:.0f}% of one core)"
    )
    return header + "\n" + report(streams, samples, args.duration)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ws", type=int, default=4, help="websocket streams")
    parser.add_argument("--webrtc", type=int, default=0, help="WebRTC streams")
    parser.add_argument("--fps", type=float, default=15.0, help="frames a second per stream")
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds (per step, --find-capacity)"
    )
    parser.add_argument("--sample", type=float, default=5.0, help="resource sample interval, s")
    add_phases_argument(parser)
    add_bitrate_argument(parser)
    parser.add_argument("--profile", default="host", help="device profile of the local server")
    parser.add_argument(
        "--workers",
        type=worker_counts,
        help="the local server's --workers (default: its own); with --find-capacity, a "
        "comma-separated list of counts to measure, e.g. 1,4,8,14",
    )
    parser.add_argument(
        "--find-capacity",
        action="store_true",
        help="per worker count: the most streams held within the latency bound, the scaling "
        "against one worker and the CPU per stream (docs/scaling.md)",
    )
    parser.add_argument(
        "--transport",
        choices=("websocket", "webrtc"),
        default="websocket",
        help="the streams --find-capacity steps up",
    )
    parser.add_argument(
        "--cores-per-worker",
        type=positive_int,
        help="with --find-capacity: pin each server to this many cores a worker, the first "
        "of this machine's, and the clients to the last --client-procs cores, so that capacity "
        "is compared per core (docs/scaling.md)",
    )
    parser.add_argument(
        "--pin-workers",
        action="store_true",
        help="with --find-capacity: start each server with --pin-workers, every worker on "
        "cores of its own",
    )
    parser.add_argument(
        "--client-procs",
        type=positive_int,
        default=1,
        help="processes that send the streams (one Python process sends at most about a "
        "hundred websocket streams)",
    )
    parser.add_argument(
        "--clip",
        help="the camera clip every stream plays in a loop at --fps: a video file or a folder "
        "of images (default: 2 s of a generated 福 scene, which needs the Debian wallpaper "
        "photos of 'make system-deps')",
    )
    parser.add_argument(
        "--save-clip",
        type=Path,
        metavar="VIDEO",
        help="write the clip the streams would play (H.264, e.g. clip.mp4) and exit: a "
        "--clip for a machine without the wallpapers",
    )
    parser.add_argument("--url", help="target this server instead of starting one")
    parser.add_argument("--pid", type=int, help="server process to sample (with --url)")


def worker_counts(text: str) -> list[int]:
    """``--workers``: ``N`` or ``N,M,...``, each a positive integer."""
    return [positive_int(part) for part in text.split(",")]


def add_phases_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--phases",
        choices=PHASES,
        default="independent",
        help="cameras' frame phases: independent (each its own offset) or aligned (lockstep)",
    )


def add_bitrate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-video-kbps",
        type=non_negative_int,
        help="the local server's --max-video-kbps (default: its own; 0: no limit); "
        "WebRTC clients send what its answer asks for",
    )


def save_clip(args: argparse.Namespace) -> int:
    """``--save-clip``: the clip the streams would play, written as a video."""
    try:
        check_video_path(args.save_clip)
        write_video(clip_frames(args.fps, args.clip), args.save_clip, args.fps)
    except (VideoPathError, SourceError) as exc:
        print(f"loadtest: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.save_clip}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.save_clip:
        return save_clip(args)
    if args.clip:
        try:
            clip_frames(args.fps, args.clip)  # unreadable: said now, not in every client
        except SourceError as exc:
            print(f"loadtest: {exc}", file=sys.stderr)
            return 2
    # uvloop, as in the server: the load generator shares the machine, so its cost is kept low.
    if args.url and (args.max_video_kbps is not None or args.workers or args.find_capacity):
        print(
            "loadtest: --max-video-kbps, --workers and --find-capacity start a local server; "
            "not with --url",
            file=sys.stderr,
        )
        return 2
    for given, flag in (
        (args.cores_per_worker, "--cores-per-worker"),
        (args.pin_workers, "--pin-workers"),
    ):
        if given and not args.find_capacity:
            print(f"loadtest: {flag} is for --find-capacity", file=sys.stderr)
            return 2
    if args.find_capacity:
        from evals.find_capacity import find_capacity_main

        return find_capacity_main(args)
    if args.workers and len(args.workers) > 1:
        print("loadtest: one --workers count, unless --find-capacity", file=sys.stderr)
        return 2
    if args.url:
        print(run_load(args, args.url.rstrip("/"), args.pid))
        return 0
    workers = args.workers[0] if args.workers else None
    with local_server(args.profile, args.max_video_kbps, workers) as (url, pid):
        print(run_load(args, url, pid))
    return 0
