"""The replay tool in-process, on a red-square detector instead of the shipped models."""

import argparse
import io
import json
import logging
from pathlib import Path

import cv2
import pytest
from fakes import RedSquareDetector, red_square_frame
from tqdm import tqdm

import clients.replay
from clients.replay import add_arguments
from clients.replay import run as replay_main
from clients.sources import bgr_frames
from stream.pipelines import Pipelines
from voting import KOfNVoter


class BrokenVoter(KOfNVoter):
    """Fails on every frame, as the voter does for a media time going backwards."""

    def update(self, *args, **kwargs):
        raise ValueError("media time went backwards")


class BrokenPipelines(Pipelines):
    def open(self, options, send, *, realtime=True):
        session = super().open(options, send, realtime=realtime)
        session.voter = BrokenVoter()
        return session


@pytest.fixture
def pipelines(monkeypatch):
    """Which pipelines replay loads (a list, so that a test can swap the class)."""
    kind = [Pipelines]
    monkeypatch.setattr(
        clients.replay.Pipelines,
        "from_models",
        lambda: kind[0]({"l": RedSquareDetector()}, workers=1),
    )
    return kind


def image_folder(path: Path, names: list[str]) -> Path:
    """A red-square frame for each name, except that one with ``corrupt`` in it is no image."""
    path.mkdir()
    for name in names:
        if "corrupt" in name:
            (path / name).write_bytes(b"\xff\xd8 not a jpeg")
        else:
            cv2.imwrite(str(path / name), red_square_frame())
    return path


@pytest.fixture
def folder(tmp_path):
    """Three red-square frames and, between them, one image that is not one."""
    return image_folder(tmp_path / "imgs", ["f0.png", "f1.png", "f2_corrupt.jpg", "f3.png"])


def parse(*argv):
    parser = argparse.ArgumentParser(prog="replay")
    add_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def replay(*argv):
    return replay_main(parse(*argv))


def test_unreadable_images_in_a_folder_are_skipped_with_a_warning_and_counted(
    pipelines, folder, tmp_path, capsys, caplog
):
    out = tmp_path / "out.jsonl"
    with caplog.at_level(logging.WARNING):
        assert replay(folder, "--fast", "--fps", 10, "--jsonl", out) == 0
    frames = [m for m in map(json.loads, out.read_text().splitlines()) if m["type"] == "frame"]
    assert [(m["frame"], m["t"]) for m in frames] == [(0, 0.0), (1, 0.1), (2, 0.3)]
    assert "skipping unreadable image" in caplog.text and "f2_corrupt.jpg" in caplog.text
    assert "skipped 1 unreadable image(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "corrupt", ["a_corrupt.jpg", "f2_corrupt.jpg", "z_corrupt.jpg"], ids=["first", "middle", "last"]
)
def test_annotating_a_folder_warns_once_and_its_progress_counts_only_readable_images(
    pipelines, tmp_path, caplog, monkeypatch, corrupt
):
    images = image_folder(tmp_path / "imgs", ["f0.png", "f1.png", "f3.png", corrupt])
    bars: list[tqdm] = []

    def shown_nowhere(*args, **kwargs):
        bars.append(tqdm(*args, **{**kwargs, "disable": False, "file": io.StringIO()}))
        return bars[-1]

    monkeypatch.setattr(clients.replay, "tqdm", shown_nowhere)
    video = tmp_path / "annotated.mp4"
    with caplog.at_level(logging.WARNING):
        status = replay(images, "--fast", "--jsonl", tmp_path / "out.jsonl", "--annotate", video)
    assert status == 0
    assert [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()] == [
        f"skipping unreadable image {images / corrupt}"
    ]
    assert [(bar.n, bar.total) for bar in bars] == [(3, 3)]
    assert len(list(bgr_frames(str(video)))) == 3


