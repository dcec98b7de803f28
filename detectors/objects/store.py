"""Registered targets on disk: one folder per target with its photos, cached features and metadata.

Layout (``docs/object_scan.md``)::

    TARGETS_DIR/
      cup/
        target.json     {"format": 1, "name": "cup", "images": ["ref-0.png"], "features": "..."}
        ref-0.png       the reference photos as registered (PNG, longer side <= 1024 px)
        features.npz    cached keypoints and descriptors, per photo

A target folder is written next to its final place and renamed into it, so a
crash never leaves half a target under a valid name. Every save and removal then
counts up ``TARGETS_DIR/.version``: every process serving the folder (the workers of
``serve --workers N``, ``run.py targets add`` beside a running server) reads that
counter per frame, and loads what changed when it moves. A folder that cannot be
read (missing or corrupt metadata, unreadable photo) is logged and skipped;
cached features made by another feature version are recomputed from the photos.
"""

from __future__ import annotations

import fcntl
import io
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from detectors.core import ImageBGR
from detectors.objects.features import (
    GRID,
    REF_FEATURES,
    REF_SIDE,
    Features,
    TargetError,
    reference_features,
)
from detectors.objects.index import Target

log = logging.getLogger(__name__)

FORMAT = 1
FEATURE_VERSION = (
    f"orb-{REF_SIDE}-{'-'.join(map(str, REF_FEATURES))}-grid{GRID[0]}x{GRID[1]}-fastscore"
)
"""Changes whenever cached features would differ; older caches are recomputed on load."""
STORED_SIDE = 1024
"""Reference photos are stored shrunk to this longer side."""
ENV_VAR = "FUSCAN_TARGETS"
"""Overrides the default folder (``--targets DIR`` overrides both)."""
_NAME = re.compile(r"^[^\W_][\w\- ]{0,63}$")
RESERVED = frozenset({"fu"})
"""Labels of the built-in detector: a target may not take them."""
VERSION_FILE = ".version"
"""The change counter of a targets folder (a hidden name: never a target's folder)."""
_VERSION_WIDTH = 20


