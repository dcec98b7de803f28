// Browser demo: streams the camera to the server and draws what comes back.
// WebRTC first (video track up, results on a data channel); if that cannot connect,
// JPEG frames over the websocket API. Every result message is appended to
// window.scanResults, which tests read.
"use strict";

window.scanResults = [];

const $ = (id) => document.getElementById(id);
const video = $("video");
const overlay = $("overlay");
const banner = $("banner");
const params = new URLSearchParams(location.search);
// A server started with --token wants it on every session request; the page got it in its URL.
const withToken = (path) =>
  params.has("token") ? `${path}?token=${encodeURIComponent(params.get("token"))}` : path;

// ?relay=1: ICE candidates through the TURN relay only (iceTransportPolicy "relay").
const RELAY_ONLY = params.get("relay") === "1";

const BANNER_MS = 2500;
const WEBRTC_CONNECT_MS = 8000;      // give up on WebRTC and fall back after this
const ICE_GATHERING_MS = 5000;       // offer the candidates found by then
const WS_SEND_FPS = 10;              // frame rate of the websocket fallback
const RECONNECT_MS = [1000, 2000, 5000, 10000];
const BUSY_RETRY_MS = 5000;          // a busy server (503, close 1013) is asked again this often
const CLOSE_TRY_AGAIN_LATER = 1013;  // the websocket's close code when all sessions are in use
const SPARK_POINTS = 120;
const HISTORY_ITEMS = 8;
const REGISTER_TIMEOUT_MS = 15000;     // registering a target: features, disk, index

// The server refused the session with an HTTP status (docs/api.md, section 5), closed its
// websocket with 1013, or refused its options (400): retrying as it is, or over the other
// transport, cannot help, except when the server is busy (503, 1013).
class Refused extends Error {
  constructor(status, reason) {  // status: the HTTP status, or the websocket's close code
    super(reason);
    this.status = status;
  }

  get busy() {  // all sessions are in use: that clears when one ends
    return this.status === 503 || this.status === CLOSE_TRY_AGAIN_LATER;
  }
}

const state = {
  stream: null,        // camera MediaStream
  facingMode: "environment",  // the rear camera first: the one that looks at a 福
  wakeLock: null,      // keeps a phone's screen on while scanning (Wake Lock API)
  profiles: [],        // from /profiles: [{name, tier, default}]
  transport: null,     // {kind, close()}
  generation: 0,       // bumps on every (re)start so stale callbacks are ignored
  reconnects: 0,
  recognized: new Set(),
  frameTimes: [],
  scores: [],
};

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

// A refusal as the user can act on it.
function refusalText(err) {
  if (err.status === 401) {
    return params.has("token")
      ? "the token was refused (401): open the page with the server's ?token=…"
      : "this server needs a token: open the page with ?token=…";
  }
  if (err.status === 403) return `the server does not accept this page's origin (403): ${err.message}`;
  if (err.busy) return `server busy (${err.status}): ${err.message}`;
  return `the server refused the session (${err.status}): ${err.message}`;
}

// Everything that belongs to one session: a new one numbers its tracks from 1 again, and a
// lost one must not leave its boxes over the live video or its numbers in the stats.
function resetSession() {
  state.recognized.clear();
  state.frameTimes = [];
  state.scores = [];
  overlay.getContext("2d").clearRect(0, 0, overlay.width, overlay.height);
  drawSparkline();
  clearTimeout(showEvent.timer);
  banner.hidden = true;
  for (const id of ["stat-transport", "stat-tier", "stat-fps", "stat-dropped", "stat-latency"]) {
    $(id).textContent = "–";
  }
  $("stats").classList.add("idle");
}

// ---- drawing -------------------------------------------------------------------------------

// Boxes are pixels of the frame the server received; the video is contain-fitted the same way.
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
    const confirmed = state.recognized.has(det.track);
    ctx.strokeStyle = confirmed ? "#ffcc00" : "#ffffffaa";
    ctx.strokeRect(ox + x0, oy + y0, x1 - x0, y1 - y0);
    ctx.fillStyle = ctx.strokeStyle;
    const label = `${confirmed ? "福 " : ""}${det.label} ${det.score.toFixed(2)} #${det.track}`;
    ctx.fillText(label, ox + x0 + 4, oy + y0 - 6);
  }
}

