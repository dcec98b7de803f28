"""``python run.py eval-voting``: labelled clips through voting, one row per preset and frame rate.

Clips come from the detector noise model of :mod:`voting.simulate` (many seeds,
hours of negative video in minutes) or, with ``--source synth``, from
:mod:`detectors.synth` through the shipped detector (:mod:`evals.voting.rendered`,
cached). Each clip's detections are computed once and devices are emulated
by subsampling frames in time, so every preset and every frame rate sees the
same timeline.

Metrics (see docs/voting.md):

- event precision: first ``recognized`` of a 福's visit / all ``recognized``
  (a re-recognition of an object still in view counts against it);
- event recall: visits of 福 in clear view for at least ``--min-view`` seconds
  that got a ``recognized``; "clear" is the detector's median score on the
  visit, so beside it ``whole``: visits whose 福 is whole in the frame for
  ``--min-view`` seconds, whatever the detector makes of it, and ``visible``:
  those of them whose ink stands out from what is around it
  (``--visible-contrast``, :func:`detectors.synth.scenes.ink_contrast`);
- false recognitions per hour of negative video (look-alikes and clutter);
- median and p95 delay from the first clear view to ``recognized``;
- box jitter: RMS frame-to-frame change of the reported box's error, in % of
  the box size, and the mean error itself (smoothing must not buy calm with lag);
- beside precision and the false rate, the one-sided 95 % bounds their counts
  allow (few events prove little);
- how often the voter asked the detector's check (``checks/h``, per hour of
  all video), for rendered clips through a card that offers one.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from detectors.card import MODELS_DIR, ModelCard, ModelCardError, find_card
from detectors.core import Box, Detector, iou, touches_edge
from detectors.synth.scenes import add_scene_arguments, scene_options
from evals.voting.rendered import DEFAULT_CACHE, ClipSpec, render_missing
from stream.cli_types import UsageError
from voting.core import VoteEvent, Voter, VoteUpdate
from voting.evidence import ScoreModel
from voting.presets import BASELINE, PRESETS, make_config, make_voter
from voting.simulate import BASE_FPS, FRAME_H, FRAME_W, FU, Clip, NoiseModel, make_sim_clip
from voting.tracker import IouTracker

if TYPE_CHECKING:  # the generator is imported where clips are rendered (it needs OpenCV)
    from detectors.synth.scenes import SceneOptions

MATCH_IOU = 0.3
LLR_CAP = 3.0
"""Largest evidence one frame may carry in a fitted score model."""
VISIBLE_CONTRAST = 10.0
"""Ink contrast (CIE76 ΔE*ab) from which a rendered 福 counts as plainly visible: beyond the
differences that are only "perceptible at a glance" (up to about 10; 2.3 is the least a
person notices), as a red 福 printed on a red cup is not. Chosen before measuring with it."""
CONTRAST_BANDS = (5.0, 10.0, 20.0, 40.0)
"""Band edges of ``--list-misses``' recall per ink contrast..."""
HEIGHT_BANDS = (100.0, 150.0, 200.0, 250.0, 300.0)
"""...and per height of the 福, in pixels of the 640x480 frame."""
SIM_NEGATIVE_SECONDS = 20.0
CALIBRATION_SEED = 1_000_000
"""Calibration clips use seeds from here up, disjoint from the evaluation seeds."""


VisitKey = tuple[str, int, int, int]
"""A visit of a clip's object: clip kind, seed, object id, visit index."""


@dataclass(frozen=True, slots=True)
class WholeVisit:
    """A visit whole in frame for ``min_view`` seconds: how it looked, and whether the voter
    recognized it."""

    contrast: float
    """The object's ink contrast (NaN: not rendered)."""
    height: float
    """Pixels, of the object's box in the visit's middle frame."""
    recognized: bool


@dataclass(frozen=True, slots=True)
class MissedVisit:
    """A visit whole in frame for ``min_view`` seconds that the voter never recognized."""

    kind: str
    seed: int
    object_id: int
    start: float
    end: float
    clarity: float
    """The detector's median score on the visit (0: missed on most of its frames)."""
    height: float
    """Pixels, of the object's box in the visit's middle frame."""
    detected: int
    frames: int
    """Frames of the visit the voter saw, and on how many the detector found the object."""
    contrast: float
    """The object's ink contrast (NaN: not rendered)."""

    def describe(self) -> str:
        return (
            f"{self.kind}-{self.seed} object {self.object_id}: {self.start:.2f}-{self.end:.2f} s, "
            f"detected on {self.detected} of {self.frames} frames, "
            f"median score {self.clarity:.2f}, {self.height:.0f} px high"
            + ("" if math.isnan(self.contrast) else f", ink contrast {self.contrast:.1f}")
        )


