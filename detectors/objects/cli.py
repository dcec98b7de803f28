"""``python run.py targets add NAME IMAGE... | list | remove NAME``: manage scan targets on disk.

The server loads the same folder at start-up (``serve --targets DIR``); a
running server does not see CLI changes until restarted (register through the
websocket API to update a running one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

from detectors.core import ImageBGR
from detectors.objects.features import TargetError
from detectors.objects.registry import MAX_IMAGES, TargetRegistry
from detectors.objects.store import ENV_VAR, default_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_folder_option(parser, None)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="register a target from one or more reference photos")
    add.add_argument("name", help="the label its detections carry, e.g. 'blue cup'")
    add.add_argument(
        "images", nargs="+", type=Path, help=f"1 to {MAX_IMAGES} photos of its flat face"
    )
    add.add_argument("--replace", action="store_true", help="replace a target of that name")
    listed = actions.add_parser("list", help="registered targets")
    remove = actions.add_parser("remove", help="forget a target")
    remove.add_argument("name", help="the target's name, as `list` shows it")
    for action in (add, listed, remove):
        # SUPPRESS: when not given after the action, the one before it (or none) stays.
        add_folder_option(action, argparse.SUPPRESS)


def add_folder_option(parser: argparse.ArgumentParser, default: str | None) -> None:
    """``--targets DIR``, accepted before the action and after it."""
    parser.add_argument(
        "--targets",
        type=Path,
        default=default,
        metavar="DIR",
        help=f"targets folder (default: ${ENV_VAR} or ~/.local/share/fuscan/targets)",
    )


def read_image(path: Path) -> ImageBGR:
    """Raises TargetError ``bad_image`` when ``path`` is not a readable image."""
    data = np.fromfile(str(path), np.uint8) if path.is_file() else np.zeros(0, np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise TargetError("bad_image", f"cannot read an image from {path}")
    return np.asarray(image, np.uint8)


def run(args: argparse.Namespace) -> int:
    """Exit status 2 for bad input (as argparse), 1 when the folder cannot be used."""
    folder = args.targets or default_dir()
    try:
        registry = TargetRegistry.open(folder)
        if args.action == "add":
            info = registry.add(args.name, [read_image(p) for p in args.images], args.replace)
            print(f"registered {info.name!r}: {info.images} photo(s), {info.keypoints} keypoints")
            print(f"in {folder / info.name}")
        elif args.action == "list":
            listed = registry.list()
            print(f"{len(listed)} target(s) in {folder}")
            for item in listed:
                print(f"  {item.name}  ({item.images} photo(s), {item.keypoints} keypoints)")
        elif args.action == "remove":
            registry.remove(args.name)
            print(f"removed {args.name!r}")
    except TargetError as exc:
        print(f"targets: error {exc.code}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # permissions, a full disk
        print(f"targets: {exc}", file=sys.stderr)
        return 1
    return 0
