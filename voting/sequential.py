"""Sequential voting: decide on each track as soon as its evidence, accumulated in time, suffices.

Every track carries a running log-likelihood ratio (LLR) "real object" vs
"detector mistake" (Wald's SPRT). Each frame adds the LLR of what the track
got (a detection's score, or nothing), weighted by the media time the frame
stands for, so that a 30 fps phone does not decide 6x faster than a 5 fps
one merely from seeing more (strongly correlated) frames; and it fades over
a few seconds, so that a look-alike scored a little above neutral for a long
time cannot drift up to a decision. The track is recognized when the sum
reaches the level set by the target error rates; hysteresis keeps it
recognized through a few bad frames.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import Field, InstanceOf
from pydantic.dataclasses import dataclass as strict_dataclass

from detectors.config import STRICT
from detectors.core import (
    Box,
    Confirmer,
    Detection,
    Detections,
    FrameSize,
    iou,
    touches_edge,
)
from voting.core import TrackedDetection, VoteEvent, VoteUpdate
from voting.evidence import ScoreModel, SprtThresholds
from voting.smoothing import OneEuroBox, OneEuroConfig
from voting.tracker import IouTracker, Track

_CURVE = (0.5, 1.5, -1.5, 3.0)  # centre, slope, miss LLR, cap: see ScoreModel.logistic
DEFAULT_THRESHOLD = 0.6
"""The detector threshold the default curve was chosen with (every model's, until dfc33a1)."""
DEFAULT_SCORE_MODEL = ScoreModel.logistic(*_CURVE)
"""For a detector of threshold 0.6 or unknown; see :func:`score_model_for_threshold`."""
OBJECT_SCAN_SCORE_MODEL = ScoreModel.logistic(0.5, 1.5, -1.5, 4.0)
"""For object-scan targets, whose score is a logistic of homography inliers
(``detectors.objects.index.inlier_score``), not a model's confidence: the
default curve with a cap of 4 instead of 3, reached from 17 inliers. A
verified homography is almost never wrong (one wrong frame in the 12,660 of
eval-targets' default and held-out clips), and a target verified on half the
frames at 15 fps must still be recognized; one frame still cannot decide
alone (docs/object_scan.md, Voting)."""


def score_model_for_threshold(threshold: float) -> ScoreModel:
    """The default curve for a detector whose card says ``threshold``.

    Sessions and ``eval-voting`` use it for the shipped models: a score at a
    model's own threshold carries the evidence 0.6 carried for the models the
    curve was chosen with (``ScoreModel.for_threshold``).

    Raises:
        ValueError: ``threshold`` is not in (0, 1).
    """
    return ScoreModel.for_threshold(threshold, DEFAULT_THRESHOLD, *_CURVE)


@strict_dataclass(frozen=True, slots=True, config=STRICT)
class SequentialConfig:
    """Every knob of :class:`SequentialVoter`; the presets in :mod:`voting.presets` fill it.

    Attributes:
        alpha: target probability of recognizing a track that is a detector mistake.
        beta: target probability of never recognizing a real object's track.
        evidence_time: seconds of media time that one frame's evidence stands
            for at most (about the correlation time of the detector's errors).
            A frame ``dt`` seconds after the previous one weighs
            ``min(dt, evidence_time) / evidence_time``.
        memory: seconds over which evidence fades (by 1/e). A detector's errors
            persist on a track: a look-alike that scores a little above
            neutral for seconds would, in a plain SPRT, drift up to the
            recognition level however weak each frame's evidence. With fading,
            a steady per-sample LLR ``d`` can only build up to about
            ``d * memory / evidence_time``, so only tracks whose frames keep
            saying "福" clearly get recognized; a clear view, which gets there
            in a few tenths of a second, is hardly slowed. ``inf``: Wald's test.
        floor: the lowest LLR a track not yet recognized can sink to. Wald's
            lower level would end the test ("not this object"); a stream never
            ends it, so a track that looked bad (an object still coming into
            view, out of focus) must be able to climb back. A floor near 0
            makes that quick (Page's CUSUM reflects at 0); a deep one makes
            look-alikes that fired for a while harder to recognize by mistake.
        hold: LLR a recognized track may bank above the recognition level: how
            much contrary evidence it takes to lose it.
        lose_below: a recognized track whose LLR falls below this is lost.
        min_score: detections scoring lower are ignored (count as no detection).
        edge_discount: read the score of a detection whose box touches the frame's
            edge (:func:`detectors.core.touches_edge`) this much lower. The frame may
            cut a look-alike down to the part it shares with 福 (幅 to 畐), which the
            detector cannot tell from a cut-off 福; most wrong recognitions at scale
            were such fragments, held steadily a little above the detector's
            threshold. A cut-off 福 scored high is still recognized, a little later
            (docs/voting.md, "How the vote decides"; CHANGELOG.md, 2026-12-02, for
            0.04). Applies
            when the detections say their frame size.
        edge_max_llr: the most LLR such a detection adds to a track not yet recognized
            (``None``: no cap). Held steadily in view, a fragment scored high reaches the
            level however much it is discounted; capped at 0, a track is recognized only
            from frames that hold all of it, and a recognized track is kept through frames
            that cut it.
        confirm: ask the detector's second opinion (the ``confirm`` given to
            :meth:`SequentialVoter.update`, if any) about a track's detection on the frame
            the track would be recognized; if it does not confirm, that frame counts as a
            miss, and the track is asked again when it next gets there. Paid about once per
            object rather than on every frame (docs/voting.md, "How the vote decides").
        confirm_margin: ask from this much LLR below the recognition level on, so that a
            track's last few frames before recognition are each checked and each refusal
            costs it a frame. Fewer look-alikes that pass the check now and then get
            through, for several checks per object instead of one and a little recall
            (docs/voting.md, "How the vote decides"); 0: the recognizing frame only.
        score_model: per-frame LLR of a score, and of a miss, for every label
            not in ``label_score_models``.
        label_score_models: the curves of particular labels. A session lists
            the 福 model's labels here (weighed against its threshold) and
            gives every other label, a registered object-scan target,
            ``OBJECT_SCAN_SCORE_MODEL`` as ``score_model``.
        min_iou, max_centre_distance, max_gap, max_tracks: see :class:`IouTracker`.
        smooth_min_cutoff, smooth_beta: see :class:`OneEuroConfig`.
        update_iou: a recognized track gets an ``updated`` event when its
            smoothed box overlaps the last one reported by less than this.
    """

    alpha: float = Field(
        default=1e-3, gt=0, lt=0.5, description="target rate of recognized mistakes"
    )
    beta: float = Field(
        default=1e-2, gt=0, lt=0.5, description="target rate of real objects never recognized"
    )
    evidence_time: float = Field(
        default=0.2, gt=0, description="seconds one frame's evidence stands for"
    )
    memory: float = Field(default=2.0, gt=0, description="seconds over which evidence fades by 1/e")
    floor: float = Field(
        default=-2.0, le=0, description="lowest LLR a track not yet recognized sinks to"
    )
    hold: float = Field(
        default=3.0, ge=0, description="LLR a recognized track may bank above the level"
    )
    lose_below: float = Field(default=0.0, description="a recognized track below this LLR is lost")
    min_score: float = Field(
        default=0.3, ge=0, le=1, description="detections scoring lower are ignored"
    )
    edge_discount: float = Field(
        default=0.04, ge=0, le=1, description="score discount of a box touching the frame's edge"
    )
    edge_max_llr: float | None = Field(
        default=None, description="most LLR a box touching the edge adds before recognition"
    )
    confirm: bool = Field(
        default=True, description="ask the detector's second opinion before recognizing"
    )
    confirm_margin: float = Field(
        default=0.0, ge=0, description="LLR below the level from which to ask"
    )
    score_model: InstanceOf[ScoreModel] = Field(
        default=DEFAULT_SCORE_MODEL, description="per-frame LLR of a score and of a miss"
    )
    label_score_models: Mapping[str, InstanceOf[ScoreModel]] = Field(
        default_factory=dict, description="the score models of particular labels"
    )
    min_iou: float = Field(
        default=0.3, ge=0, le=1, description="least box overlap that continues a track"
    )
    max_centre_distance: float = Field(
        default=0.5, ge=0, description="else most centre distance, in box diagonals, that does"
    )
    max_gap: float = Field(default=1.0, gt=0, description="seconds a track may go unseen")
    max_tracks: int = Field(default=32, ge=1, description="tracks alive at once, at most")
    smooth_min_cutoff: float = Field(
        default=1.0, gt=0, description="box smoothing's least cutoff frequency (Hz)"
    )
    smooth_beta: float = Field(default=0.5, ge=0, description="box smoothing's speed coefficient")
    update_iou: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="a smoothed box moved this little gets no updated event",
    )

    def __post_init__(self) -> None:
        upper = self.thresholds.upper
        if not self.lose_below < upper:
            raise ValueError(f"lose_below must be below the recognition level {upper:.2f}")

    @property
    def thresholds(self) -> SprtThresholds:
        return SprtThresholds.from_error_rates(self.alpha, self.beta)


