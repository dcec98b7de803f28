import cv2
import pytest

from detectors.card import find_card
from detectors.objects.index import TargetIndex
from detectors.objects.synth import make_clip, make_products
from evals.detectors.targets import cost, register, run_clip


@pytest.fixture
def restore_threads():
    threads = cv2.getNumThreads()
    yield
    cv2.setNumThreads(threads)  # cost() times one OpenCV thread


def test_the_cost_table_has_a_row_per_index_size_with_wall_and_cpu_time(capsys, restore_threads):
    cost([1, 2], n_frames=2, seed=3)
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("| targets |"))
    assert "total mean" in header and "CPU mean" in header
    rows = [line.split("|")[1:-1] for line in lines if line.startswith(("| 1 |", "| 2 |"))]
    assert len(rows) == 2
    assert all(len(row) == len(header.split("|")[1:-1]) for row in rows)
    assert all(float(cell) >= 0 for row in rows for cell in row[2:-1])


@pytest.mark.parametrize(
    ("kind", "recalled", "false_events"), [("target", 1, 0), ("look-alike", 0, 0)]
)
def test_clips_are_voted_on_as_a_session_votes(kind, recalled, false_events):
    product = make_products(1)[0]
    targets, _ = register([product])
    image, expected = (
        (product.image, product.name) if kind == "target" else (product.look_alike, None)
    )
    clip = make_clip(7000, image, 15)
    out = run_clip(TargetIndex(targets), clip.frames, expected, 15.0, "balanced", find_card("l"))
    assert (out.recalled, out.false_events) == (recalled, false_events)