@dataclass(frozen=True, slots=True)
class WrongRecognition:
    """A ``recognized`` that counts against precision (it matches no 福, or repeats one
    already recognized in the visit), and what its track showed the voter up to it."""

    kind: str
    seed: int
    t: float
    box: Box | None
    """The box the event reported (``None``: the voter gave none)."""
    scores: tuple[float, ...]
    """The detector's score on each frame the track was found on, up to the recognition."""
    frames: int
    """Frames the voter saw from the track's first detection to the recognition."""

    def describe(self) -> str:
        where = f"{self.kind}-{self.seed} at {self.t:.2f} s"
        if self.box is None:
            return where
        x0, y0, x1, y1 = self.box
        cut = ", cut by the frame's edge" if touches_edge(self.box, (FRAME_W, FRAME_H)) else ""
        found = f"found on {len(self.scores)} of {self.frames} frames"
        if self.scores:
            low, high, median = min(self.scores), max(self.scores), np.median(self.scores)
            found += f" at {low:.2f}-{high:.2f} (median {median:.2f})"
        return f"{where}: {x1 - x0:.0f}x{y1 - y0:.0f} px at ({x0:.0f}, {y0:.0f}){cut}, {found}"


@dataclass(slots=True)
class Tally:
    """Counts and samples of one voter at one frame rate, summed over clips."""

    recognized: int = 0
    true: int = 0
    false_in_negative: int = 0
    negative_seconds: float = 0.0
    visits: int = 0
    covered: int = 0
    hard_visits: int = 0
    hard_covered: int = 0
    whole_seen: list[WholeVisit] = field(default_factory=list)
    """Every visit whole in frame for ``min_view`` seconds, whatever its clarity."""
    visible_contrast: float = VISIBLE_CONTRAST
    """The ink contrast from which a visit whole in frame counts as plainly visible."""
    missed_whole: list[MissedVisit] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    jitter_sq: float = 0.0
    jitter_n: int = 0
    error_sum: float = 0.0
    error_n: int = 0
    checks: int = 0
    """Times the voter asked the detector's check (:class:`detectors.core.Confirmer`)."""
    decided: dict[VisitKey, float] = field(default_factory=dict)
    """Seconds from the start of each recognized visit to its recognition, clear or not; a
    later recognition of a visit already here is a repeat."""
    wrong: list[WrongRecognition] = field(default_factory=list)
    """Each recognition that matches no 福."""
    repeats: list[WrongRecognition] = field(default_factory=list)
    """Each recognition of a 福 already recognized in the same visit (its track split, or
    lost and found again while in view): it counts against precision too."""
    seconds: float = 0.0
    """Video seen, positive and negative."""

    @property
    def repeated(self) -> int:
        return len(self.repeats)

    @property
    def precision(self) -> float:
        return self.true / self.recognized if self.recognized else math.nan

    @property
    def precision_low(self) -> float:
        """One-sided 95 % lower bound on precision (Clopper-Pearson): few events prove little."""
        if not self.recognized:
            return math.nan
        return 1 - binomial_upper(self.recognized - self.true, self.recognized)

    @property
    def recall(self) -> float:
        return self.covered / self.visits if self.visits else math.nan

    @property
    def recall_hard(self) -> float:
        return self.hard_covered / self.hard_visits if self.hard_visits else math.nan

    @property
    def whole_visits(self) -> int:
        return len(self.whole_seen)

    @property
    def whole_covered(self) -> int:
        return sum(v.recognized for v in self.whole_seen)

    @property
    def visible_visits(self) -> int:
        return sum(v.contrast >= self.visible_contrast for v in self.whole_seen)

    @property
    def visible_covered(self) -> int:
        return sum(v.recognized and v.contrast >= self.visible_contrast for v in self.whole_seen)

    @property
    def recall_whole(self) -> float:
        return self.whole_covered / self.whole_visits if self.whole_visits else math.nan

    @property
    def recall_visible(self) -> float:
        return self.visible_covered / self.visible_visits if self.visible_visits else math.nan

    def whole_by(
        self, measure: Callable[[WholeVisit], float], edges: Sequence[float]
    ) -> list[tuple[float, float, int, int]]:
        """Visits whole in frame per band of ``measure`` (e.g. the ink contrast) between
        ``edges`` (from 0, the last open-ended): ``(low, high, visits, recognized)``; visits
        it cannot measure (NaN) left out."""
        bounds = [0.0, *edges, math.inf]
        values = [(measure(v), v.recognized) for v in self.whole_seen]
        return [
            (
                low,
                high,
                sum(low <= value < high for value, _ in values),
                sum(low <= value < high and hit for value, hit in values),
            )
            for low, high in itertools.pairwise(bounds)
        ]

    @property
    def false_per_hour(self) -> float:
        hours = self.negative_seconds / 3600
        return self.false_in_negative / hours if hours else math.nan

    @property
    def false_per_hour_high(self) -> float:
        """One-sided 95 % upper bound on false recognitions per hour (Poisson)."""
        hours = self.negative_seconds / 3600
        return poisson_upper(self.false_in_negative) / hours if hours else math.nan

    @property
    def checks_per_hour(self) -> float:
        return 3600 * self.checks / self.seconds if self.seconds else math.nan

    def delay(self, q: float) -> float:
        return float(np.quantile(self.delays, q)) if self.delays else math.nan

    @property
    def jitter(self) -> float:
        return 100 * math.sqrt(self.jitter_sq / self.jitter_n) if self.jitter_n else math.nan

    @property
    def error(self) -> float:
        return 100 * self.error_sum / self.error_n if self.error_n else math.nan


def binomial_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """Clopper-Pearson upper bound on a probability seen ``k`` times in ``n`` trials.

    For ``k = 0`` it is ``1 - (1 - confidence) ** (1 / n)``, about ``3 / n`` (rule of three).
    """
    if k >= n:
        return 1.0
    return _solve_decreasing(lambda p: _binomial_cdf(k, n, p), 1 - confidence, 0.0, 1.0)


