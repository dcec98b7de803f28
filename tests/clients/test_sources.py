import cv2
import numpy as np
import pytest

from clients.clips import write_video, write_y4m
from clients.sources import SourceError, bgr_frames, frame_count, source_rate


def frames(n=5, size=(48, 64)):
    return [np.full((*size, 3), 20 * i, np.uint8) for i in range(n)]


def test_video_file_frames_have_times_from_zero(tmp_path):
    path = tmp_path / "clip.mp4"
    write_video(frames(), path, fps=10)
    got = list(bgr_frames(str(path)))
    assert [round(t, 2) for t, _ in got] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert got[0][1].shape == (48, 64, 3)
    assert frame_count(str(path)) == 5
    assert source_rate(str(path), 99) == pytest.approx(10)


def test_folder_of_images_in_name_order_at_the_given_rate(tmp_path):
    for i, image in enumerate(frames(3)):
        cv2.imwrite(str(tmp_path / f"{i:02d}.png"), image)
    (tmp_path / "notes.txt").write_text("ignored")
    got = list(bgr_frames(str(tmp_path), fps=4))
    assert [t for t, _ in got] == [0.0, 0.25, 0.5]
    assert [int(img[0, 0, 0]) for _, img in got] == [0, 20, 40]
    assert frame_count(str(tmp_path)) == 3


def test_y4m_is_readable_back(tmp_path):
    path = tmp_path / "clip.y4m"
    write_y4m(frames(4), path, fps=15)
    assert len(list(bgr_frames(str(path)))) == 4


def bad_source(kind, directory):
    """A source of each kind that cannot be read."""
    if kind == "missing":
        return directory / "missing.mp4"
    if kind == "not video":
        (directory / "bad.mp4").write_bytes(b"nope")
        return directory / "bad.mp4"
    folder = directory / kind.replace(" ", "_")
    folder.mkdir()
    if kind == "broken image":
        (folder / "a.png").write_bytes(b"x")
    return folder


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("missing", "no such file"),
        ("not video", "cannot open"),
        ("empty folder", "holds no images"),
        ("broken image", "cannot read image"),
    ],
)
def test_unreadable_sources_fail_with_a_clear_message(tmp_path, kind, message):
    with pytest.raises(SourceError, match=message):
        list(bgr_frames(str(bad_source(kind, tmp_path))))
