import math

import pytest

from voting.evidence import ScoreModel, SprtThresholds


@pytest.mark.parametrize(("alpha", "beta"), [(1e-3, 1e-2), (1e-2, 5e-2), (0.49, 0.49)])
def test_thresholds_are_walds(alpha, beta):
    th = SprtThresholds.from_error_rates(alpha, beta)
    assert th.upper == pytest.approx(math.log((1 - beta) / alpha))
    assert th.lower == pytest.approx(math.log(beta / (1 - alpha)))
    assert th.lower < 0 < th.upper


@pytest.mark.parametrize(("alpha", "beta"), [(0, 0.1), (0.5, 0.1), (0.1, 0), (0.1, 0.7)])
def test_thresholds_reject_bad_error_rates(alpha, beta):
    with pytest.raises(ValueError, match="must be in"):
        SprtThresholds.from_error_rates(alpha, beta)


def test_llr_is_looked_up_by_bin():
    model = ScoreModel((0.5, 0.8), (-1.0, 0.5, 2.0), -3.0)
    assert [model.llr(s) for s in (0.1, 0.5, 0.79, 0.8, 1.0)] == [-1.0, 0.5, 0.5, 2.0, 2.0]
    assert model.llr(None) == -3.0


@pytest.mark.parametrize(
    ("edges", "llrs", "message"),
    [((0.5,), (0.0,), "one LLR more"), ((0.5, 0.5), (0.0, 0.0, 0.0), "increase")],
)
def test_score_model_checks_its_table(edges, llrs, message):
    with pytest.raises(ValueError, match=message):
        ScoreModel(edges, llrs, 0.0)


def test_logistic_model_is_monotone_capped_and_centred():
    model = ScoreModel.logistic(centre=0.5, slope=2.0, miss_llr=-1.0, cap=3.0)
    values = [model.llr(s / 100) for s in range(101)]
    assert values == sorted(values)
    assert max(map(abs, values)) == 3.0
    assert model.llr(0.49) < 0 < model.llr(0.51)


def test_fit_estimates_likelihood_ratios():
    # 100 positive frames: 80 hits scoring 0.9, 20 misses; 100 negative frames: 50 hits at 0.4.
    model = ScoreModel.fit(
        [0.9] * 80, 100, [0.4] * 50, 100, edges=(0.5,), cap=10.0, prior_count=1e-9
    )
    assert (model.llr(0.4), model.llr(0.9)) == (-10.0, 10.0)  # never seen by the other class
    assert model.llr(None) == pytest.approx(math.log(0.2 / 0.5))


def test_fit_smooths_empty_bins_and_pools_violations():
    # The middle bin has more negatives than the low bin: pooled, so LLR never falls with score.
    positive = [0.1] * 10 + [0.5] * 5 + [0.9] * 50
    negative = [0.1] * 10 + [0.5] * 30 + [0.9] * 1
    model = ScoreModel.fit(positive, 100, negative, 100, edges=(0.3, 0.7), cap=5.0)
    assert model.llrs == tuple(sorted(model.llrs))
    assert all(math.isfinite(v) for v in model.llrs)
    assert model.llrs[0] == model.llrs[1]


@pytest.mark.parametrize(
    ("frames", "prior", "message"), [(1, 1.0, "frame counts"), (2, 0.0, "prior_count")]
)
def test_fit_rejects_inconsistent_counts(frames, prior, message):
    with pytest.raises(ValueError, match=message):
        ScoreModel.fit([0.9, 0.9], frames, [], 0, edges=(0.5,), cap=3.0, prior_count=prior)


CURVE = (0.5, 1.5, -1.5, 3.0)  # centre, slope, miss LLR, cap


def test_curve_at_its_reference_threshold_is_the_curve_itself():
    assert ScoreModel.for_threshold(0.6, 0.6, *CURVE) == ScoreModel.logistic(*CURVE)


def _sigmoid(x):
    return 1 / (1 + math.exp(-x))


@pytest.mark.parametrize("threshold", [0.4, 0.63, 0.67, 0.74, 0.9])
@pytest.mark.parametrize("above", [0.0, 0.5, 1.0, 2.0])
def test_curve_moves_with_the_threshold(threshold, above):
    # A score `above` (in logit) over its model's threshold carries what the same
    # margin over the reference threshold did; fine bins make the comparison exact enough.
    moved = ScoreModel.for_threshold(threshold, 0.6, *CURVE, bins=2000)
    reference = ScoreModel.logistic(*CURVE, bins=2000)
    score = _sigmoid(math.log(threshold / (1 - threshold)) + above)
    same_margin = _sigmoid(math.log(0.6 / 0.4) + above)
    assert moved.llr(score) == pytest.approx(reference.llr(same_margin), abs=0.02)
    assert moved.llr(None) == reference.llr(None)


@pytest.mark.parametrize(
    ("threshold", "reference", "centre"),
    [(0.0, 0.6, 0.5), (1.0, 0.6, 0.5), (0.6, 0, 0.5), (0.6, 0.6, 1.0)],
)
def test_curve_for_threshold_rejects_bad_probabilities(threshold, reference, centre):
    with pytest.raises(ValueError, match=r"must be in \(0, 1\)"):
        ScoreModel.for_threshold(threshold, reference, centre, 1.5, -1.5, 3.0)
