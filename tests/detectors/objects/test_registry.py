import json
import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from object_scenes import PERSPECTIVE, covers, frame_with

from detectors.objects import TargetError, TargetRegistry, TargetStore
from detectors.objects.store import ENV_VAR, FEATURE_VERSION, default_dir


def _registry(folder, **kwargs):
    return TargetRegistry(TargetStore(folder), **kwargs)


def test_targets_survive_a_restart_with_the_same_features(tmp_path):
    first = _registry(tmp_path)
    for product in covers()[:3]:
        first.add(product.name, [product.image])
    again = _registry(tmp_path)
    assert sorted(t.name for t in again.list()) == sorted(p.name for p in covers()[:3])
    before = {t.name: t.views[0] for t in first.index.targets}
    for target in again.index.targets:
        np.testing.assert_array_equal(target.views[0].descriptors, before[target.name].descriptors)
        np.testing.assert_allclose(target.views[0].points, before[target.name].points)
    assert (
        again.detect(frame_with(covers()[1].image, PERSPECTIVE)).items[0].label == covers()[1].name
    )


def _corrupt_json(folder):
    (folder / "target.json").write_text("{not json", encoding="utf-8")


def _missing_image(folder):
    (folder / "ref-0.png").unlink()
    meta = json.loads((folder / "target.json").read_text(encoding="utf-8"))
    meta["features"] = "an older version"  # forces a recompute from the (missing) photo
    (folder / "target.json").write_text(json.dumps(meta), encoding="utf-8")


def _renamed(folder):
    folder.rename(folder.with_name("someone-else"))


def _unknown_format(folder):
    meta = json.loads((folder / "target.json").read_text(encoding="utf-8"))
    (folder / "target.json").write_text(json.dumps({**meta, "format": 99}), encoding="utf-8")


@pytest.mark.parametrize("damage", [_corrupt_json, _missing_image, _renamed, _unknown_format])
def test_a_corrupt_target_folder_is_logged_and_skipped(tmp_path, caplog, damage):
    registry = _registry(tmp_path)
    good, bad = covers()[:2]
    registry.add(good.name, [good.image])
    registry.add(bad.name, [bad.image])
    damage(tmp_path / bad.name)
    with caplog.at_level(logging.WARNING, logger="detectors.objects.store"):
        again = _registry(tmp_path)
    assert [t.name for t in again.list()] == [good.name]
    assert "skipping target folder" in caplog.text


@pytest.mark.parametrize("damage", ["truncate", "old_version"])
def test_a_bad_feature_cache_is_recomputed_from_the_photos(tmp_path, damage):
    product = covers()[0]
    _registry(tmp_path).add(product.name, [product.image])
    folder = tmp_path / product.name
    if damage == "truncate":
        (folder / "features.npz").write_bytes(b"PK\x03\x04 broken")
    else:
        meta = json.loads((folder / "target.json").read_text(encoding="utf-8"))
        (folder / "target.json").write_text(json.dumps({**meta, "features": "orb-old"}))
    again = _registry(tmp_path)
    assert [t.name for t in again.list()] == [product.name]
    assert json.loads((folder / "target.json").read_text())["features"] == FEATURE_VERSION


def test_stray_files_and_hidden_folders_are_ignored(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / ".cup.tmp").mkdir()
    assert _registry(tmp_path).list() == []


@pytest.mark.parametrize(
    ("name", "code"),
    [("", "bad_name"), ("../etc", "bad_name"), (".hidden", "bad_name"), ("fu", "bad_name"),
     ("a/b", "bad_name"), (" padded", "bad_name"), ("x" * 65, "bad_name")],
)  # fmt: skip
def test_bad_names_are_refused(tmp_path, name, code):
    with pytest.raises(TargetError) as refused:
        _registry(tmp_path).add(name, [covers()[0].image])
    assert refused.value.code == code
    assert not any(tmp_path.iterdir())


def test_a_name_is_taken_once_unless_replaced(tmp_path):
    registry = _registry(tmp_path)
    first, second = covers()[:2]
    registry.add("book", [first.image])
    with pytest.raises(TargetError) as refused:
        registry.add("book", [second.image])
    assert refused.value.code == "target_exists"
    registry.add("book", [second.image], replace=True)
    assert [t.name for t in registry.list()] == ["book"]
    assert registry.detect(frame_with(second.image, PERSPECTIVE)).items[0].label == "book"
    assert len(registry.detect(frame_with(first.image, PERSPECTIVE))) == 0
    # No staging left over; the version counter tells other processes of each change.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".version", "book"]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda r: r.remove("nothing"), "unknown_target"),
        (lambda r: r.add("two", [covers()[1].image]), "too_many_targets"),
        (lambda r: r.add("many", [covers()[1].image] * 9), "too_many_images"),
        (lambda r: r.add("one", [np.full((200, 200, 3), 90, np.uint8)], True), "no_texture"),
    ],
)
def test_registry_refusals_have_stable_codes(tmp_path, call, code):
    registry = _registry(tmp_path, max_targets=1)
    registry.add("one", [covers()[0].image])
    with pytest.raises(TargetError) as refused:
        call(registry)
    assert refused.value.code == code
    assert [t.name for t in registry.list()] == ["one"]


def test_remove_forgets_on_disk_and_in_memory(tmp_path):
    registry = _registry(tmp_path)
    registry.add("one", [covers()[0].image])
    registry.remove("one")
    assert registry.list() == [] and not (tmp_path / "one").exists()
    assert _registry(tmp_path).list() == []


def test_detect_in_threads_while_registering_sees_whole_indexes_only():
    registry = TargetRegistry()  # in memory
    frame = frame_with(covers()[0].image, PERSPECTIVE)
    with ThreadPoolExecutor(2) as pool:
        seen = pool.map(registry.detect, [frame] * 8)
        for product in covers()[:4]:
            registry.add(product.name, [product.image])
        results = list(seen)
    assert all(d.label == covers()[0].name for found in results for d in found)
    assert registry.detect(frame).items[0].label == covers()[0].name


def test_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "mine"))
    assert default_dir() == tmp_path / "mine"
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_dir() == tmp_path / "fuscan" / "targets"


def test_registrations_through_one_registry_reach_another_on_the_same_folder(tmp_path):
    """As the workers of one server: each has its own registry over the one folder."""
    first, second = _registry(tmp_path), _registry(tmp_path)
    cover, other = covers()[:2]
    first.add(cover.name, [cover.image])
    frame = frame_with(cover.image, PERSPECTIVE)
    assert [d.label for d in second.detect(frame).items] == [cover.name]  # its next frame
    second.add(other.name, [other.image])
    with pytest.raises(TargetError, match="exists"):
        second.add(cover.name, [cover.image])  # it knows first's target before it checks
    second.remove(cover.name)
    assert [t.name for t in first.list()] == [other.name]
    assert first.detect(frame).items == ()


def test_an_unchanged_folder_is_not_read_again(tmp_path, monkeypatch):
    first, second = _registry(tmp_path), _registry(tmp_path)
    for product in covers()[:2]:
        first.add(product.name, [product.image])
    second.list()
    loads = []
    monkeypatch.setattr(second.store, "load", lambda folder: loads.append(folder.name))
    second.list()  # nothing changed: no listing, no load
    first.remove(covers()[0].name)
    assert [t.name for t in second.list()] == [covers()[1].name]
    assert loads == []  # the one left was loaded before