function drawSparkline() {
  const canvas = $("sparkline");
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "#ffcc00";
  ctx.beginPath();
  state.scores.forEach((score, i) => {
    const x = (i / (SPARK_POINTS - 1)) * canvas.width;
    const y = canvas.height - score * (canvas.height - 2) - 1;
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
}

function updateStats(msg) {
  const now = performance.now();
  state.frameTimes.push(now);
  while (state.frameTimes.length && now - state.frameTimes[0] > 2000) state.frameTimes.shift();
  const d = msg.device;
  $("stat-tier").textContent = `${d.profile} / ${d.tier}`;
  $("stat-fps").textContent = (state.frameTimes.length / 2).toFixed(1);
  $("stat-dropped").textContent = String(d.dropped);
  $("stat-latency").textContent = `${d.latency_ms.toFixed(0)} ms`;
  state.scores.push(Math.max(0, ...msg.detections.map((det) => det.score)));
  if (state.scores.length > SPARK_POINTS) state.scores.shift();
  drawSparkline();
}

function showEvent(msg) {
  if (msg.event === "recognized") {
    state.recognized.add(msg.track);
    const item = document.createElement("li");
    item.textContent = `${new Date().toLocaleTimeString()}  ${msg.label} #${msg.track}` +
      `  (t=${msg.t.toFixed(2)} s, score ${msg.score?.toFixed(3) ?? "?"})`;
    $("history").prepend(item);
    while ($("history").children.length > HISTORY_ITEMS) $("history").lastChild.remove();
    banner.textContent = `${msg.label === "fu" ? "福" : msg.label} recognized!`;
    banner.hidden = false;
    clearTimeout(showEvent.timer);
    showEvent.timer = setTimeout(() => { banner.hidden = true; }, BANNER_MS);
  } else if (msg.event === "lost") {
    state.recognized.delete(msg.track);
  }
}

function onResult(msg) {
  window.scanResults.push(msg);
  if (msg.type === "frame") {
    state.reconnects = 0;
    $("stats").classList.remove("idle");
    drawDetections(msg);
    updateStats(msg);
    setStatus(`scanning… frame ${msg.frame}, t=${msg.t.toFixed(2)} s`);
  } else if (msg.type === "event") {
    showEvent(msg);
  } else if (msg.type === "error") {
    setStatus(`server error ${msg.code}: ${msg.message}`, true);
  } else if (msg.type === "ready") {
    $("stat-tier").textContent = `${msg.profile} / ${msg.tier}`;
  }
}

// ---- transports ----------------------------------------------------------------------------

function sessionOptions() {
  const profile = $("profile").value;
  return profile ? { profile } : {};
}

// Resolves when the candidates are gathered, or after ICE_GATHERING_MS with those found so
// far: a STUN or TURN server that never answers held the page for more than 40 s.
function iceGatheringDone(peer) {
  if (peer.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    setTimeout(resolve, ICE_GATHERING_MS);
    peer.addEventListener("icegatheringstatechange", () => {
      if (peer.iceGatheringState === "complete") resolve();
    });
  });
}

// WebRTC could not connect through the TURN relay the page was told to use (?relay=1): the
// websocket would hide that, so the user is told why instead.
class RelayFailed extends Error {}

// The ICE servers of this session, from the server (docs/networks.md): TURN credentials there
// expire, so they are fetched for every session and never kept in the page.
async function rtcConfiguration() {
  const response = await fetch(withToken("/ice-servers"));
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Refused(response.status, body.error || response.statusText);
  return { iceServers: body.iceServers, iceTransportPolicy: RELAY_ONLY ? "relay" : "all" };
}

function relayFailure(iceErrors) {
  const why = iceErrors.length ? ` (${iceErrors.at(-1)})` : "";
  return new RelayFailed(`WebRTC could not connect through the TURN relay${why}: check the ` +
    "server's --ice-server and --turn-secret against the TURN server (docs/networks.md)");
}

// Resolves once media flows; rejects if WebRTC cannot connect (then we fall back, unless the
// page must use the relay).
async function startWebRtc(generation, onLost) {
  const pc = new RTCPeerConnection(await rtcConfiguration());
  const transport = {
    kind: "WebRTC",
    close: () => pc.close(),
    replaceTrack: (track) => pc.getSenders().find((s) => s.track?.kind === "video")?.replaceTrack(track),
  };
  const iceErrors = [];  // e.g. a TURN server refusing the credentials: "401 Unauthorized"
  pc.addEventListener("icecandidateerror", (e) => {
    iceErrors.push(`${e.url}: ${e.errorCode} ${e.errorText}`);
  });
  const channel = pc.createDataChannel("results");
  channel.onmessage = (e) => { if (generation === state.generation) onResult(JSON.parse(e.data)); };
  for (const track of state.stream.getVideoTracks()) pc.addTrack(track, state.stream);
  await pc.setLocalDescription(await pc.createOffer());
  await iceGatheringDone(pc);
  if (RELAY_ONLY && !pc.localDescription.sdp.includes("a=candidate")) {
    pc.close();
    const seconds = ICE_GATHERING_MS / 1000;
    if (!iceErrors.length) iceErrors.push(`no answer from the TURN server in ${seconds} s`);
    throw relayFailure(iceErrors);
  }
  const response = await fetch(withToken("/offer"), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ sdp: pc.localDescription.sdp, type: "offer", ...sessionOptions() }),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) { pc.close(); throw new Refused(response.status, answer.error || response.statusText); }
  await pc.setRemoteDescription(answer);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("WebRTC did not connect")), WEBRTC_CONNECT_MS);
    pc.addEventListener("connectionstatechange", () => {
      if (pc.connectionState === "connected") { clearTimeout(timer); resolve(); }
      if (pc.connectionState === "failed") { clearTimeout(timer); reject(new Error("WebRTC failed")); }
    });
  }).catch((err) => { pc.close(); throw RELAY_ONLY ? relayFailure(iceErrors) : err; });
  pc.addEventListener("connectionstatechange", () => {
    if (["failed", "disconnected", "closed"].includes(pc.connectionState)) onLost();
  });
  channel.addEventListener("close", onLost);  // the server went away or restarted
  return transport;
}

