"""The shipped detector: a card's first look, second look and glyph check, composed.

The first look (:class:`detectors.network.Network`) runs the network over the
whole frame. A card with a ``zoom`` spec makes it a two-pass detector: the first
look proposes candidates, and the second look (:class:`detectors.close_ups.CloseUps`)
scores each again on close-ups. A card with a ``glyph`` field adds the glyph check
(:mod:`detectors.glyph_check`) to what a voter may ask before it recognizes a track
(:meth:`OnnxDetector.confirmer`); with the field's ``rescue_from`` the check also
reads the candidates whose close-ups score under the threshold, and keeps those it
is sure of (:meth:`detectors.glyph_check.GlyphCheck.rescued`).
"""

from __future__ import annotations

import dataclasses

from detectors.card import ModelCard, find_card
from detectors.close_ups import (
    KEPT_TRACK_MARGIN,
    CloseUps,
    known_clutter,
    on_recognized_track,
    unexamined_clutter,
)
from detectors.core import (
    Clutter,
    Confirmer,
    Detection,
    Detections,
    FrameContext,
    ImageBGR,
    ModelInfo,
    require_bgr_image,
)
from detectors.glyph_check import GlyphCheck
from detectors.network import Network, suppress

TURNED_FLOOR = 0.1
"""The turned check reports scores down to this (lower: 0), below any card's ``turned_min``,
so that a cache of its scores can be read at other minimums."""
GLYPH_REFUSED = -1.0
"""What the check reports for a detection the glyph check refuses: below any minimum, and
below 0, so its :class:`Confirmer` charges the glyph views alone (``refused_work``)."""


class OnnxDetector:
    """Runs one shipped model as its card says. Thread-safe, as its parts are."""

    def __init__(self, card: ModelCard, threads: int = 1, threshold: float | None = None) -> None:
        self.card = card
        self.threshold = card.threshold if threshold is None else threshold
        self.network = Network(card, threads)
        self.glyph = GlyphCheck.of_card(card, threads)
        rescue_from = None if card.glyph is None else card.glyph.rescue_from
        # The lowest close-up score a second look keeps: the threshold, or the rescue's.
        floor = self.threshold if rescue_from is None else min(rescue_from, self.threshold)
        self.close_ups = None if card.zoom is None else CloseUps(self.network, card.zoom, floor)

    @property
    def tier(self) -> str:
        return self.card.tier

    @property
    def model(self) -> ModelInfo:
        spec = self.card.input
        return ModelInfo(
            self.threshold, self.card.classes, max(spec.width, spec.height), self.card.vote
        )

    @property
    def candidate_threshold(self) -> float:
        """The first look's cut: with a second look, the card's own.

        So the candidates, and what they cost, do not depend on the threshold asked for.
        """
        zoom = self.card.zoom
        return self.threshold if zoom is None else zoom.candidates

    def detect(self, image: ImageBGR) -> Detections:
        require_bgr_image(image)
        return self.second_looks(image, self.network.look(image, self.candidate_threshold))

    def detect_in(self, image: ImageBGR, context: FrameContext) -> Detections:
        """:meth:`detect`, with no more close-ups for a candidate on a track the vote has
        recognized (:func:`detectors.close_ups.on_recognized_track`) than keep the track: none
        if the first look alone scores it at the threshold or at most
        :data:`~detectors.close_ups.KEPT_TRACK_MARGIN` under it (reported at the threshold at
        least, with the first look's box), else close-ups up to the first that scores the
        threshold. A candidate whose close-ups saw nothing like it a moment ago
        (:func:`detectors.close_ups.known_clutter`) gets none and is dropped;
        :attr:`Detections.clutter` says what the next frame skips."""
        require_bgr_image(image)
        candidates = self.network.look(image, self.candidate_threshold)
        return self.second_looks(image, candidates, context)

    def second_looks(
        self, image: ImageBGR, candidates: list[Detection], context: FrameContext | None = None
    ) -> Detections:
        """The first look's ``candidates`` that a second look confirms (all, without zoom),
        with the network runs they took: one per close-up, and the glyph checks'. With a
        ``context``, as :meth:`detect_in` says."""
        frame = (image.shape[1], image.shape[0])
        close_ups = self.close_ups
        if close_ups is None:
            return Detections(tuple(candidates), frame=frame)
        kept: list[Detection] = []
        clutter: list[Clutter] = []
        looks = 0
        examined = candidates[: close_ups.zoom.max_candidates]
        for candidate in examined:
            kept_track = context is not None and on_recognized_track(candidate, context)
            if kept_track and candidate.score >= self.threshold - KEPT_TRACK_MARGIN:
                score = max(candidate.score, self.threshold)
                kept.append(dataclasses.replace(candidate, score=score))
                continue
            known = None if context is None or kept_track else known_clutter(candidate, context)
            if known is not None:
                clutter.append(known)
                continue
            regions = close_ups.regions(image, candidate)
            enough = self.threshold if kept_track else None
            seen, looked, anything = close_ups.best(image, candidate, regions, enough)
            looks += looked
            if seen is not None:
                kept.append(seen)
            elif context is not None and not anything:
                clutter.append(Clutter(candidate.label, candidate.box, candidate.score, context.t))
        if context is not None:
            clutter.extend(unexamined_clutter(context, examined))
        checks = 0
        if self.glyph is not None:  # the threshold is the card's, as eval-model's curve needs
            kept, checks = self.glyph.rescued(image, kept, self.card.threshold, self.threshold)
        glyph_work = 0.0 if self.glyph is None else self.glyph.work
        runs = 1.0 + looks + checks * glyph_work
        return Detections(tuple(suppress(kept)), runs, frame, tuple(clutter))

    def confirmer(self, image: ImageBGR) -> Confirmer | None:
        """The card's checks of ``image``'s detections; ``None`` when it has none.

        The glyph check (cheap) first, if the card has one: a detection it refuses
        scores :data:`GLYPH_REFUSED`. Then the turned check of ``zoom.turned_min``
        (:meth:`detectors.close_ups.CloseUps.turned_score`), whose score is the check's;
        without one, a detection the glyph check passes scores 1.
        """
        close_ups, glyph = self.close_ups, self.glyph
        turned_min = None if close_ups is None else close_ups.zoom.turned_min
        if turned_min is None and glyph is None:
            return None
        floor = TURNED_FLOOR if turned_min is None else min(TURNED_FLOOR, turned_min)

        def check(detection: Detection) -> float:
            if glyph is not None and glyph.score(image, detection.box) < glyph.spec.min_score:
                return GLYPH_REFUSED
            if close_ups is None or turned_min is None:
                return 1.0
            return close_ups.turned_score(image, detection, floor)

        glyph_work = None if glyph is None else glyph.work  # refused: the close-up never ran
        work = (glyph_work or 0.0) + (0.0 if turned_min is None else 1.0)
        labels = frozenset(self.card.classes)
        return Confirmer(check, turned_min or 0.0, work, labels, refused_work=glyph_work)


def load_detector(tier: str = "l", precision: str = "int8", threads: int = 1) -> OnnxDetector:
    """The shipped model of ``tier``; see ``detectors/models/*.json`` for what exists."""
    return OnnxDetector(find_card(tier, precision), threads=threads)
