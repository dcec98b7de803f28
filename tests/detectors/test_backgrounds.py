from pathlib import Path

import numpy as np
import pytest

from detectors.synth import backgrounds
from detectors.synth.backgrounds import (
    DEBIAN_PHOTOS,
    EVAL_PHOTOS,
    PACK_ENV,
    PHOTO_SETS,
    TRAIN_PHOTOS,
    load_photos,
    write_pack,
)


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.delenv(PACK_ENV, raising=False)
    load_photos.cache_clear()
    yield
    load_photos.cache_clear()


def test_training_and_held_out_photos_do_not_overlap():
    assert not set(TRAIN_PHOTOS) & set(EVAL_PHOTOS)
    assert len(set(TRAIN_PHOTOS)) == len(TRAIN_PHOTOS)
    assert {package for package, _ in DEBIAN_PHOTOS.values()} == {
        "mate-backgrounds",
        "plasma-workspace-wallpapers",
        "ukui-wallpapers",
        "lomiri-wallpapers-16.04",
        "lomiri-wallpapers-20.04",
        "gnome-backgrounds",
    }


@pytest.mark.parametrize("split", sorted(PHOTO_SETS))
def test_every_photo_of_a_split_is_read_in_colour_at_most_640_px(split):
    photos = load_photos(split)
    assert len(photos) == len(PHOTO_SETS[split])
    for photo in photos:
        assert photo.dtype == np.uint8 and photo.ndim == 3 and photo.shape[2] == 3
        assert max(photo.shape[:2]) <= 640
        assert photo.std() > 0  # not a blank page: the file was decoded


def test_a_pack_stands_in_for_the_photo_files(tmp_path, monkeypatch):
    pack = tmp_path / "pack.npz"
    write_pack(pack)
    files = load_photos("eval")
    monkeypatch.setenv(PACK_ENV, str(pack))
    load_photos.cache_clear()
    packed = load_photos("eval")
    assert [p.shape for p in packed] == [p.shape for p in files]
    for a, b in zip(packed, files, strict=True):
        # JPEG at quality 80: close, not equal
        assert np.abs(a.astype(np.int16) - b).mean() < 6
    with np.load(pack) as blobs:
        assert set(blobs.files) == set(TRAIN_PHOTOS + EVAL_PHOTOS)


def test_an_unknown_split_is_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        load_photos("test")


def test_a_missing_wallpaper_names_the_package_to_install(monkeypatch):
    name = next(iter(DEBIAN_PHOTOS))
    monkeypatch.setitem(DEBIAN_PHOTOS, name, ("some-wallpapers", Path("/nonexistent/x.jpg")))
    with pytest.raises(FileNotFoundError, match="install Debian's some-wallpapers"):
        load_photos("train")


def test_a_missing_scikit_image_photo_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(backgrounds, "_skimage_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match=r"coffee\.png$"):
        load_photos("eval")
