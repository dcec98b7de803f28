import cv2
import pytest

from detectors.objects.evaluate import cost


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
