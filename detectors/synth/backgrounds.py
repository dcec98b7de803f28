"""Background photos for synthetic scenes, split into training and held-out evaluation sets.

The photos are the sample images that scikit-image ships (no download) and, for
training, wallpapers of six Debian packages: the nature photos of
``mate-backgrounds`` (close-ups of flowers, leaves and grass, colourful where
scikit-image's are mostly grey or microscopic), the photos and gradients of
``plasma-workspace-wallpapers`` (warm autumn leaves, boats, cups, forest, sea),
the bright abstract art of ``ukui-wallpapers``, Ubuntu's photos in
``lomiri-wallpapers-16.04`` and ``-20.04`` (mountains, a bridge, a fig, brushes, a
living room, a bird on a tree) and the patterns of ``gnome-backgrounds`` (tiles,
wood, cubes): 103 photos in all. More kinds of photo lift recall of 福 on held-out
ones; the gains and their costs are in CHANGELOG.md.

Evaluation draws from six held-out photos: scikit-image's ``coffee``,
``motorcycle_left`` and ``rocket``; since 2026-12-05 also scikit-learn's two sample
photos and one painting of ``mate-backgrounds`` that training does not use. Where
any photo is not installed (the GPU machine), a pack written by ``python -m
detectors.synth.backgrounds --pack PATH`` stands in.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import ImageBGR

SKIMAGE_TRAIN_PHOTOS = (
    "astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png",
    "coins.png", "color.png", "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png",
    "moon.png", "page.png", "retina.jpg", "text.png",
)  # fmt: skip
NATURE_PHOTOS = (
    "Aqua.jpg", "Blinds.jpg", "Dune.jpg", "FreshFlower.jpg", "Garden.jpg", "GreenMeadow.jpg",
    "LadyBird.jpg", "RainDrops.jpg", "Storm.jpg", "TwoWings.jpg", "Wood.jpg", "YellowFlower.jpg",
)  # fmt: skip
PLASMA_WALLPAPERS = {
    "Altai": "5120x2880.png", "Autumn": "2560x1600.jpg", "BytheWater": "2560x1600.jpg",
    "Canopee": "3840x2160.png", "Cascade": "3840x2160.png", "Cluster": "3840x2160.png",
    "ColdRipple": "2560x1600.jpg", "ColorfulCups": "2560x1600.jpg",
    "DarkestHour": "2560x1600.jpg", "Elarun": "2560x1600.png", "EveningGlow": "2560x1600.jpg",
    "FallenLeaf": "2560x1600.jpg", "Flow": "5120x2880.jpg", "FlyingKonqui": "2560x1600.png",
    "Grey": "2560x1600.jpg", "Honeywave": "5120x2880.jpg", "IceCold": "5120x2880.png",
    "Kay": "5120x2880.png", "Kite": "2560x1600.jpg", "Kokkini": "3840x2160.png",
    "MilkyWay": "5120x2880.png", "OneStandsOut": "2560x1600.jpg", "Opal": "3840x2160.png",
    "PastelHills": "3200x2000.jpg", "Patak": "5120x2880.png", "Path": "2560x1600.jpg",
    "SafeLanding": "5120x2880.jpg", "Shell": "5120x2880.jpg", "Volna": "5120x2880.jpg",
    "summer_1am": "2560x1600.jpg",
}  # fmt: skip
"""Each Plasma wallpaper's largest landscape image (``WALLPAPER/contents/images/SIZE``)."""
UKUI_WALLPAPERS = (
    "2004default.jpg", "calla.png", "city.png", "desert.png", "firstgeneration.jpg",
    "fluent-color.png", "focal-ubuntukylin.png", "goldfish.png", "rhythm.jpg", "rollpaper.png",
    "string.jpg", "the-mouse.jpg",
)  # fmt: skip
LOMIRI_WALLPAPERS = {
    "lomiri-wallpapers-16.04": (
        "Bridge_by_Sander_Klootwijk.jpg", "Dragonfly_by_Bolly.jpg", "Picture_0B_by_freespace.jpg",
        "Picture_1A_by_freespace.jpg", "Wine_by_Jakkub_Mede.jpg",
        "aitzgorri_by_Aitzol_Berasategi.jpg", "analogpattern_by_Peter_Nerlich.jpg",
        "free_by_Peter_Nerlich.jpg", "friends_by_Aitzol_Berasategi.jpg",
        "greentock_by_Peter_Nerlich.jpg", "life_by_Aitzol_Berasategi.jpg",
        "picosdeeuropa_by_Aitzol_Berasategi.jpg", "seeding_by_Clements_Engelhardt.jpg",
        "sunset_by_Aitzol_Berasategi.jpg", "umang_by_Abhishek_Mudgal.jpg",
    ),
    "lomiri-wallpapers-20.04": (
        "Fossa_by_Jasper_Roks.jpg", "Infinite-Sea_by_Aury88.jpg", "Kleiber_by_Lukas_Baubkus.jpg",
        "Painting-Colors_by__herobrine7gamer.jpg",
    ),
}  # fmt: skip
"""Ubuntu's wallpapers of 2016 and 2020 as Debian packages them for Lomiri, by package."""
GNOME_WALLPAPERS = tuple(
    f"{name}-{shade}.webp"
    for name in ("adwaita", "grid", "licorice", "pixels", "symbolic", "truchet", "wood")
    for shade in "ld"
)
"""GNOME 43's bitmap wallpapers, each in its light and dark shade."""
DEBIAN_PHOTOS: dict[str, tuple[str, Path]] = {
    **{
        name: ("mate-backgrounds", Path("/usr/share/backgrounds/mate/nature", name))
        for name in NATURE_PHOTOS
    },
    **{
        f"plasma-{name}": (
            "plasma-workspace-wallpapers",
            Path("/usr/share/wallpapers", name, "contents/images", size),
        )
        for name, size in PLASMA_WALLPAPERS.items()
    },
    **{
        f"ukui-{name}": ("ukui-wallpapers", Path("/usr/share/backgrounds", name))
        for name in UKUI_WALLPAPERS
    },
    **{
        f"lomiri-{name}": (package, Path("/usr/share/backgrounds", name))
        for package, names in LOMIRI_WALLPAPERS.items()
        for name in names
    },
    **{
        f"gnome-{name}": ("gnome-backgrounds", Path("/usr/share/backgrounds/gnome", name))
        for name in GNOME_WALLPAPERS
    },
}
"""Training photos by name: the Debian package that holds each (``make test`` installs them)
and its path."""
TRAIN_PHOTOS = SKIMAGE_TRAIN_PHOTOS + tuple(DEBIAN_PHOTOS)
SKLEARN_PHOTOS = ("china.jpg", "flower.jpg")
"""The two sample photos inside the scikit-learn wheel (``sklearn/datasets/images``): a red
and green pagoda over a lake, and a dahlia before dark leaves."""
EVAL_DEBIAN_PHOTOS = {
    "mate-Elephants.jpg": (
        "mate-backgrounds",
        Path("/usr/share/backgrounds/mate/abstract/Elephants.jpg"),
    ),
}
"""Held-out photos of the Debian packages that training draws from: a busy blue painting of
elephants (MATE's abstract wallpapers; training takes only its nature photos)."""
EVAL_PHOTOS = (
    "coffee.png",
    "motorcycle_left.png",
    "rocket.jpg",
    *SKLEARN_PHOTOS,
    *EVAL_DEBIAN_PHOTOS,
)
"""Held-out photos: three of scikit-image's and, since 2026-12-05, three more (before, a
detector's misses came mostly from two of three photos, so every measured rate leaned on them)."""
PHOTO_SETS = {"train": TRAIN_PHOTOS, "eval": EVAL_PHOTOS, "objects": SKIMAGE_TRAIN_PHOTOS}
"""Photo names by split; object scan cuts its products from "objects" (things, not close-ups
of grass), which are training photos too."""
PACK_ENV = "FUSCAN_BACKGROUND_PACK"
"""If set, the path of a background pack to read instead of scikit-image's files."""
_MAX_SIDE = 640


