"""run.py: the command table, every command's help, and the wiring of ``--profiles``."""

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import evals.hw.devices
import evals.hw.profiles
import run
import stream.server
from detectors.card import MODELS_DIR
from detectors.synth.scenes import SceneOptions
from hw_sim import PROFILES

LAB = "[lab]\nfp32_gop_s = 10\nint8 = false\n"
LAB2 = "[lab2]\nint8_gop_s = 20\n"


@pytest.fixture(autouse=True)
def catalogue():
    """Profiles loaded by a test are forgotten after it."""
    before = dict(PROFILES)
    yield
    PROFILES.clear()
    PROFILES.update(before)


@pytest.fixture
def started(monkeypatch):
    """Stands in for what ``profiles``, ``eval-hw`` and ``serve`` run; records the profiles
    each would have seen."""
    seen: list[list[str]] = []

    def record(*args, **kwargs):
        seen.append(list(PROFILES))
        return 0

    for module, name in (
        (evals.hw.profiles, "run"),
        (evals.hw.devices, "eval_hw_main"),
        (stream.server, "serve"),
    ):
        monkeypatch.setattr(module, name, record)
    return seen


def _files(tmp_path, *texts):
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"p{i}.toml")
        paths[-1].write_text(text)
    return [str(p) for p in paths]


@pytest.mark.parametrize(
    "argv",
    [
        lambda a, b: ["--profiles", a, "--profiles", b, "profiles"],
        lambda a, b: ["profiles", "--profiles", a, "--profiles", b],
        lambda a, b: ["--profiles", a, "profiles", "--profiles", b],
        lambda a, b: ["profiles", "--bench", "--profiles", a, "--profiles", b],
        lambda a, b: ["--profiles", a, "eval-hw", "--profile", "low", "--profiles", b],
    ],
)
def test_profiles_files_are_read_before_or_after_the_subcommand(tmp_path, started, argv):
    a, b = _files(tmp_path, LAB, LAB2)
    assert run.main(argv(a, b)) == 0
    assert len(started) == 1 and started[0][-2:] == ["lab", "lab2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[m]\nint8_gop_s = 10\ntier = 'q'\n", "profile 'm': tier must be 'auto' or a shipped"),
        ("[j]\nint8_gop_s = 10\njitter = 5\n", "FILE: j.jitter: Input should be less than or"),
        ("[s]\nint8_gop_s = -1\n", "FILE: s.int8_gop_s: Input should be greater than or equal"),
        ("[z]\nint8_gop_s = 10\ncamera_fps = 0.5\n", "FILE: z.camera_fps: 0 (unset) or at least 1"),
    ],
)
@pytest.mark.parametrize("command", [["profiles"], ["eval-hw"], ["serve"]])
def test_a_bad_profile_file_is_one_line_and_exit_2(
    tmp_path, capsys, started, text, message, command
):
    (path,) = _files(tmp_path, text)
    assert run.main(["--profiles", path, *command]) == 2
    assert not started
    err = capsys.readouterr().err
    assert err.startswith(f"run.py: {message.replace('FILE', path)}") and err.count("\n") == 1


def test_eval_hw_passes_the_scene_flags_and_the_models_dir(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(evals.hw.devices, "eval_hw_main", lambda *args: seen.append(args[-2:]))
    run.main(["eval-hw", "--profile", "low", "--glyph-fill", "0.6:0.9", "--aimed"])
    run.main(["eval-hw", "--profile", "low", "--models-dir", str(tmp_path)])
    assert seen == [
        (SceneOptions(glyph_fill=(0.6, 0.9), aimed=True), MODELS_DIR),
        (SceneOptions(), tmp_path),
    ]


def test_eval_hw_help_names_its_options_metavars(capsys):
    with pytest.raises(SystemExit) as done:
        run.main(["eval-hw", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--profile NAME" in out and "--profiles FILE" in out and "HW_PROFILES" not in out


@pytest.mark.parametrize(
    ("flags", "field", "value"),
    [
        pytest.param([], "ice_servers", (), id="no-stun-by-default"),
        pytest.param(
            ["--ice-server", "stun:example.org:3478"],
            "ice_servers",
            ("stun:example.org:3478",),
            id="stun-given",
        ),
        pytest.param(["--turn-secret", "s"], "turn_secret", "s", id="turn-secret"),
        pytest.param(["--turn-ttl", "60"], "turn_ttl_s", 60, id="turn-ttl"),
        pytest.param(["--ice-relay-only"], "ice_relay_only", True, id="relay-only"),
        pytest.param([], "max_video_kbps", 500, id="video-limit-by-default"),
        pytest.param(["--max-video-kbps", "800"], "max_video_kbps", 800, id="video-limit-given"),
        pytest.param(["--max-video-kbps", "0"], "max_video_kbps", 0, id="no-video-limit"),
    ],
)
def test_serve_flags_reach_the_server_config(monkeypatch, flags, field, value):
    configs = []
    monkeypatch.setattr(
        stream.server, "serve", lambda _h, _p, config, *_, **__: configs.append(config)
    )
    assert run.main(["serve", *flags]) == 0
    assert [getattr(config, field) for config in configs] == [value]


def _options(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """Every argument of ``parser`` and of its own subcommands (``targets add``), by prog."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _options(sub)
        else:
            yield parser.prog, action


@pytest.mark.parametrize("name", list(run.COMMANDS))
def test_every_option_of_every_command_says_what_it_does(name):
    command = run.build_parser(name).get_default("command_parser")
    assert command.prog == f"run.py {name}"
    silent = [
        f"{prog} {'/'.join(action.option_strings) or action.dest}"
        for prog, action in _options(command)
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert silent == []


@pytest.mark.parametrize("name", list(run.COMMANDS))
def test_every_command_has_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        run.main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: run.py {name}")


def test_the_command_list_imports_no_command():
    shown = subprocess.run(
        [sys.executable, "-c", LIST_COMMANDS],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(run.__file__).parent,
    )
    help_text, imported = shown.stdout.split("\nIMPORTED")
    assert all(f"    {name}" in help_text for name in run.COMMANDS)
    assert imported.split() == []


LIST_COMMANDS = """
import contextlib, sys
import run
with contextlib.suppress(SystemExit):
    run.main(["--help"])
modules = {path for path, _ in run.COMMANDS.values()} | {"aiortc", "cv2", "onnxruntime"}
print("\\nIMPORTED", *sorted(modules & set(sys.modules)))
"""


@pytest.mark.parametrize(
    ("flags", "pinned"),
    [
        pytest.param(["--workers", "1"], False, id="unpinned-by-default"),
        pytest.param(["--workers", "1", "--pin-workers"], True, id="pinned"),
    ],
)
def test_serve_pin_workers_reaches_the_server(monkeypatch, flags, pinned):
    seen = []
    monkeypatch.setattr(
        stream.server, "serve", lambda *_, **kwargs: seen.append(kwargs["pin_workers"])
    )
    assert run.main(["serve", *flags]) == 0
    assert seen == [pinned]


def test_serve_refuses_to_pin_more_workers_than_cores(monkeypatch, capsys):
    monkeypatch.setattr(stream.server, "serve", lambda *_, **__: pytest.fail("served"))
    cores = len(os.sched_getaffinity(0))
    with pytest.raises(SystemExit) as done:
        run.main(["serve", "--workers", str(cores + 1), "--pin-workers"])
    assert done.value.code == 2
    assert f"--pin-workers: {cores + 1} workers cannot each have a core" in capsys.readouterr().err