@dataclass(slots=True)
class TrackEvidence:
    """The voting state of one track."""

    smoother: OneEuroBox
    box: Box
    """The smoothed box."""
    reported_box: Box
    """The box of the last ``recognized`` or ``updated`` event."""
    llr: float = 0.0
    last_t: float | None = None
    recognized: bool = False


@dataclass(slots=True)
class SequentialVoter:
    """Wald's SPRT per track, with hysteresis and box smoothing; feed it every frame.

    Events: ``recognized`` once per track, when its LLR reaches the upper
    level; ``updated`` when a recognized track's smoothed box moved; ``lost``
    when a recognized track's LLR falls below ``lose_below`` or it goes unseen
    for ``max_gap`` seconds. A lost track is retired: if its object is seen
    again, it gets a new track (and a new ``recognized``).
    """

    config: SequentialConfig = field(default_factory=SequentialConfig)
    tracker: IouTracker = field(init=False)
    _evidence: dict[int, TrackEvidence] = field(init=False, default_factory=dict)
    _upper: float = field(init=False)
    _smoothing: OneEuroConfig = field(init=False)
    _last_t: float = field(init=False, default=-math.inf)

    def __post_init__(self) -> None:
        c = self.config
        self.tracker = IouTracker(c.min_iou, c.max_gap, c.max_centre_distance, c.max_tracks)
        thresholds = c.thresholds
        self._upper = thresholds.upper
        self._smoothing = OneEuroConfig(c.smooth_min_cutoff, c.smooth_beta)

    def update(
        self, detections: Detections, t: float, confirm: Confirmer | None = None
    ) -> VoteUpdate:
        """Feed the detections of the frame at media time ``t`` and collect what changed.

        ``confirm`` is asked about a track's detection only as the track is
        about to be recognized (see :attr:`SequentialConfig.confirm` and
        ``confirm_margin``).

        Raises:
            ValueError: ``t`` is earlier than the previous frame's.
        """
        if t < self._last_t:
            raise ValueError(f"media time went backwards: {t} after {self._last_t}")
        self._last_t = t
        pairs = self.tracker.associate(list(detections.above(self.config.min_score)), t)
        seen = {track.id: det for track, det in pairs}
        events: list[VoteEvent] = []
        tracked: dict[int, TrackedDetection] = {}
        for track in list(self.tracker.tracks):
            det = seen.get(track.id)
            state = self._evidence.get(track.id)
            if state is None:
                smoother = OneEuroBox(self._smoothing)
                state = TrackEvidence(smoother, smoother.update(track.box, t), track.box)
                self._evidence[track.id] = state
            model = self.config.label_score_models.get(track.label, self.config.score_model)
            before = state.llr, state.last_t
            self._accumulate(state, self._frame_llr(model, state, det, detections.frame), t)
            if self._refused(state, det, confirm):
                state.llr, state.last_t = before  # the frame counts as a miss instead
                self._accumulate(state, model.miss_llr, t)
            if det is not None:
                state.box = state.smoother.update(det.box, t)
                tracked[track.id] = TrackedDetection(det.label, det.score, state.box, track.id)
            event = self._decide(track, state, t, det is not None)
            if event is not None:
                events.append(event)
                if event.event == "lost":
                    self.tracker.drop(track)
                    del self._evidence[track.id]
        for track in self.tracker.expire(t):
            state = self._evidence.pop(track.id)
            if state.recognized:
                events.append(VoteEvent("lost", track.label, track.id, t))
        return VoteUpdate(tuple(tracked[track.id] for track, _ in pairs), tuple(events))

    def _refused(
        self, state: TrackEvidence, det: Detection | None, confirm: Confirmer | None
    ) -> bool:
        """Whether ``det`` brings its track within ``confirm_margin`` of recognition and
        ``confirm`` says it is not what it seems."""
        if det is None or confirm is None or not self.config.confirm or state.recognized:
            return False
        return state.llr >= self._upper - self.config.confirm_margin and not confirm(det)

    def _frame_llr(
        self,
        model: ScoreModel,
        state: TrackEvidence,
        det: Detection | None,
        frame: FrameSize | None,
    ) -> float:
        """The LLR of ``det`` (``None``: a miss) for a track in ``state``."""
        if det is None:
            return model.miss_llr
        if frame is None or not touches_edge(det.box, frame):
            return model.llr(det.score)
        llr = model.llr(det.score - self.config.edge_discount)
        cap = self.config.edge_max_llr
        return llr if cap is None or state.recognized else min(llr, cap)

    def _accumulate(self, state: TrackEvidence, llr: float, t: float) -> None:
        c = self.config
        # A new track's first frame is one whole independent sample; later frames
        # weigh the media time since the track's previous frame, up to one sample.
        weight, kept = 1.0, 1.0
        if state.last_t is not None:
            dt = t - state.last_t
            weight = min(dt, c.evidence_time) / c.evidence_time
            kept = math.exp(-dt / c.memory)
        state.last_t = t
        ceiling = self._upper + c.hold if state.recognized else math.inf
        state.llr = min(ceiling, max(c.floor, kept * state.llr + weight * llr))

    def _decide(self, track: Track, state: TrackEvidence, t: float, seen: bool) -> VoteEvent | None:
        box = state.box
        if not state.recognized:
            if state.llr < self._upper:
                return None
            state.recognized, state.reported_box = True, box
            state.llr = min(state.llr, self._upper + self.config.hold)
            return VoteEvent("recognized", track.label, track.id, t, _posterior(state.llr), box)
        if state.llr < self.config.lose_below:
            return VoteEvent("lost", track.label, track.id, t)
        if seen and iou(box, state.reported_box) < self.config.update_iou:
            state.reported_box = box
            return VoteEvent("updated", track.label, track.id, t, _posterior(state.llr), box)
        return None


def _posterior(llr: float) -> float:
    """Probability of "real object" from the LLR, with even prior odds."""
    return 1.0 / (1.0 + math.exp(-llr))
