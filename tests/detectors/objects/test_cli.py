import argparse
import errno

import cv2
import pytest
from object_scenes import covers

from detectors.objects import TargetStore
from detectors.objects.cli import add_arguments
from detectors.objects.cli import run as targets_main


def _parser():
    parser = argparse.ArgumentParser(prog="targets")
    add_arguments(parser)
    return parser


def _run(argv):
    return targets_main(_parser().parse_args(argv))


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "cover.png"
    cv2.imwrite(str(path), covers()[0].image)
    return str(path)


@pytest.mark.parametrize(
    ("argv", "folder"),
    [
        (["list"], None),
        (["--targets", "a", "list"], "a"),
        (["list", "--targets", "b"], "b"),
        (["--targets", "a", "remove", "cup", "--targets", "b"], "b"),
        (["add", "cup", "x.jpg", "--replace", "--targets", "b"], "b"),
    ],
)
def test_targets_folder_is_accepted_before_or_after_the_action(argv, folder):
    args = _parser().parse_args(argv)
    assert (str(args.targets) if args.targets else None) == folder


def test_add_list_remove_round_trip(tmp_path, photo, capsys):
    folder = str(tmp_path / "targets")
    assert _run(["--targets", folder, "add", "cup", photo]) == 0
    assert _run(["--targets", folder, "list"]) == 0
    assert "1 target(s)" in capsys.readouterr().out
    assert _run(["--targets", folder, "remove", "cup"]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--targets", "{file}", "list"], "bad_folder: {file} is a file"),
        (["--targets", "{file}", "add", "cup", "{photo}"], "bad_folder: {file} is a file"),
        (["--targets", "{file}/sub/dir", "add", "cup", "{photo}"], "bad_folder: {file} is a"),
        (["--targets", "{dir}", "remove", "nope"], "unknown_target: no target named 'nope'"),
        (["--targets", "{dir}", "add", "cup", "{file}"], "bad_image: cannot read an image"),
        (["--targets", "{dir}", "add", "fu", "{photo}"], "bad_name"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(tmp_path, photo, capsys, argv, message):
    names = {"file": tmp_path / "clip.mp4", "dir": tmp_path / "targets", "photo": photo}
    names["file"].write_bytes(b"not a folder")
    assert _run([a.format(**names) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert not out and err.count("\n") == 1
    assert err.startswith("targets: error ") and message.format(**names) in err
    assert not (tmp_path / "targets").exists()


def test_a_folder_that_cannot_be_written_is_one_line_and_exit_1(
    tmp_path, photo, capsys, monkeypatch
):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TargetStore, "save", full)
    assert _run(["--targets", str(tmp_path), "add", "cup", photo]) == 1
    assert capsys.readouterr().err == "targets: [Errno 28] No space left on device\n"


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], "the following arguments are required: ACTION"),
        (["add", "-h"], "photos of its flat face"),
        (["add", "-h"], "the label its detections carry"),
        (["remove", "-h"], "as `list` shows it"),
    ],
)
def test_usage_names_the_action_and_explains_the_arguments(capsys, argv, shown):
    with pytest.raises(SystemExit):
        _parser().parse_args(argv)
    captured = capsys.readouterr()
    assert shown in captured.out + captured.err
