"""Clips rendered by :mod:`detectors.synth` and run through a real detector, cached on disk.

Rendering and detection cost tens of milliseconds a frame on a small machine,
so each clip is detected once, at the base frame rate, and its detections are
cached (``~/.cache/fuscan/voting`` by default); device profiles are then
emulated by :meth:`Clip.subsample`, as for simulated clips. The cache is
keyed on what the detections depend on (:func:`detector_fingerprint`,
:func:`generator_fingerprint`), so a retrained model or a changed generator
never reuses stale detections.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

import detectors
from detectors.card import ModelCard, read_card
from detectors.core import Box, ConfirmingDetector, Detection, Detections, Detector, iou
from detectors.shared_weights import model_files
from voting.simulate import BASE_FPS, FRAME_H, FRAME_W, FU, Clip, ClipCheck, GroundTruthObject

if TYPE_CHECKING:  # imported where clips are made: the generator renders with OpenCV
    from detectors.synth.scenes import SceneOptions

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fuscan/voting"
LINK_IOU = 0.3
DETECTORS_PACKAGE = Path(detectors.__path__[0]).resolve()
GENERATOR_PACKAGE = DETECTORS_PACKAGE / "synth"
DETECTOR_CODE = tuple(
    DETECTORS_PACKAGE / name
    for name in ("onnx_detector.py", "reshape.py", "glyph_check.py", "views.py")
)
"""What turns a frame and a card into detections and checks: letterbox, decoding, the second
look, the glyph check, and the crops both take."""


def generator_fingerprint(package: Path = GENERATOR_PACKAGE) -> str:
    """Content hash of the clip generator: every file of ``detectors/synth`` (code and glyph
    bank) and, when one stands in for the photos (``FUSCAN_BACKGROUND_PACK``), the
    background pack.

    A hash rather than a version number, which someone would have to remember
    to bump: any change, even a comment, makes the cache miss, never go stale.
    The pack's photos are JPEG-compressed, so its clips differ from those drawn
    on the original files by a few grey levels, and so do their detections.
    """
    digest = hashlib.sha256()
    for path in sorted(
        p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    pack = os.environ.get(importlib.import_module("detectors.synth.backgrounds").PACK_ENV)
    if pack:
        digest.update(b"background pack")
        digest.update(Path(pack).read_bytes())
    return digest.hexdigest()[:16]


def detector_fingerprint(
    card: ModelCard, runtime: str, code: Sequence[Path] = DETECTOR_CODE
) -> str:
    """Content hash of what a shipped detector's output depends on.

    The model file's bytes (and those of the file it borrows weights from, and of its
    glyph check), the card's threshold, input and output spec, second look and glyph
    check (they live in the card, beside the file), the inference ``runtime`` (e.g.
    ``"onnxruntime 1.20.1"``: INT8 kernels may round differently) and the
    ``code`` that runs it (any change, even a comment, makes the cache miss,
    as for :func:`generator_fingerprint`).
    """
    digest = hashlib.sha256()
    glyph = [] if card.glyph_path is None else [card.glyph_path]
    for path in (*model_files(card.model_path), *glyph, *code):
        digest.update(path.read_bytes())
    spec = {
        "threshold": card.threshold,
        "input": [card.input.width, card.input.height, card.input.scale, card.input.pad_value],
        "color": card.input.color,
        "outputs": [card.heatmap_output, card.boxes_output, card.stride],
        "classes": card.classes,
        # Fields left unset (None) are left out, so adding one keeps the caches of older cards.
        "zoom": None if card.zoom is None else _set_fields(asdict(card.zoom)),
        "runtime": runtime,
    }
    if card.glyph is not None:
        spec["glyph"] = asdict(card.glyph)
    if card.zoom is not None and card.zoom.turned_min is not None:
        # Since the voter asks for it, detections are no longer filtered by the turned
        # check, and its scores are cached beside them: caches of the older meaning miss.
        spec["check"] = "turned, scored"
    digest.update(json.dumps(spec, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def _set_fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def synth_cache_name(card: ModelCard, options: SceneOptions | None = None) -> str:
    """The cache folder for rendered clips through ``card``'s model with today's generator,
    its posters changed by ``options`` (``None``: the generator's own mix)."""
    runtime = f"onnxruntime {importlib.metadata.version('onnxruntime')}"
    name = f"{card.tier}-{card.precision}-{detector_fingerprint(card, runtime)}"
    name += f"-{generator_fingerprint()}"
    changes = "" if options is None else options.changes()
    if not changes:  # the mix keeps its older caches, and options added since keep theirs
        return name
    return f"{name}-scenes-{hashlib.sha256(changes.encode()).hexdigest()[:8]}"


def detected_clip(
    detector: Callable[[], Detector],
    name: str,
    seed: int,
    content: str,
    seconds: float,
    cache: Path | None,
    options: SceneOptions | None = None,
) -> Clip:
    """The clip ``make_clip(seed, ..., content=content, options=options)`` with a detector's
    output on each frame (``options`` ``None``: the generator's own mix).

    ``detector`` is called for the detector only if the clip is not cached
    yet; ``name`` is the cache folder of that detector and generator version
    (e.g. ``"l-int8-<detector fingerprint>-<generator fingerprint>"``: see
    :func:`synth_cache_name`, which names ``options`` too). With ``cache=None``
    nothing is read or written.
    """
    n_frames = round(seconds * BASE_FPS)
    path = None if cache is None else clip_path(cache, name, content, seed, n_frames)
    if path is not None and path.exists():
        with np.load(path) as saved:
            arrays = {key: saved[key] for key in saved.files}
    else:
        arrays = _detect(detector(), _render(seed, content, n_frames, options))
        if path is not None:
            _save(path, arrays)
    return _to_clip(arrays, seed, content, n_frames)


def detect_rendered(detector: Detector, rendered: _Rendered, seed: int, content: str) -> Clip:
    """A clip rendered elsewhere (its frames at ``BASE_FPS``, ``FRAME_W x FRAME_H``, the 福
    boxes of each frame and the ink contrast of each 福) through ``detector``, uncached."""
    return _to_clip(_detect(detector, rendered), seed, content, len(rendered[0]))


def clip_path(cache: Path, name: str, content: str, seed: int, n_frames: int) -> Path:
    """Where :func:`detected_clip` keeps a clip's detections."""
    return cache / name / f"{content}-{seed}-{n_frames}.npz"


ClipSpec = tuple[str, int]
"""A clip's content kind and seed."""

_RenderWork = tuple[str, int, int, "SceneOptions | None", tuple[tuple[int, Path], ...]]
"""A clip's kind, seed, frame count and poster options, and the cards (by index) lacking it,
with the files their detections go to."""


_worker_detectors: list[Detector] = []  # each pool process loads its detectors once


def render_missing(
    cards: Sequence[ModelCard],
    specs: Sequence[ClipSpec],
    seconds: float,
    cache: Path,
    jobs: int,
    options: SceneOptions | None = None,
) -> int:
    """Render, in ``jobs`` processes, the clips of ``specs`` (posters changed by ``options``)
    not cached yet for every one of ``cards``, and detect each through the cards that lack it.

    Returns how many clips were rendered. Rendering is the slow part of a rendered-clip
    evaluation (about a second a clip a core), so this is what spreads it over cores, and a
    clip two cards lack (``eval-voting --compare``) is rendered once for both.
    """
    from tqdm import tqdm

    names = [synth_cache_name(card, options) for card in cards]
    n_frames = round(seconds * BASE_FPS)
    work: list[_RenderWork] = []
    for kind, seed in specs:
        paths = [clip_path(cache, name, kind, seed, n_frames) for name in names]
        lacking = tuple((i, path) for i, path in enumerate(paths) if not path.exists())
        if lacking:
            work.append((kind, seed, n_frames, options, lacking))
    if not work:
        return 0
    card_paths = tuple(card.path for card in cards)
    desc = "rendering " + " and ".join(f"{c.tier}-{c.precision}" for c in cards)
    with ProcessPoolExecutor(jobs, initializer=_load_workers, initargs=(card_paths,)) as pool:
        for _ in tqdm(pool.map(_render_one, work, chunksize=4), total=len(work), desc=desc):
            pass
    return len(work)


def _load_workers(card_paths: tuple[Path, ...]) -> None:
    from detectors.onnx_detector import OnnxDetector

    _worker_detectors.extend(OnnxDetector(read_card(path)) for path in card_paths)


def _render_one(work: _RenderWork) -> None:
    kind, seed, n_frames, options, lacking = work
    rendered = _render(seed, kind, n_frames, options)
    for index, path in lacking:
        _save(path, _detect(_worker_detectors[index], rendered))


_Rendered = tuple[Any, Any, Any]
"""A clip's frames, 福 boxes per frame and ink contrast per 福, as the generator makes them
(typed loosely: the generator is imported only where clips are rendered)."""


def _render(seed: int, content: str, n_frames: int, options: SceneOptions | None) -> _Rendered:
    # Imported when needed: it renders with OpenCV.
    scenes = importlib.import_module("detectors.synth.scenes")
    frames, truth, contrast = scenes.make_clip(
        seed, n_frames, BASE_FPS, FRAME_W, FRAME_H, content, options or scenes.GENERATOR_MIX
    )
    return frames, truth, contrast


def _save(path: Path, arrays: dict[str, npt.NDArray[np.generic]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    named: dict[str, Any] = dict(arrays)  # keyword names, none of them numpy's own
    np.savez_compressed(path, **named)


def _detect(detector: Detector, rendered: _Rendered) -> dict[str, npt.NDArray[np.generic]]:
    frames, truth, contrast = rendered
    det_rows: list[tuple[float, ...]] = []
    labels: list[str] = []
    checks: list[float] = []
    check_min = math.nan
    checker = detector if isinstance(detector, ConfirmingDetector) else None
    for i, frame in enumerate(frames):
        confirmer = None if checker is None else checker.confirmer(frame)
        for det in detector.detect(frame):
            det_rows.append((i, det.score, *det.box))
            labels.append(det.label)
            if confirmer is not None:  # a voter asks only now and then; asked here, every time
                checks.append(confirmer.check(det))
                check_min = confirmer.min_score
    gt_rows = [
        (i, *box, contrast[k])
        for i, boxes in enumerate(truth)
        for k, box in enumerate(boxes.tolist())
    ]
    arrays: dict[str, npt.NDArray[np.generic]] = {
        "detections": np.array(det_rows, np.float64).reshape(-1, 6),
        "labels": np.array(labels, dtype=str),
        "truth": np.array(gt_rows, np.float64).reshape(-1, 6),
    }
    if checks:
        arrays["checks"] = np.array(checks, np.float64)
        arrays["check_min"] = np.array(check_min, np.float64)
    return arrays


def _to_clip(
    arrays: dict[str, npt.NDArray[np.generic]], seed: int, content: str, n_frames: int
) -> Clip:
    per_frame: list[list[Detection]] = [[] for _ in range(n_frames)]
    scores: list[dict[Detection, float]] = [{} for _ in range(n_frames)]
    rows = arrays["detections"].tolist()
    checks = arrays["checks"].tolist() if "checks" in arrays else [math.nan] * len(rows)
    for row, label, score in zip(rows, arrays["labels"].tolist(), checks, strict=True):
        det = Detection(str(label), row[1], _box(row[2:]))
        per_frame[int(row[0])].append(det)
        scores[int(row[0])][det] = score
    detections = tuple(
        Detections(tuple(sorted(found, key=lambda d: -d.score)), frame=(FRAME_W, FRAME_H))
        for found in per_frame
    )
    truth: list[list[Box]] = [[] for _ in range(n_frames)]
    contrast: list[list[float]] = [[] for _ in range(n_frames)]
    for row in arrays["truth"].tolist():
        truth[int(row[0])].append(_box(row[1:5]))
        contrast[int(row[0])].append(row[5])
    times = np.arange(n_frames) / BASE_FPS
    objects = link_objects(truth, detections, times, contrast)
    check = None
    if "check_min" in arrays:
        check = ClipCheck(tuple(scores), float(arrays["check_min"]))
    return Clip(content, seed, times, detections, objects, np.arange(n_frames), check)


def link_objects(
    truth: list[list[Box]],
    detections: tuple[Detections, ...],
    times: npt.NDArray[np.float64],
    contrast: list[list[float]] | None = None,
) -> tuple[GroundTruthObject, ...]:
    """Chain the per-frame 福 boxes into objects by overlap, with their visits and clarity.

    A visit is a run of frames in which the object is in view; its clarity is
    the median, over those frames, of the best detection score on it (0 when
    missed), as for simulated clips. ``contrast``, beside ``truth`` box for
    box, gives each object its ink contrast (the median of its boxes').
    """
    n = len(truth)
    tracks: list[npt.NDArray[np.float64]] = []
    contrasts: list[list[float]] = []
    last: list[Box] = []
    for i, in_view in enumerate(truth):
        free = set(range(len(tracks)))
        for b, box in enumerate(in_view):
            best = max(free, key=lambda k: iou(last[k], box), default=None)
            if best is None or iou(last[best], box) < LINK_IOU:
                tracks.append(np.full((n, 4), np.nan))
                contrasts.append([])
                last.append(box)
                best = len(tracks) - 1
            else:
                free.discard(best)
            tracks[best][i] = box
            last[best] = box
            if contrast is not None:
                contrasts[best].append(contrast[i][b])
    objects = []
    for oid, (boxes, seen) in enumerate(zip(tracks, contrasts, strict=True), start=1):
        present = ~np.isnan(boxes[:, 0])
        visits, clarity = [], []
        edges = np.flatnonzero(np.diff(np.concatenate([[0], present.astype(int), [0]])))
        for start, end in zip(edges[::2], edges[1::2], strict=True):
            visits.append((float(times[start]), float(times[end - 1]) + 1 / BASE_FPS))
            scores = [_best_score(detections[i], boxes[i]) for i in range(start, end)]
            clarity.append(float(np.median(scores)))
        ink = float(np.median(seen)) if seen else math.nan
        objects.append(GroundTruthObject(oid, FU, boxes, tuple(visits), tuple(clarity), ink))
    return tuple(objects)


def _best_score(dets: Detections, truth: npt.NDArray[np.float64]) -> float:
    box = _box(truth.tolist())
    return max((d.score for d in dets if iou(d.box, box) >= LINK_IOU), default=0.0)


def _box(values: list[float]) -> Box:
    return (values[0], values[1], values[2], values[3])
