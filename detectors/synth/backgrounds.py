"""Background photos for synthetic scenes, split into training and held-out evaluation sets.

The photos are the sample images that scikit-image ships (no download). Where
scikit-image is not installed (the GPU machine), a pack written by
``python -m detectors.synth.backgrounds --pack PATH`` stands in for it.
"""

from __future__ import annotations

import argparse
import os
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import ImageBGR

TRAIN_PHOTOS = (
    "astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png",
    "coins.png", "color.png", "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png",
    "moon.png", "page.png", "retina.jpg", "text.png",
)  # fmt: skip
EVAL_PHOTOS = ("coffee.png", "motorcycle_left.png", "rocket.jpg")
PACK_ENV = "FUSCAN_BACKGROUND_PACK"
"""If set, the path of a background pack to read instead of scikit-image's files."""
_MAX_SIDE = 640


def _skimage_dir() -> Path:
    import skimage.data

    return Path(skimage.data.__file__).resolve().parent


def _read_photo(path: Path) -> ImageBGR:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise FileNotFoundError(f"cannot read background photo {path}")
    scale = _MAX_SIDE / max(image.shape[:2])
    if scale < 1:
        image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(image)


def _decode(blob: npt.NDArray[np.uint8]) -> ImageBGR:
    return np.asarray(cv2.imdecode(blob, cv2.IMREAD_COLOR), np.uint8)


@lru_cache(maxsize=2)
def load_photos(split: str) -> tuple[ImageBGR, ...]:
    """The background photos of ``split`` ("train" or "eval") as BGR images, longer side <= 640.

    Raises:
        ValueError: ``split`` is neither "train" nor "eval".
    """
    names = {"train": TRAIN_PHOTOS, "eval": EVAL_PHOTOS}.get(split)
    if names is None:
        raise ValueError(f"split must be 'train' or 'eval', not {split!r}")
    pack = os.environ.get(PACK_ENV)
    if pack:
        with np.load(pack) as blobs:
            return tuple(_decode(blobs[name]) for name in names)
    root = _skimage_dir()
    return tuple(_read_photo(root / name) for name in names)


def write_pack(path: Path) -> None:
    """Write every photo, JPEG-compressed, to one ``.npz`` for machines without scikit-image."""
    root = _skimage_dir()
    blobs = {}
    for name in TRAIN_PHOTOS + EVAL_PHOTOS:
        ok, blob = cv2.imencode(".jpg", _read_photo(root / name), [cv2.IMWRITE_JPEG_QUALITY, 80])
        if not ok:
            raise RuntimeError(f"cannot encode {name}")
        blobs[name] = blob
    np.savez(path, allow_pickle=False, **blobs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pack", type=Path, required=True, help="output .npz")
    write_pack(parser.parse_args(argv).pack)


if __name__ == "__main__":
    main()
