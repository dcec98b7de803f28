import logging
import os

import cv2
import numpy as np
import pytest

from clients.clips import VideoPathError, check_video_path, write_video, write_y4m
from clients.sources import (
    SourceError,
    bgr_frames,
    camera_device,
    frame_count,
    opened,
    source_rate,
)


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
        ("broken image", "cannot read any of the 1 images"),
    ],
)
def test_unreadable_sources_fail_with_a_clear_message(tmp_path, kind, message):
    with pytest.raises(SourceError, match=message):
        list(bgr_frames(str(bad_source(kind, tmp_path))))


@pytest.mark.parametrize("kind", ["empty folder", "broken image"])
def test_opened_reads_the_source_now_not_at_the_first_frame(tmp_path, kind):
    frames = bgr_frames(str(bad_source(kind, tmp_path)))  # a folder opens lazily
    with pytest.raises(SourceError):
        opened(frames)


def test_opened_gives_every_frame(tmp_path):
    path = tmp_path / "clip.mp4"
    write_video(frames(), path, fps=10)
    assert len(list(opened(bgr_frames(str(path))))) == 5


def test_unreadable_images_in_a_folder_are_skipped_with_a_warning_keeping_their_time(
    tmp_path, caplog
):
    for i, image in enumerate(frames(3)):
        cv2.imwrite(str(tmp_path / f"{i:02d}.png"), image)
    (tmp_path / "01.png").write_bytes(b"\x89PNG truncated")
    skipped = []
    with caplog.at_level(logging.WARNING):
        got = list(bgr_frames(str(tmp_path), fps=4, skipped=skipped))
        assert "skipping unreadable image" in caplog.text
        caplog.clear()
        again = list(bgr_frames(str(tmp_path), fps=4, skipped=skipped))  # as --annotate does
    assert [t for t, _ in got] == [t for t, _ in again] == [0.0, 0.5]
    assert skipped == [tmp_path / "01.png"]
    assert not caplog.records  # a known unreadable image is not read, nor warned about, again


@pytest.mark.parametrize("fps", [0.0, -5.0])
def test_a_folder_needs_a_positive_frame_rate(tmp_path, fps):
    cv2.imwrite(str(tmp_path / "a.png"), frames(1)[0])
    with pytest.raises(SourceError, match="frame rate must be > 0"):
        list(bgr_frames(str(tmp_path), fps=fps))


@pytest.mark.parametrize(
    ("name", "ok"),
    [("a.mp4", True), ("a.mkv", True), ("a.xyz", False), ("a.y4m", False), ("a.webm", False)],
)
def test_video_paths_are_checked_before_anything_is_written(tmp_path, name, ok):
    path = tmp_path / name
    if ok:
        check_video_path(path)
    else:
        with pytest.raises(VideoPathError, match=name):
            check_video_path(path)
    assert not path.exists()


# A udev /dev/v4l tree: stable names linking to the /dev/videoN node a camera got this time.
V4L_LINKS = {
    "by-id/usb-Acme_Cam_123-video-index0": "/dev/video2",
    "by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0": "/dev/video4",
    "by-id/usb-Acme_Cam_123-subdev": "/dev/v4l-subdev0",
}


@pytest.fixture
def v4l(tmp_path, monkeypatch):
    """``V4L_LINKS`` as real symlinks under ``tmp_path``, read there for ``/dev/v4l/``."""
    for name, target in V4L_LINKS.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).symlink_to(target)
    realpath = os.path.realpath

    def in_tmp(path, **kwargs):
        if path.startswith("/dev/v4l/"):
            path = str(tmp_path / path.removeprefix("/dev/v4l/"))
        return realpath(path, **kwargs)

    monkeypatch.setattr(os.path, "realpath", in_tmp)


@pytest.mark.parametrize(
    ("source", "device"),
    [
        ("0", 0),
        ("12", 12),
        ("/dev/video0", "/dev/video0"),
        ("/dev/v4l/by-id/usb-Acme_Cam_123-video-index0", "/dev/video2"),
        ("/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0", "/dev/video4"),
        # Not (or no longer) a link to a video node: kept as typed, for the error message.
        ("/dev/v4l/by-id/usb-Unplugged-video-index0", "/dev/v4l/by-id/usb-Unplugged-video-index0"),
        ("/dev/v4l/by-id/usb-Acme_Cam_123-subdev", "/dev/v4l/by-id/usb-Acme_Cam_123-subdev"),
        ("clip.mp4", None),
        ("frames/0", None),
        ("/dev/null", None),
        ("-1", None),
    ],
)
def test_a_camera_is_named_by_its_index_or_its_v4l2_device(v4l, source, device):
    assert camera_device(source) == device


@pytest.mark.parametrize(
    ("source", "device"),
    [
        ("0", 0),
        ("/dev/video7", "/dev/video7"),
        ("/dev/v4l/by-id/usb-Acme_Cam_123-video-index0", "/dev/video2"),
    ],
)
def test_a_webcam_source_opens_the_camera_it_names(v4l, monkeypatch, source, device):
    asked = []

    class NoCamera:
        def __init__(self, device):
            asked.append(device)

        def isOpened(self):
            return False

    monkeypatch.setattr(cv2, "VideoCapture", NoCamera)
    with pytest.raises(SourceError, match=f"cannot open webcam {device}$"):
        next(bgr_frames(source))
    assert asked == [device]
