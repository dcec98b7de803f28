"""What a Confirmer charges for its checks."""

import pytest

from detectors.core import Confirmer, Detection

FU = Detection("fu", 0.9, (0.0, 0.0, 10.0, 10.0))


@pytest.mark.parametrize(
    ("score", "refused_work", "confirmed", "runs"),
    [
        (0.8, None, True, 1.5),  # a whole check
        (0.2, None, False, 1.5),  # refused by its last stage: every stage ran
        (-1.0, None, False, 1.5),  # refused early, but no cheaper cost was given
        (-1.0, 0.4, False, 0.4),  # refused by its first stage: only that stage is charged
        (0.2, 0.4, False, 1.5),  # refused by its last stage, with a cheaper first one
        (0.8, 0.4, True, 1.5),
    ],
)
def test_a_check_costs_its_work_or_its_first_stage_when_that_refused(
    score: float, refused_work: float | None, confirmed: bool, runs: float
) -> None:
    confirm = Confirmer(lambda _: score, 0.5, 1.5, refused_work=refused_work)
    assert confirm(FU) is confirmed
    assert confirm.runs == pytest.approx(runs)


def test_labels_not_judged_pass_at_no_cost() -> None:
    confirm = Confirmer(lambda _: -1.0, 0.5, 1.5, frozenset({"fu"}), refused_work=0.4)
    assert confirm(Detection("poster", 0.9, FU.box)) and confirm.runs == 0
    assert not confirm(FU) and confirm.runs == pytest.approx(0.4)