def _skimage_dir() -> Path:
    import skimage.data

    return Path(skimage.data.__file__).resolve().parent


def _sklearn_images() -> Path:
    # Found, not imported: importing scikit-learn takes SciPy with it.
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("cannot find scikit-learn's sample photos (install scikit-learn)")
    return Path(spec.origin).parent / "datasets" / "images"


def _photo_file(name: str) -> tuple[Path, str]:
    """Where photo ``name`` is, and what to install when it is not there."""
    debian = DEBIAN_PHOTOS.get(name) or EVAL_DEBIAN_PHOTOS.get(name)
    if debian is not None:
        package, path = debian
        return path, f"Debian's {package}"
    if name in SKLEARN_PHOTOS:
        return _sklearn_images() / name, "scikit-learn"
    return _skimage_dir() / name, "scikit-image"


def _read_photo(name: str) -> ImageBGR:
    path, source = _photo_file(name)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise FileNotFoundError(f"cannot read background photo {path} (install {source})")
    scale = _MAX_SIDE / max(image.shape[:2])
    if scale < 1:
        image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(image)


def _decode(blob: npt.NDArray[np.uint8]) -> ImageBGR:
    return np.asarray(cv2.imdecode(blob, cv2.IMREAD_COLOR), np.uint8)


@lru_cache(maxsize=len(PHOTO_SETS))
def load_photos(split: str) -> tuple[ImageBGR, ...]:
    """The photos of ``split`` (a key of :data:`PHOTO_SETS`) as BGR images, longer side <= 640.

    Raises:
        ValueError: ``split`` is not a key of :data:`PHOTO_SETS`.
    """
    names = PHOTO_SETS.get(split)
    if names is None:
        raise ValueError(f"split must be one of {', '.join(PHOTO_SETS)}, not {split!r}")
    pack = os.environ.get(PACK_ENV)
    if pack:
        with np.load(pack) as blobs:
            missing = [name for name in names if name not in blobs.files]
            if missing:  # a pack written before the photo was added
                raise FileNotFoundError(
                    f"background pack {pack} lacks {', '.join(missing)}: write it again "
                    "with python -m detectors.synth.backgrounds --pack PATH"
                )
            return tuple(_decode(blobs[name]) for name in names)
    return tuple(_read_photo(name) for name in names)


def write_pack(path: Path) -> None:
    """Write every photo, JPEG-compressed, to one ``.npz`` for machines without scikit-image."""
    blobs = {}
    for name in TRAIN_PHOTOS + EVAL_PHOTOS:
        photo = _read_photo(name)
        ok, blob = cv2.imencode(".jpg", photo, [cv2.IMWRITE_JPEG_QUALITY, 80])
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