def default_dir() -> Path:
    """``$FUSCAN_TARGETS``, else ``$XDG_DATA_HOME/fuscan/targets`` (``~/.local/share/...``)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "fuscan" / "targets"


def check_name(name: str) -> None:
    """Raises TargetError ``bad_name`` unless ``name`` can be a label and a folder name."""
    if not isinstance(name, str) or not _NAME.match(name) or name != name.strip():
        raise TargetError(
            "bad_name",
            "a target name is 1-64 letters, digits, '-', '_' or spaces, starting with a "
            "letter or digit",
        )
    if name.lower() in RESERVED:
        raise TargetError("bad_name", f"{name!r} is the built-in detector's label")


@dataclass(frozen=True, slots=True)
class StoredTarget:
    target: Target
    images: int
    folder: Path | None
    """``None``: not in a folder (a database: ``stream.redis_state``)."""


class TargetSource(Protocol):
    """Where registered targets live, shared by every process that serves them: the
    :class:`TargetRegistry` of each process reads :meth:`version` per frame and, when it
    moved, loads the set again with :meth:`load_all`."""

    def version(self) -> bytes | None:
        """A token that changes whenever any process saved or removed a target (``None``:
        nothing written yet). Called per frame from inference threads: keep it cheap."""
        ...

    def load_all(self) -> list[StoredTarget]:
        """Every target, by name."""
        ...

    def save(
        self, name: str, images: list[ImageBGR], views: tuple[Features, ...], replace: bool
    ) -> object:
        """Write target ``name``, then move :meth:`version`.

        Raises:
            TargetError: ``target_exists`` when another process stored ``name`` and not
                ``replace``; ``store_unavailable`` when a shared store cannot be reached.
            OSError: the store refused the write.
        """
        ...

    def remove(self, name: str) -> None:
        """Delete target ``name``, then move :meth:`version`."""
        ...


class TargetStore:
    """Reads and writes the targets folder: a :class:`TargetSource`. Writes within one
    process are serialised by the registry; processes write different folders atomically."""

    def __init__(self, root: Path) -> None:
        """Raises TargetError ``bad_folder`` when ``root`` is a file or lies under one."""
        existing = next(p for p in (root, *root.absolute().parents) if p.exists())
        if not existing.is_dir():
            raise TargetError("bad_folder", f"{existing} is a file, not a targets folder")
        self.root = root
        self._version_fd: int | None = None
        self._opening = threading.Lock()
        self._loaded: dict[str, tuple[tuple[int, ...], StoredTarget]] = {}

    def version(self) -> bytes | None:
        """The folder's change counter, read without reopening it (one ``pread``)."""
        if self._version_fd is None:
            with self._opening:
                if self._version_fd is None:
                    try:
                        self._version_fd = os.open(self.root / VERSION_FILE, os.O_RDONLY)
                    except FileNotFoundError:
                        return None
        return os.pread(self._version_fd, _VERSION_WIDTH, 0)

    def _count_change(self) -> None:
        """Count one change in the version file (in place, under an ``flock``: concurrent
        writers in several processes each add their one)."""
        fd = os.open(self.root / VERSION_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            count = int(os.pread(fd, _VERSION_WIDTH, 0) or b"0")
            os.pwrite(fd, str(count + 1).zfill(_VERSION_WIDTH).encode(), 0)
        finally:
            os.close(fd)  # drops the lock too

    def load_all(self) -> list[StoredTarget]:
        """Every readable target, by name; unreadable folders are logged and skipped. A folder
        unchanged since this store last loaded it is not read again."""
        if not self.root.is_dir():
            return []
        found: list[StoredTarget] = []
        loaded: dict[str, tuple[tuple[int, ...], StoredTarget]] = {}
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            try:
                stamp = _stamp(folder)
                cached = self._loaded.get(folder.name)
                target = cached[1] if cached and cached[0] == stamp else self.load(folder)
                loaded[folder.name] = (_stamp(folder), target)
                found.append(target)
            except Exception as exc:  # any bad folder is skipped, never fatal
                log.warning("skipping target folder %s: %s", folder, exc)
        self._loaded = loaded
        return found

    def load(self, folder: Path) -> StoredTarget:
        """One target folder.

        Raises:
            ValueError, OSError, KeyError: the folder is not a valid target.
        """
        meta = json.loads((folder / "target.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"unknown format {meta.get('format')!r}")
        name = meta["name"]
        check_name(name)
        if name != folder.name:
            raise ValueError(f"folder name differs from target name {name!r}")
        images = [str(n) for n in meta["images"]]
        if not images:
            raise ValueError("no reference images")
        views = None
        if meta.get("features") == FEATURE_VERSION:
            views = _read_features(folder / "features.npz", len(images))
        if views is None:
            log.info("target %r: computing features (%s)", name, FEATURE_VERSION)
            views = tuple(reference_features(_read_image(folder / n)) for n in images)
            _write_features(folder, views)
            meta["features"] = FEATURE_VERSION
            _write_json(folder / "target.json", meta)
        return StoredTarget(Target(name, views), len(images), folder)

    def save(
        self, name: str, images: list[ImageBGR], views: tuple[Features, ...], replace: bool = True
    ) -> Path:
        """Write (or, with ``replace``, replace) target ``name`` atomically; returns its folder.

        Raises:
            TargetError: ``target_exists`` when the folder holds ``name`` and not ``replace``
                (another process registered it since this one loaded the folder).
        """
        if not replace and (self.root / name).exists():
            raise TargetError("target_exists", f"a target named {name!r} exists (replace it?)")
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=self.root))
        try:
            files = []
            for i, image in enumerate(images):
                file = f"ref-{i}.png"
                (staging / file).write_bytes(encode_photo(image))
                files.append(file)
            _write_features(staging, views)
            meta = {"format": FORMAT, "name": name, "images": files, "features": FEATURE_VERSION}
            _write_json(staging / "target.json", meta)
            final = self.root / name
            if final.exists():
                old = final.with_name(f".{name}.old")
                shutil.rmtree(old, ignore_errors=True)
                final.rename(old)
                staging.rename(final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                staging.rename(final)
            self._count_change()
            self._loaded[name] = (
                _stamp(final),
                StoredTarget(Target(name, views), len(files), final),
            )
            return final
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def remove(self, name: str) -> None:
        check_name(name)
        shutil.rmtree(self.root / name)
        self._count_change()


def _stamp(folder: Path) -> tuple[int, ...]:
    """What changes when a target folder is replaced or its metadata rewritten."""
    meta = (folder / "target.json").stat()
    return (meta.st_ino, meta.st_mtime_ns, meta.st_ctime_ns, meta.st_size)


def encode_photo(image: ImageBGR) -> bytes:
    """A reference photo as stored: PNG, shrunk to :data:`STORED_SIDE` on its longer side."""
    scale = STORED_SIDE / max(image.shape[:2])
    if scale < 1:
        image = np.asarray(
            cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        )
    ok, blob = cv2.imencode(".png", image)
    if not ok:
        raise OSError("cannot encode a reference photo as PNG")
    return bytes(blob.tobytes())


def decode_photo(data: bytes, name: str) -> ImageBGR:
    """A stored reference photo; raises ``ValueError`` naming ``name`` when it is not one."""
    array = np.frombuffer(data, np.uint8)
    image = cv2.imdecode(array, cv2.IMREAD_COLOR) if array.size else None
    if image is None:
        raise ValueError(f"cannot read image {name}")
    return np.asarray(image, np.uint8)


def _read_image(path: Path) -> ImageBGR:
    return decode_photo(path.read_bytes(), path.name)


def _write_json(path: Path, value: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)


def pack_features(views: tuple[Features, ...]) -> bytes:
    """``views`` as one ``.npz`` blob (:func:`unpack_features` reads it back)."""
    arrays: dict[str, np.ndarray] = {}
    for i, view in enumerate(views):
        arrays[f"points_{i}"] = view.points
        arrays[f"descriptors_{i}"] = view.descriptors
        arrays[f"size_{i}"] = np.array([view.width, view.height], np.int32)
    out = io.BytesIO()
    np.savez(out, allow_pickle=False, **arrays)
    return out.getvalue()


def _write_features(folder: Path, views: tuple[Features, ...]) -> None:
    (folder / "features.npz").write_bytes(pack_features(views))


def _read_features(path: Path, count: int) -> tuple[Features, ...] | None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("feature cache %s unreadable (%s): recomputing", path, exc)
        return None
    return unpack_features(data, count, str(path))


def unpack_features(blob: bytes, count: int, source: str) -> tuple[Features, ...] | None:
    """``count`` views from a :func:`pack_features` blob, or ``None`` when it is damaged or
    does not fit (then recompute them from the photos); ``source`` names it in the log."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            views = []
            for i in range(count):
                points = np.asarray(data[f"points_{i}"], np.float32)
                descriptors = np.asarray(data[f"descriptors_{i}"], np.uint8)
                width, height = (int(v) for v in data[f"size_{i}"])
                if points.shape != (len(descriptors), 2) or descriptors.shape[1:] != (32,):
                    return None
                views.append(Features(points, descriptors, width, height))
            return tuple(views)
    except Exception as exc:  # BadZipFile, EOFError, OSError, KeyError...: recompute
        log.warning("feature cache %s unreadable (%s): recomputing", source, exc)
        return None