def poisson_upper(k: int, confidence: float = 0.95) -> float:
    """Upper bound on the mean of a Poisson count seen to be ``k`` (3.0 for ``k = 0``)."""
    return _solve_decreasing(lambda mu: _poisson_cdf(k, mu), 1 - confidence, 0.0, 10.0 + 3 * k)


def _binomial_cdf(k: int, n: int, p: float) -> float:  # 0 < p < 1: bisection never ends there
    return sum(
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * math.log(p)
            + (n - i) * math.log1p(-p)
        )
        for i in range(k + 1)
    )


def _poisson_cdf(k: int, mu: float) -> float:  # mu > 0, as for the binomial
    return sum(math.exp(i * math.log(mu) - mu - math.lgamma(i + 1)) for i in range(k + 1))


def _solve_decreasing(f: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """``x`` in ``[lo, hi]`` with ``f(x) = target`` for a decreasing ``f``, by bisection."""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > target else (lo, mid)
    return (lo + hi) / 2


def run_clip(voter: Voter, clip: Clip, tally: Tally | None = None) -> list[VoteUpdate]:
    """``voter``'s output on each frame of ``clip``; the checks it asked for go to ``tally``."""
    updates = []
    for i, (dets, t) in enumerate(zip(clip.detections, clip.times, strict=True)):
        confirm = clip.confirmer(i)
        updates.append(voter.update(dets, float(t), confirm))
        if tally is not None and confirm is not None:
            tally.checks += round(confirm.runs)
    return updates


def score_clip(
    clip: Clip, updates: Sequence[VoteUpdate], tally: Tally, min_view: float, clear: float
) -> None:
    """Add what ``updates`` (a voter's output on ``clip``) did right and wrong to ``tally``.

    Visits of at least ``min_view`` seconds count for recall: those of
    clarity ``clear`` or more in ``visits``/``covered``, the others in
    ``hard_visits``/``hard_covered``; those whole in the frame for
    ``min_view`` seconds, whatever their clarity, in ``whole_seen`` too.
    Delays are of the clear visits only.
    """
    for n, (update, i) in enumerate(zip(updates, clip.frame_index, strict=True)):
        for event in update.events:
            if event.event == "recognized":
                _score_recognition(clip, event, int(i), tally, updates, n)
    tally.seconds += clip.duration
    if clip.kind in ("negative", "empty"):
        tally.negative_seconds += clip.duration
    for index, obj in enumerate(clip.objects):
        if obj.label != FU:
            continue
        for v, ((start, end), clarity) in enumerate(zip(obj.visits, obj.clarity, strict=True)):
            if end - start < min_view:
                continue
            delay = tally.decided.get((clip.kind, clip.seed, obj.id, v))
            if whole_in_frame(obj.boxes, (start, end), min_view):
                height = _visit_height(obj.boxes, (start, end))
                whole = WholeVisit(obj.contrast, height, delay is not None)
                tally.whole_seen.append(whole)
                if delay is None:
                    tally.missed_whole.append(_missed(clip, index, (start, end), clarity, whole))
            if clarity < clear:
                tally.hard_visits += 1
                tally.hard_covered += delay is not None
                continue
            tally.visits += 1
            if delay is not None:
                tally.covered += 1
                tally.delays.append(delay)
    _score_boxes(clip, updates, tally)


def whole_in_frame(
    boxes: npt.NDArray[np.float64], visit: tuple[float, float], min_view: float
) -> bool:
    """Whether ``boxes`` (one row a base frame, NaN when absent) stay whole in the frame
    (no edge touched: :func:`touches_edge`) for ``min_view`` seconds in a row during ``visit``."""
    rows = boxes[round(visit[0] * BASE_FPS) : round(visit[1] * BASE_FPS)]
    longest = run = 0
    for row in rows.tolist():
        box = (row[0], row[1], row[2], row[3])
        inside = not np.isnan(row[0]) and not touches_edge(box, (FRAME_W, FRAME_H))
        run = run + 1 if inside else 0
        longest = max(longest, run)
    return longest >= round(min_view * BASE_FPS)


def _visit_height(boxes: npt.NDArray[np.float64], visit: tuple[float, float]) -> float:
    """Pixels, of the box in the visit's middle frame."""
    _, top, _, bottom = boxes[round((visit[0] + visit[1]) / 2 * BASE_FPS)]
    return float(bottom - top)


def _missed(
    clip: Clip, index: int, visit: tuple[float, float], clarity: float, whole: WholeVisit
) -> MissedVisit:
    obj = clip.objects[index]
    seen = [
        (dets, int(i))
        for t, dets, i in zip(clip.times, clip.detections, clip.frame_index, strict=True)
        if visit[0] <= t < visit[1]
    ]
    detected = sum(any(_matching_object(clip, d.box, i) == index for d in dets) for dets, i in seen)
    return MissedVisit(
        clip.kind,
        clip.seed,
        obj.id,
        *visit,
        clarity,
        whole.height,
        detected,
        len(seen),
        whole.contrast,
    )


def _score_recognition(
    clip: Clip, event: VoteEvent, i: int, tally: Tally, updates: Sequence[VoteUpdate], n: int
) -> None:
    """Count ``event``, made at base frame ``i`` in the voter's ``n``-th update."""
    tally.recognized += 1
    obj = _matching_object(clip, event.box, i)
    if obj is None or clip.objects[obj].label != FU:
        tally.false_in_negative += clip.kind in ("negative", "empty")
        tally.wrong.append(_against_precision(clip, event, updates[: n + 1]))
        return
    visits = clip.objects[obj].visits
    v = min(range(len(visits)), key=lambda k: _distance_to_span(event.t, visits[k]))
    key = (clip.kind, clip.seed, clip.objects[obj].id, v)
    if key in tally.decided:
        tally.repeats.append(_against_precision(clip, event, updates[: n + 1]))
        return
    tally.decided[key] = event.t - visits[v][0]
    tally.true += 1


def _against_precision(
    clip: Clip, event: VoteEvent, so_far: Sequence[VoteUpdate]
) -> WrongRecognition:
    found = [[d.score for d in update.detections if d.track == event.track] for update in so_far]
    first = next((n for n, scores in enumerate(found) if scores), len(found))
    scores = tuple(s for frame in found[first:] for s in frame)
    return WrongRecognition(clip.kind, clip.seed, event.t, event.box, scores, len(found) - first)


def _distance_to_span(t: float, span: tuple[float, float]) -> float:
    return max(span[0] - t, 0.0, t - span[1])


def _matching_object(clip: Clip, box: Box | None, i: int) -> int | None:
    """Index of the object whose true box at base frame ``i`` overlaps ``box`` most, if enough."""
    if box is None:
        return None
    best, best_iou = None, MATCH_IOU
    for k, obj in enumerate(clip.objects):
        truth = obj.boxes[i]
        if not np.isnan(truth[0]):
            overlap = iou(box, (truth[0], truth[1], truth[2], truth[3]))
            if overlap >= best_iou:
                best, best_iou = k, overlap
    return best


def _score_boxes(clip: Clip, updates: Sequence[VoteUpdate], tally: Tally) -> None:
    """Box error and jitter of the reported boxes of tracks on real 福, relative to box size."""
    previous: dict[int, np.ndarray] = {}
    for update, i in zip(updates, clip.frame_index, strict=True):
        current: dict[int, np.ndarray] = {}
        for det in update.detections:
            obj = _matching_object(clip, det.box, int(i))
            if obj is None or clip.objects[obj].label != FU:
                continue
            truth = clip.objects[obj].boxes[i]
            size = (truth[2] - truth[0] + truth[3] - truth[1]) / 2
            error = (np.asarray(det.box) - truth) / size
            current[det.track] = error
            tally.error_sum += float(np.mean(np.abs(error)))
            tally.error_n += 1
            if det.track in previous:
                tally.jitter_sq += float(np.mean((error - previous[det.track]) ** 2))
                tally.jitter_n += 1
        previous = current


@dataclass(slots=True)
class TrackRecord:
    """What one track saw, for calibration."""

    obj: int | None  # index of the 福 it follows, None for a false track
    scores: list[float] = field(default_factory=list)
    frames: int = 0


def track_records(clips: Iterable[Clip], tracker: Callable[[], IouTracker]) -> list[TrackRecord]:
    """Track each clip as the voter would and record every track's scores and length.

    A track is real when its first box matches a 福; its frames count while
    that 福 is in view. Every other track is false for all its frames.
    """
    records: list[TrackRecord] = []
    for clip in clips:
        tracks = tracker()
        by_id: dict[int, TrackRecord] = {}
        for dets, t, i in zip(clip.detections, clip.times, clip.frame_index, strict=True):
            pairs = tracks.associate(list(dets), float(t))
            for track, det in pairs:
                if track.id not in by_id:
                    obj = _matching_object(clip, det.box, int(i))
                    real = obj is not None and clip.objects[obj].label == FU
                    by_id[track.id] = TrackRecord(obj if real else None)
                    records.append(by_id[track.id])
            scores = {track.id: det.score for track, det in pairs}
            for track in tracks.tracks:
                record = by_id[track.id]
                if record.obj is not None and np.isnan(clip.objects[record.obj].boxes[i][0]):
                    continue  # the 福 has left: what follows says nothing about H1
                record.frames += 1
                if track.id in scores:
                    record.scores.append(scores[track.id])
            tracks.expire(float(t))
    return records


def calibrate(records: Sequence[TrackRecord], cap: float, by: str = "frame") -> ScoreModel:
    """Fit a :class:`ScoreModel` to what real and false tracks saw.

    ``by="frame"`` histograms every frame's score (Wald's i.i.d. model).
    ``by="track"`` histograms each track's median score, one sample per
    track: a detector's errors persist on a track (a look-alike scores about
    the same for seconds), so what a score says is how often real and false
    tracks sit at that level, not how many frames do. The miss LLR comes from
    frames in both cases.
    """
    real = [r for r in records if r.obj is not None]
    false = [r for r in records if r.obj is None]
    edges = [round(0.3 + 0.05 * k, 2) for k in range(1, 14)]
    per_frame = ScoreModel.fit(
        [s for r in real for s in r.scores],
        sum(r.frames for r in real),
        [s for r in false for s in r.scores],
        sum(r.frames for r in false),
        edges,
        cap,
    )
    if by == "frame":
        return per_frame
    real_levels = [float(np.median(r.scores)) for r in real if r.scores]
    false_levels = [float(np.median(r.scores)) for r in false if r.scores]
    levels = ScoreModel.fit(
        real_levels, len(real_levels), false_levels, len(false_levels), edges, cap
    )
    return ScoreModel(levels.edges, levels.llrs, per_frame.miss_llr)


ClipSource = Callable[[str, int], Clip]
"""Makes the clip of a kind ("fu", "mixed", "negative", "empty") and a seed."""


def clip_specs(seeds: range, negative_seconds: float, length: float) -> list[ClipSpec]:
    """Positive clips (4 ``fu`` to 1 ``mixed``) for ``seeds``, then negative ones.

    Negatives (3 ``negative`` to 1 ``empty``, ``length`` seconds each) add up
    to about ``negative_seconds``; they reuse the seeds from ``seeds.start``.
    """
    specs = [("mixed" if s % 5 == 0 else "fu", s) for s in seeds]
    n_negative = max(1, round(negative_seconds / length))
    start = seeds.start
    specs += [("negative" if s % 4 else "empty", s) for s in range(start, start + n_negative)]
    return specs


def make_clips(source: ClipSource, specs: Sequence[ClipSpec]) -> list[Clip]:
    return [source(kind, seed) for kind, seed in specs]


def sim_source(noise: NoiseModel) -> tuple[ClipSource, float]:
    """Clips from the detector noise model, and the length of its negative clips."""
    return (lambda kind, seed: make_sim_clip(seed, kind, noise)), SIM_NEGATIVE_SECONDS


def synth_source(
    card: ModelCard, seconds: float, cache: Path | None, options: SceneOptions | None = None
) -> ClipSource:
    """Rendered clips (:mod:`detectors.synth`, posters changed by ``options``) through the
    model of ``card``."""
    from detectors.onnx_detector import OnnxDetector
    from evals.voting.rendered import detected_clip, synth_cache_name

    loaded: list[Detector] = []

    def detector() -> Detector:  # loaded on the first clip not in the cache
        if not loaded:
            loaded.append(OnnxDetector(card))
        return loaded[0]

    name = synth_cache_name(card, options)
    return lambda kind, seed: detected_clip(detector, name, seed, kind, seconds, cache, options)


def real_source(card: ModelCard, seconds: float, real_dir: Path) -> ClipSource:
    """Clips of the real pictures in ``real_dir`` (``pos/``, ``neg/``) held up to a camera
    (:func:`evals.real_scenes.scene_clip`), through the model of ``card``; not cached.

    Raises:
        evals.real_scenes.RealSetError: ``real_dir`` is not a set of pictures.
    """
    from detectors.onnx_detector import OnnxDetector
    from evals.real_scenes import load_set, scene_clip
    from evals.voting.rendered import detect_rendered

    images = load_set(real_dir)
    detector = OnnxDetector(card)
    n_frames = round(seconds * BASE_FPS)

    def clip(kind: str, seed: int) -> Clip:
        made = scene_clip(images, kind, seed, n_frames, BASE_FPS, (FRAME_W, FRAME_H))
        contrast = (math.nan,)  # a photo's ink contrast is not known
        return detect_rendered(detector, (made, made.boxes, contrast), seed, kind)

    return clip


def parse_noise(spec: str) -> NoiseModel:
    """``"slow_sigma=0.6,negative_logit=-2"``: a :class:`NoiseModel` with those fields changed.

    Raises:
        ValueError: an unknown field or a value that is not a number.
    """
    known = {f.name for f in dataclasses.fields(NoiseModel)}
    fields: dict[str, float] = {}
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        if key not in known:
            raise ValueError(f"unknown noise model field {key!r}; have {sorted(known)}")
        fields[key] = float(value)
    return NoiseModel(**fields)


def parse_voters(
    spec: str,
    overrides: dict[str, Any],
    detector_threshold: float | None = None,
    model_fields: dict[str, Any] | None = None,
) -> dict[str, Callable[[], Voter]]:
    """``"balanced,kofn:k=8:n=10,balanced:confirm=false"``: presets, each with optional
    ``:field=value`` overrides.

    ``overrides`` (the fitted score model) go to the sequential presets only;
    ``detector_threshold`` and ``model_fields`` (the card's ``vote``) go to
    :func:`make_voter`, as sessions give them.

    Raises:
        ValueError: an unknown preset or field, or a value that is not a number.
    """
    voters: dict[str, Callable[[], Voter]] = {}
    for item in filter(None, spec.split(",")):
        name, *fields = item.split(":")
        own: dict[str, Any] = {} if name == BASELINE else dict(overrides)
        own.update(parse_fields(fields))
        voters[item] = functools.partial(
            make_voter, name, detector_threshold, (), model_fields, **own
        )
        voters[item]()  # fail now, not half-way through
    return voters


def parse_fields(items: Iterable[str]) -> dict[str, bool | int | float]:
    """``["confirm=false", "k=8", "alpha=0.01"]`` as voting options: ``true``/``false``,
    integers and numbers.

    Raises:
        ValueError: an item is not ``field=value``, or its value is none of these.
    """
    fields: dict[str, bool | int | float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"voting option {item!r} is not field=value")
        if text in ("true", "false"):
            fields[key] = text == "true"
        else:
            fields[key] = int(text) if text.isdigit() else float(text)
    return fields


def evaluate(
    clips: Sequence[Clip],
    voters: dict[str, Callable[[], Voter]],
    rates: Sequence[float],
    min_view: float,
    clear: float,
    visible: float = VISIBLE_CONTRAST,
) -> dict[tuple[str, float], Tally]:
    tallies: dict[tuple[str, float], Tally] = {}
    for fps in rates:
        sampled = [clip.subsample(fps) for clip in clips]
        for name, factory in voters.items():
            tally = tallies[(name, fps)] = Tally(visible_contrast=visible)
            for clip in sampled:
                score_clip(clip, run_clip(factory(), clip, tally), tally, min_view, clear)
    return tallies


def format_table(tallies: dict[tuple[str, float], Tally]) -> str:
    width = max([10, *(len(name) for name, _ in tallies)])
    header = (
        f"{'voter':<{width}} {'fps':>4} {'events':>6} {'precision':>9} {'>= (95%)':>8} "
        f"{'recall':>7} {'hard':>6} {'whole':>6} {'visible':>7} {'false/h':>7} {'<= (95%)':>8} "
        f"{'repeat':>6} "
        f"{'median s':>8} {'p95 s':>6} {'jitter %':>8} {'err %':>6} {'checks/h':>8}"
    )
    lines = [header, "-" * len(header)]
    for (name, fps), t in tallies.items():
        lines.append(
            f"{name:<{width}} {fps:>4g} {t.recognized:>6} {_pct(t.precision, 2):>9} "
            f"{_pct(t.precision_low, 2):>8} {_pct(t.recall, 1):>7} {_pct(t.recall_hard, 0):>6} "
            f"{_pct(t.recall_whole, 1):>6} {_pct(t.recall_visible, 1):>7} "
            f"{t.false_per_hour:>7.2f} {t.false_per_hour_high:>8.2f} {t.repeated:>6} "
            f"{t.delay(0.5):>8.2f} {t.delay(0.95):>6.2f} {t.jitter:>8.2f} {t.error:>6.2f} "
            f"{t.checks_per_hour:>8.0f}"
        )
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Paired:
    """Two detectors' recognitions of the same clips by one voter, visit by visit.

    Unlike their tables, which average over each one's own clear visits (which
    visits count as clear depends on the detector), this compares like with like.
    """

    same: int
    earlier: list[float]
    """Seconds by which the second decided sooner, for each visit both recognized."""
    later: list[float]
    gained: list[VisitKey]
    """Visits only the second recognized; ``lost``: only the first."""
    lost: list[VisitKey]
    wrong: tuple[list[WrongRecognition], list[WrongRecognition]]
    repeats: tuple[list[WrongRecognition], list[WrongRecognition]]


def pair(first: Tally, second: Tally) -> Paired:
    """How ``second``'s recognitions of the same clips differ from ``first``'s."""
    both = first.decided.keys() & second.decided.keys()
    shifts = [first.decided[k] - second.decided[k] for k in sorted(both)]
    return Paired(
        same=sum(abs(d) < 1e-9 for d in shifts),
        earlier=[d for d in shifts if d >= 1e-9],
        later=[-d for d in shifts if d <= -1e-9],
        gained=sorted(second.decided.keys() - first.decided.keys()),
        lost=sorted(first.decided.keys() - second.decided.keys()),
        wrong=(first.wrong, second.wrong),
        repeats=(first.repeats, second.repeats),
    )


def format_pairs(pairs: dict[tuple[str, float], Paired], names: tuple[str, str]) -> str:
    """A table of :func:`pair` per voter and frame rate, then the visits that differ and
    each arm's wrong recognitions and repeats."""
    width = max([10, *(len(name) for name, _ in pairs)])
    header = (
        f"{'voter':<{width}} {'fps':>4} {'same':>5} {'earlier':>7} {'by s':>5} {'later':>5} "
        f"{'by s':>5} {'gained':>6} {'lost':>5} {'wrong':>9}"
    )
    lines = [f"{names[1]} against {names[0]}, the same clips:", header, "-" * len(header)]
    notes = []
    for (name, fps), p in pairs.items():
        lines.append(
            f"{name:<{width}} {fps:>4g} {p.same:>5} {len(p.earlier):>7} {_median(p.earlier):>5} "
            f"{len(p.later):>5} {_median(p.later):>5} {len(p.gained):>6} {len(p.lost):>5} "
            f"{f'{len(p.wrong[0])} -> {len(p.wrong[1])}':>9}"
        )
        notes += [f"  {name} {fps:g} fps gained {_visit(k)}" for k in p.gained]
        notes += [f"  {name} {fps:g} fps lost {_visit(k)}" for k in p.lost]
        for what, arms in (("wrong", p.wrong), ("repeat", p.repeats)):
            for arm, listed in zip(names, arms, strict=True):
                notes += [
                    f"  {name} {fps:g} fps {what} through {arm}: {w.describe()}" for w in listed
                ]
    return "\n".join([*lines, *notes])


def _median(values: list[float]) -> str:
    return f"{float(np.median(values)):.2f}" if values else "-"


def _visit(key: VisitKey) -> str:
    kind, seed, obj, visit = key
    return f"{kind}-{seed} object {obj} visit {visit + 1}"


def _pct(value: float, digits: int) -> str:
    """A share in percent; "-" where nothing was there to count (e.g. no ink measured)."""
    return "-" if math.isnan(value) else f"{100 * value:.{digits}f}%"


def misses_report(tallies: dict[tuple[str, float], Tally], min_view: float) -> str:
    """What ``--list-misses`` prints of the first voter and rate: the visits whole in frame it
    never recognized, recall per band of ink contrast and of height, its wrong recognitions
    and its repeats."""
    (name, fps), first = next(iter(tallies.items()))
    lines = [
        f"\n{len(first.missed_whole)} of {first.whole_visits} visits whole in frame for "
        f"{min_view:g} s that {name} at {fps:g} fps never recognized:",
        *(f"  {miss.describe()}" for miss in first.missed_whole),
    ]
    for what, measure, edges in (
        ("ink contrast (CIE76 delta E)", attrgetter("contrast"), CONTRAST_BANDS),
        ("height (px)", attrgetter("height"), HEIGHT_BANDS),
    ):
        bands = first.whole_by(measure, edges)
        if any(visits for _, _, visits, _ in bands):
            lines.append(f"\nvisits whole in frame per band of {what}:")
            lines += [
                f"  {low:>4g}-{high:<4g} {hit:>5} of {visits:>5} recognized"
                for low, high, visits, hit in bands
            ]
    for header, listed in (
        (
            f"{len(first.wrong)} of {first.recognized} recognitions by {name} at {fps:g} fps "
            "matched no 福:",
            first.wrong,
        ),
        (f"{first.repeated} recognized again in a visit already recognized:", first.repeats),
    ):
        lines.append(f"\n{header}")
        lines += [f"  {record.describe()}" for record in listed]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        choices=["sim", "synth", "real"],
        default="sim",
        help="the detector noise model, or rendered clips through the real detector (cached), "
        "or real pictures held up to a camera (--real-dir) through the real detector",
    )
    parser.add_argument("--clips", type=int, default=1000, help="positive clips (fu and mixed)")
    parser.add_argument(
        "--negative-hours", type=float, default=1.0, help="hours of video without 福 (%(default)s)"
    )
    parser.add_argument("--fps", default="30,15,8", help="device frame rates, comma-separated")
    parser.add_argument(
        "--voters",
        default=",".join([*PRESETS, BASELINE]),
        help="presets to compare, each with optional overrides: balanced,kofn:k=8:n=10",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed of the evaluation clips")
    parser.add_argument("--min-view", type=float, default=1.0, help="seconds of clear view")
    parser.add_argument(
        "--clear",
        type=float,
        default=0.75,
        help="a visit is clear when the detector's median score on it is at least this",
    )
    parser.add_argument(
        "--score-model",
        choices=["card", "fixed", "fit-frame", "fit-track"],
        default="card",
        help="what sessions use: the built-in curve moved to the model card's threshold "
        "(--source synth; the curve itself for sim); 'fixed': the curve as tuned for "
        "threshold 0.6; or one fitted on calibration clips (other seeds) per frame or per "
        "track (see calibrate)",
    )
    parser.add_argument(
        "--calibration-clips",
        type=int,
        default=300,
        help="clips a fitted --score-model is fitted on (default: %(default)s)",
    )
    parser.add_argument(
        "--noise",
        default="",
        help="NoiseModel fields for --source sim, e.g. slow_sigma=0.6,negative_logit=-2",
    )
    parser.add_argument(
        "--list-misses",
        action="store_true",
        help="after the table, the visits whole in frame that the first voter at the first "
        "frame rate never recognized (clip kind-seed, object, seconds, median score, height, "
        "ink contrast), its recall of them per band of ink contrast and height, its wrong "
        "recognitions (clip kind-seed, seconds, box, the scores of its track up to then) and "
        "its repeats (a 福 recognized again in one visit) the same way; with --compare, "
        "after each model's table",
    )
    parser.add_argument(
        "--visible-contrast",
        type=float,
        default=VISIBLE_CONTRAST,
        help="ink contrast (CIE76 delta E) from which a rendered 福 whole in frame counts as "
        "plainly visible, for the 'visible' column (default %(default)s)",
    )
    synth = parser.add_argument_group("rendered clips (--source synth or real)")
    synth.add_argument(
        "--real-dir",
        type=Path,
        metavar="DIR",
        help="--source real: pictures of 福 in DIR/pos, of other characters in DIR/neg "
        "(see run.py eval-real); a clip of 4 s renders and runs in seconds: pass few "
        "--clips and --negative-hours",
    )
    synth.add_argument("--tier", default="s", help="model tier (default: %(default)s)")
    synth.add_argument(
        "--precision",
        default="int8",
        choices=["int8", "fp32"],
        help="model precision (default: %(default)s)",
    )
    synth.add_argument("--seconds", type=float, default=4.0, help="length of each clip")
    synth.add_argument("--cache", default=str(DEFAULT_CACHE), help="detections cache; '' for none")
    synth.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="where the cards are")
    synth.add_argument(
        "--jobs", type=int, default=1, help="processes that render clips missing from the cache"
    )
    synth.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="also run the same clips through the cards in DIR (the same tier and precision) "
        "and compare the two visit by visit: recognitions made sooner or later, visits "
        "gained or lost, wrong recognitions and repeats of each (with --jobs 2 or more, "
        "each clip is rendered once for both)",
    )
    add_scene_arguments(parser, clips=True)  # for --source synth