// Grabs frames from the <video> into JPEGs and sends them over the websocket API.
function startWebsocket(generation, onLost) {
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}${withToken("/ws")}`);
    const grab = document.createElement("canvas");
    let timer = null;
    let upgraded = false;  // the server took the connection (past the guard)
    let opened = false;    // ... and started the session
    let refused = false;
    const transport = { kind: "websocket", close: () => { clearInterval(timer); ws.close(); } };
    ws.onopen = () => {
      upgraded = true;
      ws.send(JSON.stringify({ type: "start", ...sessionOptions() }));
    };
    ws.onmessage = (e) => {
      const msg = JSON.parse(e.data);
      if (refused) return;
      if (msg.type === "error" && !opened) {  // the start message was refused
        refused = true;  // the close that follows is not a loss
        ws.close();
        reject(new Refused(400, `${msg.code}: ${msg.message}`));
        return;
      }
      if (msg.type === "ready" && !opened) {
        opened = true;
        timer = setInterval(() => sendFrame(ws, grab), 1000 / WS_SEND_FPS);
        resolve(transport);
      }
      if (generation === state.generation) onResult(msg);
    };
    ws.onclose = (e) => {
      clearInterval(timer);
      if (refused) return;
      if (e.code === CLOSE_TRY_AGAIN_LATER) reject(new Refused(e.code, e.reason));
      else if (opened) onLost();
      else if (upgraded) reject(new Error("/ws closed before the session started"));
      else upgradeRefusal().then(reject);
    };
  });
}

// A browser does not show why a websocket upgrade failed. Ask the guard (token, origin) with
// an empty offer: it answers 401/403 before it looks at the body, else 400, and takes no slot.
// Anything else is a lost connection: a full server does not refuse the upgrade, it closes the
// websocket with 1013 (docs/api.md, section 5).
async function upgradeRefusal() {
  try {
    const response = await fetch(withToken("/offer"), { method: "POST", body: "{}" });
    if (response.status === 401 || response.status === 403) {
      const body = await response.json().catch(() => ({}));
      return new Refused(response.status, body.error || response.statusText);
    }
  } catch {
    // the server is unreachable: an ordinary loss
  }
  return new Error("/ws refused the connection");
}

function sendFrame(ws, grab) {
  if (ws.readyState !== WebSocket.OPEN || ws.bufferedAmount > 0 || !video.videoWidth) return;
  grab.width = video.videoWidth;
  grab.height = video.videoHeight;
  grab.getContext("2d").drawImage(video, 0, 0);
  grab.toBlob((blob) => {
    if (blob && ws.readyState === WebSocket.OPEN) ws.send(blob);
  }, "image/jpeg", 0.8);
}

async function connect() {
  const generation = ++state.generation;
  state.transport?.close();
  state.transport = null;
  resetSession();
  let lost = false;  // several signals (channel close, state change) report one loss
  const retryIn = (delay, text) => {
    setStatus(text, true);
    setTimeout(() => { if (generation === state.generation) connect(); }, delay);
  };
  const retry = (why) => {
    const delay = RECONNECT_MS[Math.min(state.reconnects++, RECONNECT_MS.length - 1)];
    retryIn(delay, `${why}; reconnecting in ${delay / 1000} s…`);
  };
  const onLost = () => {
    if (lost || generation !== state.generation) return;
    lost = true;
    resetSession();
    retry("connection lost");
  };
  // Retrying cannot help: say why and stop.
  const onFailed = (text) => {
    lost = true;
    resetSession();
    setStatus(text, true);
    $("start").disabled = false;  // "Start camera" tries again (e.g. after fixing the URL)
  };
  // Refused (over either transport): a busy server can clear, so ask again now and then,
  // saying so (it is no lost connection); 400/401/403 cannot, so stop.
  const onRefused = (err) => {
    if (generation !== state.generation) return;
    lost = true;
    resetSession();
    if (err.busy) {
      retryIn(BUSY_RETRY_MS, `${refusalText(err)}; trying again in ${BUSY_RETRY_MS / 1000} s…`);
      return;
    }
    onFailed(refusalText(err));
  };
  const forced = params.get("transport");
  setStatus("connecting…");
  try {
    if (forced === "ws") throw new Error("websocket requested");
    state.transport = await startWebRtc(generation, onLost);
  } catch (err) {
    if (generation !== state.generation) return;
    if (err instanceof Refused) { onRefused(err); return; }  // the websocket would be refused too
    if (err instanceof RelayFailed) { onFailed(err.message); return; }
    console.warn(`WebRTC unavailable (${err.message}); using the websocket`);
    try {
      state.transport = await startWebsocket(generation, onLost);
    } catch (wsErr) {
      if (wsErr instanceof Refused) onRefused(wsErr); else onLost();
      return;
    }
  }
  if (generation !== state.generation) { state.transport.close(); return; }
  $("stat-transport").textContent = state.transport.kind;
  if ($("stat-tier").textContent === "–") {  // WebRTC sends no "ready": the chosen profile's tier
    const chosen = sessionOptions().profile;
    const p = state.profiles.find((x) => (chosen ? x.name === chosen : x.default));
    if (p) $("stat-tier").textContent = `${p.name} / ${p.tier}`;
  }
  setStatus(`connected over ${state.transport.kind}, scanning…`);
}

// Closes the session and lets the camera go.
function stop() {
  state.generation++;
  state.transport?.close();
  state.transport = null;
  for (const track of state.stream?.getTracks() ?? []) track.stop();
  state.stream = null;
  video.srcObject = null;
  state.wakeLock?.release();
  state.wakeLock = null;
  resetSession();
  $("start").disabled = false;
  $("stop").disabled = true;
  $("flip").disabled = true;
  setStatus("stopped. Press “Start camera” to scan again.");
}

async function start() {
  $("start").disabled = true;
  if (state.stream) { await connect(); return; }  // after a refusal: the camera is still on
  try {
    state.stream = await openCamera();
  } catch (err) {
    const hint = window.isSecureContext ? "allow the camera in the browser's site settings"
      : "the camera needs https: start the server with --https";
    setStatus(`camera unavailable (${err.name || err.message}): ${hint}`, true);
    $("start").disabled = false;
    return;
  }
  video.srcObject = state.stream;
  $("stop").disabled = false;
  $("flip").disabled = false;
  keepAwake();
  await connect();
}

function openCamera() {
  if (!navigator.mediaDevices) return Promise.reject(new Error("no camera API"));  // insecure
  return navigator.mediaDevices.getUserMedia({
    // 30 a second at most: the vote decides in time, not frames, and a 60 fps camera
    // would only double the server's decoding for frames the newest-wins slot drops
    video: {
      width: { ideal: 640 }, height: { ideal: 480 }, frameRate: { ideal: 30, max: 30 },
      facingMode: state.facingMode,
    },
    audio: false,
  });
}

// Rear <-> front camera; the session goes on with the new camera's track.
async function switchCamera() {
  if (!state.stream) return;
  state.facingMode = state.facingMode === "environment" ? "user" : "environment";
  $("flip").disabled = true;
  try {
    const stream = await openCamera();
    for (const track of state.stream.getTracks()) track.stop();
    state.stream = stream;
    video.srcObject = stream;
    await state.transport?.replaceTrack?.(stream.getVideoTracks()[0]);
  } catch (err) {
    setStatus(`could not switch the camera (${err.name || err.message})`, true);
  } finally {
    $("flip").disabled = !state.stream;
  }
}

// A phone's screen must not dim and lock mid-scan. The lock is let go when the page is
// hidden, so it is asked for again when the page comes back.
async function keepAwake() {
  if (!("wakeLock" in navigator) || !state.stream || document.visibilityState !== "visible") return;
  try {
    state.wakeLock = await navigator.wakeLock.request("screen");
  } catch (err) {
    console.warn(`screen wake lock refused: ${err.message}`);
  }
}

async function loadProfiles() {
  const select = $("profile");
  try {
    const profiles = await (await fetch("/profiles")).json();
    state.profiles = profiles;
    for (const p of profiles) {
      const option = document.createElement("option");
      option.value = p.name;
      option.textContent = `${p.name} (tier ${p.tier})`;
      select.append(option);
    }
    select.value = params.get("profile") ?? profiles.find((p) => p.default)?.name ?? select.value;
  } catch {
    select.disabled = true;
  }
}

// ---- scan targets --------------------------------------------------------------------------

// Snaps the current video frame and registers it as a scan target (docs/api.md, "Scan
// targets") over a websocket of its own, so the scanning transport is untouched. The reply
// is shown in the status line and appended to window.scanResults.
async function registerTarget() {
  const name = $("target-name").value.trim();
  if (!name) { setStatus("type a name for the target first", true); return; }
  if (!video.videoWidth) { setStatus("start the camera and fill the view with the target", true); return; }
  const snap = document.createElement("canvas");
  snap.width = video.videoWidth;
  snap.height = video.videoHeight;
  snap.getContext("2d").drawImage(video, 0, 0);
  const photo = await new Promise((resolve) => snap.toBlob(resolve, "image/jpeg", 0.92));
  $("register").disabled = true;
  try {
    const reply = await sendTargetPhoto(name, photo);
    window.scanResults.push(reply);
    if (reply.type === "target_registered") {
      setStatus(`registered “${reply.name}” (${reply.keypoints} keypoints): now scan it`);
    } else {
      setStatus(`target refused (${reply.code}): ${reply.message}`, true);
    }
  } catch (err) {
    setStatus(`registering failed: ${err.message}`, true);
  } finally {
    $("register").disabled = false;
  }
}

// Resolves with the server's first answer: target_registered, or an error message.
function sendTargetPhoto(name, photo) {
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}${withToken("/ws")}`);
    const timer = setTimeout(() => { ws.close(); reject(new Error("no answer")); }, REGISTER_TIMEOUT_MS);
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "register_target", name, replace: true }));
      ws.send(photo);
    };
    ws.onmessage = (e) => { clearTimeout(timer); ws.close(); resolve(JSON.parse(e.data)); };
    // Closed before an answer: the server's reason (e.g. a full server's, with 1013), if any.
    ws.onclose = (e) => { clearTimeout(timer); reject(new Error(e.reason || "websocket error")); };
  });
}

// Switching device class starts a new session with the new profile.
$("profile").addEventListener("change", () => { if (state.stream) connect(); });
$("start").addEventListener("click", start);
$("stop").addEventListener("click", stop);
$("flip").addEventListener("click", switchCamera);
document.addEventListener("visibilitychange", keepAwake);
$("insecure").hidden = window.isSecureContext;
// A closed or navigated-away tab gives its server slot back now, not after an ICE timeout.
window.addEventListener("pagehide", () => {
  state.generation++;
  state.transport?.close();
});
$("register").addEventListener("click", registerTarget);
loadProfiles().then(() => { if (params.has("autostart")) start(); });