@pytest.mark.parametrize(
    ("labelled", "status", "said"),
    [
        (["a", "b"], 0, ["events", "time to decision"]),
        (["a"], 0, ["events", "time to decision", "no labels for"]),  # b: named, not scored
        (["clip.mp4"], 2, ["replay"]),
        ([], 2, ["replay"]),
    ],
    ids=["all", "some", "other-clips", "empty"],
)
def test_labels_score_the_clips_they_name_and_must_name_one(
    pipelines, tmp_path, capsys, labelled, status, said
):
    sources = [image_folder(tmp_path / name, ["f0.png"]) for name in ("a", "b")]
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({name: {"visible": [[0, 1]]} for name in labelled}))
    out = tmp_path / "out.jsonl"
    assert replay(*sources, "--fast", "--jsonl", out, "--labels", labels) == status
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == said
    if status:  # before the run: no output, no score
        assert "has no labels for any source: a, b" in lines[0] and not out.exists()


@pytest.mark.timeout(30)  # a failing session used to leave replay waiting forever
def test_a_failure_inside_frame_processing_ends_the_replay_with_exit_1(pipelines, folder, capsys):
    pipelines[0] = BrokenPipelines
    assert replay(folder, "--fast") == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "replay: frame processing failed: ValueError: media time went backwards"
    ]


@pytest.mark.parametrize("fps", ["-5", "0", "nan", "inf", "fast"])
def test_a_frame_rate_that_is_not_above_zero_is_a_usage_error(fps, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse("imgs", "--fps", fps)
    assert exit_.value.code == 2
    assert "argument --fps" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--preset", "zz"], "unknown voting preset 'zz'"),
        (["--profile", "zz"], "unknown device profile 'zz'"),
        (["--tier", "zz"], "unknown model tier 'zz'"),
        (["--jsonl", "{tmp}/nodir/x.jsonl"], "no such directory"),
        (["--jsonl", "{tmp}"], "is a directory"),
        (["--report", "{tmp}/nodir/r.html"], "--report"),
        (["--report", "{tmp}"], "is a directory"),
        (["--annotate", "{tmp}/a.xyz"], "cannot write this kind of video"),
        (["--labels", "{tmp}/labels.json"], "expected {"),
    ],
)
def test_bad_options_fail_before_the_run_with_one_line_and_exit_2(
    pipelines, folder, tmp_path, capsys, options, message
):
    (tmp_path / "labels.json").write_text(json.dumps({"imgs": [[0, 4]]}))
    out = tmp_path / "out.jsonl"
    argv = [folder, "--fast", "--jsonl", out, *(o.format(tmp=tmp_path) for o in options)]
    assert replay(*argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("replay: ") and message in line
    assert not out.exists()


@pytest.mark.parametrize("camera", ["0", "/dev/video0"])
def test_annotating_a_webcam_is_refused_before_the_camera_opens(
    pipelines, tmp_path, capsys, monkeypatch, camera
):
    monkeypatch.setattr(cv2, "VideoCapture", lambda device: pytest.fail(f"opened {device}"))
    out = tmp_path / "out.jsonl"
    assert replay(camera, "--jsonl", out, "--annotate", tmp_path / "a.mp4") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"replay: --annotate needs a recorded source, not webcam {camera}"
    assert not out.exists()


@pytest.mark.parametrize("source", ["missing.mp4", "empty_folder", "broken_folder"])
def test_a_source_that_cannot_be_read_leaves_no_output_file(pipelines, tmp_path, capsys, source):
    (tmp_path / "empty_folder").mkdir()
    (tmp_path / "broken_folder").mkdir()
    (tmp_path / "broken_folder" / "a.png").write_bytes(b"x")
    out = tmp_path / "out.jsonl"
    assert replay(tmp_path / source, "--fast", "--jsonl", out) == 2
    assert capsys.readouterr().err.startswith("replay: ")
    assert not out.exists()


def test_every_option_has_help_and_shows_its_default():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for action in parser._actions:
        assert action.help, action.dest
        if action.default not in (None, False, argparse.SUPPRESS):
            assert "default" in action.help, action.dest
