// Browser demo: streams the camera to the server over WebRTC and draws what comes back.
// Every result message is appended to window.scanResults (tests read it).
"use strict";

window.scanResults = [];

const $ = (id) => document.getElementById(id);
const video = $("video");
const overlay = $("overlay");
const banner = $("banner");
const statusLine = $("status");
const history = $("history");
const BANNER_MS = 2500;

let pc = null;
let bannerTimer = null;
const recognizedTracks = new Set();

function setStatus(text) {
  statusLine.textContent = text;
}

// Boxes are in pixels of the frame the server received; the video element letterboxes
// that frame into its own box, so map with the same contain-fit.
function drawDetections(msg) {
  const rect = overlay.getBoundingClientRect();
  overlay.width = rect.width;
  overlay.height = rect.height;
  const ctx = overlay.getContext("2d");
  ctx.clearRect(0, 0, overlay.width, overlay.height);
  if (!msg.width || !msg.height) return;
  const scale = Math.min(rect.width / msg.width, rect.height / msg.height);
  const ox = (rect.width - msg.width * scale) / 2;
  const oy = (rect.height - msg.height * scale) / 2;
  ctx.lineWidth = 3;
  ctx.font = "16px system-ui";
  for (const det of msg.detections) {
    const [x0, y0, x1, y1] = det.box.map((v) => v * scale);
    const confirmed = recognizedTracks.has(det.track);
    ctx.strokeStyle = confirmed ? "#ffcc00" : "#ffffff88";
    ctx.strokeRect(ox + x0, oy + y0, x1 - x0, y1 - y0);
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(`${det.label} ${det.score.toFixed(2)} #${det.track}`, ox + x0 + 4, oy + y0 - 6);
  }
}

function showEvent(msg) {
  const item = document.createElement("li");
  item.textContent = `${msg.t.toFixed(2)} s  ${msg.event}  ${msg.label} #${msg.track}`;
  history.prepend(item);
  while (history.children.length > 8) history.lastChild.remove();
  if (msg.event === "recognized") {
    recognizedTracks.add(msg.track);
    banner.hidden = false;
    clearTimeout(bannerTimer);
    bannerTimer = setTimeout(() => { banner.hidden = true; }, BANNER_MS);
  } else if (msg.event === "lost") {
    recognizedTracks.delete(msg.track);
  }
}

function onResult(msg) {
  window.scanResults.push(msg);
  if (msg.type === "frame") {
    drawDetections(msg);
    const d = msg.device;
    setStatus(`frame ${msg.frame}  t=${msg.t.toFixed(2)} s  ${d.profile}/${d.tier}  ` +
      `${d.latency_ms.toFixed(0)} ms  dropped ${d.dropped}`);
  } else if (msg.type === "event") {
    showEvent(msg);
  } else if (msg.type === "error") {
    setStatus(`error ${msg.code}: ${msg.message}`);
  }
}

function iceGatheringDone(peer) {
  if (peer.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    peer.addEventListener("icegatheringstatechange", () => {
      if (peer.iceGatheringState === "complete") resolve();
    });
  });
}

async function start() {
  $("start").disabled = true;
  try {
    const stream = await navigator.mediaDevices.getUserMedia({
      video: { width: { ideal: 640 }, height: { ideal: 480 }, facingMode: "environment" },
      audio: false,
    });
    video.srcObject = stream;
    pc = new RTCPeerConnection();
    const channel = pc.createDataChannel("results");
    channel.onmessage = (e) => onResult(JSON.parse(e.data));
    channel.onopen = () => setStatus("connected, scanning…");
    for (const track of stream.getVideoTracks()) pc.addTrack(track, stream);
    await pc.setLocalDescription(await pc.createOffer());
    await iceGatheringDone(pc);
    const response = await fetch("/offer", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        sdp: pc.localDescription.sdp,
        type: pc.localDescription.type,
        profile: $("profile").value || undefined,
      }),
    });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || response.statusText);
    await pc.setRemoteDescription(answer);
    setStatus("connecting…");
  } catch (err) {
    setStatus(`could not start: ${err.message || err}`);
    $("start").disabled = false;
  }
}

async function loadProfiles() {
  const select = $("profile");
  try {
    const profiles = await (await fetch("/profiles")).json();
    for (const p of profiles) {
      const option = document.createElement("option");
      option.value = p.name;
      option.textContent = `${p.name} (tier ${p.tier})`;
      select.append(option);
    }
    select.value = profiles.find((p) => p.default)?.name ?? select.value;
  } catch {
    select.disabled = true;
  }
}

$("start").addEventListener("click", start);
loadProfiles();
if (new URLSearchParams(location.search).has("autostart")) start();
