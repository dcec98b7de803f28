"""``python run.py targets add NAME IMAGE... | list | remove NAME``: manage scan targets on disk.

The server loads the same folder at start-up (``serve --targets DIR``); a
running server does not see CLI changes until restarted (register through the
websocket API to update a running one).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np

from detectors.core import ImageBGR
from detectors.objects.features import TargetError
from detectors.objects.registry import TargetRegistry
from detectors.objects.store import ENV_VAR, default_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--targets",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"targets folder (default: ${ENV_VAR} or ~/.local/share/fuscan/targets)",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="register a target from one or more reference photos")
    add.add_argument("name")
    add.add_argument("images", nargs="+", type=Path)
    add.add_argument("--replace", action="store_true", help="replace a target of that name")
    actions.add_parser("list", help="registered targets")
    remove = actions.add_parser("remove", help="forget a target")
    remove.add_argument("name")


def read_image(path: Path) -> ImageBGR:
    """Raises TargetError ``bad_image`` when ``path`` is not a readable image."""
    data = np.fromfile(str(path), np.uint8) if path.is_file() else np.zeros(0, np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise TargetError("bad_image", f"cannot read an image from {path}")
    return np.asarray(image, np.uint8)


def targets_main(args: argparse.Namespace) -> int:
    folder = args.targets or default_dir()
    registry = TargetRegistry.open(folder)
    try:
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
        print(f"error {exc.code}: {exc}")
        return 1
    return 0
