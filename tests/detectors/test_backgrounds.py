import numpy as np
import pytest

from detectors.synth import backgrounds
from detectors.synth.backgrounds import (
    DEBIAN_PHOTOS,
    EVAL_DEBIAN_PHOTOS,
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
    # by file too: the held-out wallpapers come from packages that training reads
    training_files = {path for _, path in DEBIAN_PHOTOS.values()}
    assert not training_files & {path for _, path in EVAL_DEBIAN_PHOTOS.values()}
    assert len(set(EVAL_PHOTOS)) == len(EVAL_PHOTOS)
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


def test_a_pack_written_before_a_photo_was_added_says_to_write_it_again(tmp_path, monkeypatch):
    pack = tmp_path / "old.npz"
    np.savez(pack, **{name: np.zeros(1, np.uint8) for name in EVAL_PHOTOS[:3]})
    monkeypatch.setenv(PACK_ENV, str(pack))
    with pytest.raises(FileNotFoundError, match=r"lacks china\.jpg, flower\.jpg, .*write it again"):
        load_photos("eval")


def test_an_unknown_split_is_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        load_photos("test")


def _missing_wallpaper(photos):
    def patch(monkeypatch, tmp_path):
        name = next(iter(photos))
        monkeypatch.setitem(photos, name, ("some-wallpapers", tmp_path / "x.jpg"))

    return patch


def _missing_sample_photo_folder(module_dir):
    def patch(monkeypatch, tmp_path):
        monkeypatch.setattr(backgrounds, module_dir, lambda: tmp_path)

    return patch


def _scikit_learn_not_installed(monkeypatch, tmp_path):
    monkeypatch.setattr(backgrounds.importlib.util, "find_spec", lambda name: None)


@pytest.mark.parametrize(
    ("split", "make_missing", "hint"),
    [
        ("train", _missing_wallpaper(DEBIAN_PHOTOS), r"x\.jpg \(install Debian's some-wall"),
        ("eval", _missing_wallpaper(EVAL_DEBIAN_PHOTOS), r"x\.jpg \(install Debian's some-wall"),
        (
            "eval",
            _missing_sample_photo_folder("_skimage_dir"),
            r"coffee\.png \(install scikit-image\)",
        ),
        (
            "eval",
            _missing_sample_photo_folder("_sklearn_images"),
            r"china\.jpg \(install scikit-learn\)",
        ),
        ("eval", _scikit_learn_not_installed, r"sample photos \(install scikit-learn\)"),
    ],
)
def test_a_missing_photo_names_what_to_install(monkeypatch, tmp_path, split, make_missing, hint):
    make_missing(monkeypatch, tmp_path)
    with pytest.raises(FileNotFoundError, match=hint):
        load_photos(split)
