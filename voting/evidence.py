"""Per-frame evidence for Wald's sequential test: calibrated log-likelihood ratios and thresholds.

A track is either a real object (H1) or something the detector fires on by
mistake (H0). Each frame the track gets either a detection with some score or
nothing; :class:`ScoreModel` says how much more likely that observation is
under H1 than under H0, as a natural-log likelihood ratio (LLR).
:class:`SprtThresholds` turns target error rates into the LLR levels at which
the test decides.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SprtThresholds:
    """Wald's decision levels for error rates ``alpha`` (false accept) and ``beta`` (miss).

    ``upper = ln((1 - beta) / alpha)``: accept H1 (recognize) at or above it.
    ``lower = ln(beta / (1 - alpha))``: the evidence says "not this object".
    """

    upper: float
    lower: float

    @classmethod
    def from_error_rates(cls, alpha: float, beta: float) -> SprtThresholds:
        """Raises ValueError unless ``0 < alpha < 0.5`` and ``0 < beta < 0.5``."""
        for name, value in (("alpha", alpha), ("beta", beta)):
            if not 0 < value < 0.5:
                raise ValueError(f"{name} must be in (0, 0.5), got {value}")
        return cls(math.log((1 - beta) / alpha), math.log(beta / (1 - alpha)))


@dataclass(frozen=True, slots=True)
class ScoreModel:
    """Piecewise-constant LLR of a detection's score, plus the LLR of a missed frame.

    ``edges`` are the increasing upper bounds of the score bins but the last
    (which runs to 1); ``llrs`` has one value per bin, so
    ``len(llrs) == len(edges) + 1``. ``miss_llr`` is the LLR of a frame in
    which the track got no detection; it is negative for a useful detector.
    """

    edges: tuple[float, ...]
    llrs: tuple[float, ...]
    miss_llr: float

    def __post_init__(self) -> None:
        if len(self.llrs) != len(self.edges) + 1:
            raise ValueError("a score model needs exactly one LLR more than bin edges")
        if any(b <= a for a, b in zip(self.edges, self.edges[1:], strict=False)):
            raise ValueError("score model bin edges must increase")

    def llr(self, score: float | None) -> float:
        """The LLR of one frame: a detection with ``score``, or ``None`` for no detection."""
        if score is None:
            return self.miss_llr
        return self.llrs[bisect.bisect_right(self.edges, score)]

    @classmethod
    def logistic(
        cls, centre: float, slope: float, miss_llr: float, cap: float, bins: int = 20
    ) -> ScoreModel:
        """A smooth default: ``slope * (logit(s) - logit(centre))``, clipped to ``[-cap, cap]``.

        Use it until scores of real positives and negatives are at hand for :meth:`fit`.
        """
        edges = tuple((i + 1) / bins for i in range(bins - 1))
        mids = [(i + 0.5) / bins for i in range(bins)]
        llrs = tuple(_clip(slope * (_logit(s) - _logit(centre)), cap) for s in mids)
        return cls(edges, llrs, miss_llr)

    @classmethod
    def for_threshold(
        cls,
        threshold: float,
        reference_threshold: float,
        centre: float,
        slope: float,
        miss_llr: float,
        cap: float,
        bins: int = 20,
    ) -> ScoreModel:
        """A :meth:`logistic` curve chosen at ``reference_threshold``, moved to ``threshold``.

        A model's threshold is its own calibration against look-alikes (each
        card's is the score that a fixed small share of look-alike frames
        reach), so a score at the threshold means the same for every model.
        The curve is shifted in logit space so that a score at ``threshold``
        gets the LLR a score at ``reference_threshold`` got: a retrained or
        smaller model with a higher threshold does not turn its barely-firing
        look-alikes into stronger evidence. Scores below ``threshold`` never
        reach the voter from that detector.

        Raises:
            ValueError: a threshold or ``centre`` is not in (0, 1).
        """
        for name, value in (
            ("threshold", threshold),
            ("reference_threshold", reference_threshold),
            ("centre", centre),
        ):
            if not 0 < value < 1:
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        shifted = _logit(centre) + _logit(threshold) - _logit(reference_threshold)
        return cls.logistic(1 / (1 + math.exp(-shifted)), slope, miss_llr, cap, bins)

    @classmethod
    def fit(
        cls,
        positive: Sequence[float],
        positive_frames: int,
        negative: Sequence[float],
        negative_frames: int,
        edges: Sequence[float],
        cap: float,
        prior_count: float = 1.0,
    ) -> ScoreModel:
        """Calibrate from matched detection scores of known positive and negative tracks.

        Args:
            positive: scores of the detections matched to real objects' tracks.
            positive_frames: frames those tracks were alive for (hits plus misses).
            negative: scores of the detections of false tracks.
            negative_frames: frames the false tracks were alive for.
            edges: increasing bin edges of the score histogram.
            cap: largest absolute LLR one frame may carry, so that one frame
                never decides alone and rare, poorly estimated bins stay sane.
            prior_count: pseudo-count added to every bin (and to misses), so
                that empty bins get a finite LLR.

        Returns:
            A model whose LLR does not decrease with the score (pooled where
            the histograms disagree, as isotonic regression does).

        Raises:
            ValueError: a frame count is smaller than its number of scores, or
                ``prior_count`` is not positive.
        """
        if positive_frames < len(positive) or negative_frames < len(negative):
            raise ValueError("frame counts must be at least the number of scores")
        if not prior_count > 0:
            raise ValueError(f"prior_count must be > 0, got {prior_count}")
        edge_list = list(edges)
        n_bins = len(edge_list) + 1
        pos = [prior_count] * n_bins
        neg = [prior_count] * n_bins
        for score in positive:
            pos[bisect.bisect_right(edge_list, score)] += 1
        for score in negative:
            neg[bisect.bisect_right(edge_list, score)] += 1
        pos_total = positive_frames + prior_count * (n_bins + 1)
        neg_total = negative_frames + prior_count * (n_bins + 1)
        llrs = _pool_adjacent_violators(
            [math.log((p / pos_total) / (q / neg_total)) for p, q in zip(pos, neg, strict=True)],
            [p + q for p, q in zip(pos, neg, strict=True)],
        )
        pos_miss = positive_frames - len(positive) + prior_count
        neg_miss = negative_frames - len(negative) + prior_count
        miss = math.log((pos_miss / pos_total) / (neg_miss / neg_total))
        return cls(tuple(edge_list), tuple(_clip(v, cap) for v in llrs), _clip(miss, cap))


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _clip(value: float, cap: float) -> float:
    return max(-cap, min(cap, value))


def _pool_adjacent_violators(values: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``values`` in weighted least squares."""
    blocks: list[tuple[float, float, int]] = []  # (mean, weight, length)
    for value, weight in zip(values, weights, strict=True):
        blocks.append((value, weight, 1))
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m1, w1, n1), (m2, w2, n2) = blocks[-2], blocks[-1]
            blocks[-2:] = [((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2)]
    return [mean for mean, _, length in blocks for _ in range(length)]