def run(args: argparse.Namespace) -> int:
    try:
        rates = [float(v) for v in args.fps.split(",")]
        parse_voters(args.voters, {})
        noise = parse_noise(args.noise)
        options = scene_options(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    card = None  # the noise model has no card
    cache = Path(args.cache) if args.cache else None
    changes = options.changes()
    if args.source == "sim":
        if changes:
            raise UsageError("the scene options (--glyph-fill, ...) are for --source synth")
        source, length = sim_source(noise)
        described = f"simulated detector (voting.simulate.NoiseModel({args.noise}))"
    elif args.source == "real":
        if args.real_dir is None or changes or args.compare is not None:
            raise UsageError("--source real takes --real-dir, and no scene options or --compare")
        if args.score_model.startswith("fit-"):  # fitted on real pictures: tuned on them
            raise UsageError("--source real measures: --score-model card or fixed")
        card = find_card(args.tier, args.precision, args.models_dir)
        try:
            source = real_source(card, args.seconds, args.real_dir)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        length = args.seconds
        described = (
            f"real pictures of {args.real_dir} held up to a camera through model "
            f"{args.tier}-{args.precision} (threshold {card.threshold:g})"
        )
    else:
        card = find_card(args.tier, args.precision, args.models_dir)
        source = synth_source(card, args.seconds, cache, options)
        length = args.seconds
        described = (
            f"rendered clips (detectors.synth{f', {changes}' if changes else ''}) through model "
            f"{args.tier}-{args.precision} (threshold {card.threshold:g})"
        )

    other = None  # --compare's card, checked before anything is rendered
    if args.compare is not None:
        if card is None or args.score_model.startswith("fit-"):
            raise UsageError("--compare takes --source synth and --score-model card or fixed")
        try:
            other = find_card(args.tier, args.precision, args.compare)
        except ModelCardError as exc:
            raise UsageError(f"--compare: {exc}") from exc
        # Its cache is named now, as the first card's was: code edited during a long run
        # must not send the second card to another cache, where every clip renders again.
        other_source = synth_source(other, args.seconds, cache, options)

    def prefetch(specs: Sequence[ClipSpec], models: Sequence[ModelCard]) -> None:
        if args.source == "synth" and models and cache is not None and args.jobs > 1:
            render_missing(models, specs, args.seconds, cache, args.jobs, options)

    overrides: dict[str, Any] = {}
    if args.score_model.startswith("fit-"):
        config = make_config()
        cal_seeds = range(CALIBRATION_SEED, CALIBRATION_SEED + args.calibration_clips)
        cal_specs = clip_specs(cal_seeds, args.calibration_clips * length / 3, length)
        prefetch(cal_specs, [] if card is None else [card])
        cal_clips = make_clips(source, cal_specs)
        records = track_records(
            cal_clips,
            lambda: IouTracker(config.min_iou, config.max_gap, config.max_centre_distance),
        )
        model = calibrate(records, LLR_CAP, args.score_model.removeprefix("fit-"))
        overrides["score_model"] = model
        print(
            f"score model fitted on {len(cal_clips)} calibration clips (seeds {CALIBRATION_SEED}+):"
        )
        print("  score >= " + " ".join(f"{e:5.2f}" for e in (0.3, *model.edges)))
        print("  LLR      " + " ".join(f"{v:5.2f}" for v in model.llrs))
        print(f"  miss LLR {model.miss_llr:.2f}\n")
    seeds = range(args.seed, args.seed + args.clips)
    specs = clip_specs(seeds, args.negative_hours * 3600, length)

    def tallies_through(
        clips_of: ClipSource, model: ModelCard | None
    ) -> dict[tuple[str, float], Tally]:
        """The voters on ``specs``' clips from ``clips_of`` (rendered through ``model``, whose
        threshold the sessions' curve moves to with ``--score-model card``)."""
        threshold = model.threshold if model is not None and args.score_model == "card" else None
        voters = parse_voters(
            args.voters, overrides, threshold, None if model is None else model.vote
        )
        clips = make_clips(clips_of, specs)
        return evaluate(clips, voters, rates, args.min_view, args.clear, args.visible_contrast)

    prefetch(specs, [model for model in (card, other) if model is not None])  # each clip once
    tallies = tallies_through(source, card)
    print(
        f"{args.clips} positive clips, {args.negative_hours:g} h of negative video, {described}; "
        f"recall: visits >= {args.min_view:g} s with median score >= {args.clear:g} "
        "('hard': the others)"
    )
    print(format_table(tallies))
    if args.list_misses:
        print(misses_report(tallies, args.min_view))
    if other is not None:
        tallies_other = tallies_through(other_source, other)
        print(f"\nthe same clips through {args.compare} (threshold {other.threshold:g}):")
        print(format_table(tallies_other))
        if args.list_misses:
            print(misses_report(tallies_other, args.min_view))
        pairs = {key: pair(tallies[key], tallies_other[key]) for key in tallies}
        print("\n" + format_pairs(pairs, (str(args.models_dir), str(args.compare))))
    return 0


if __name__ == "__main__":  # ``python -m evals.voting.evaluate ARGS``: ``run.py eval-voting ARGS``
    from run import main

    sys.exit(main(["eval-voting", *sys.argv[1:]]))
