"""The set of registered targets that all sessions share: add, remove, list, and detect.

Registering builds a new immutable :class:`TargetIndex` and swaps it in; a
``detect`` running in another thread keeps the index it started with, so
recognition never waits for a registration and never sees half of one.
Writes (disk and swap) are serialised by one lock. Registrations made by other
processes on the same store are taken in at the next ``detect`` (or ``list``):
the store's version token says when. The store is a folder (:class:`TargetStore`), or
Redis for the servers of a cluster (``stream.redis_state``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from detectors.core import Detections, ImageBGR
from detectors.objects.features import TargetError, reference_features
from detectors.objects.index import TIER, MatchConfig, Target, TargetIndex
from detectors.objects.store import TargetSource, TargetStore, check_name

log = logging.getLogger(__name__)

MAX_TARGETS = 5000
"""Most targets one server holds (``too_many_targets`` beyond)."""
MAX_IMAGES = 8
"""Most reference photos per target."""


@dataclass(frozen=True, slots=True)
class TargetInfo:
    name: str
    images: int
    keypoints: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "images": self.images, "keypoints": self.keypoints}


def _info(target: Target) -> TargetInfo:
    return TargetInfo(target.name, len(target.views), sum(len(v) for v in target.views))


class TargetRegistry:
    """Registered targets, optionally persisted in a :class:`TargetSource`; a thread-safe
    Detector.

    Args:
        store: where targets live (and what other processes registered); ``None`` keeps
            them in memory only.
        config: recognition thresholds.
        max_targets: registrations beyond this are refused.
    """

    def __init__(
        self,
        store: TargetSource | None = None,
        config: MatchConfig | None = None,
        max_targets: int = MAX_TARGETS,
    ) -> None:
        self.store = store
        self.config = config or MatchConfig()
        self.max_targets = max_targets
        self._write = threading.Lock()
        self._version = store.version() if store is not None else None
        targets = [s.target for s in store.load_all()] if store is not None else []
        self._index = TargetIndex(targets[:max_targets], self.config)
        if targets:
            log.info("loaded %d scan targets", len(targets))

    @classmethod
    def open(cls, folder: Path, config: MatchConfig | None = None) -> TargetRegistry:
        """The registry persisted in ``folder`` (created on first registration)."""
        return cls(TargetStore(folder), config)

    @property
    def tier(self) -> str:
        return TIER

    @property
    def index(self) -> TargetIndex:
        """The current immutable index (a later registration does not change it)."""
        return self._index

    def current(self) -> TargetIndex:
        """The index, with what other processes registered or removed since the last call
        taken in first (cheap when nothing changed: one version read)."""
        # A thread already reloading (or registering) has it in hand: use what is here.
        stale = self.store is not None and self.store.version() != self._version
        if stale and self._write.acquire(blocking=False):
            try:
                self._reload()
            finally:
                self._write.release()
        return self._index

    def _reload(self) -> None:
        """Load the store again if its version moved (with ``_write`` held)."""
        assert self.store is not None
        version = self.store.version()  # before loading: a change during the load shows next
        if version != self._version:
            targets = [s.target for s in self.store.load_all()]
            self._index = TargetIndex(targets[: self.max_targets], self.config)
            self._version = version

    def detect(self, image: ImageBGR) -> Detections:
        return self.current().detect(image)

    def list(self) -> list[TargetInfo]:
        return [_info(t) for t in self.current().targets]

    def add(self, name: str, images: Sequence[ImageBGR], replace: bool = False) -> TargetInfo:
        """Register ``name`` from reference photos (slow: run it off the event loop).

        Raises:
            TargetError: ``bad_name``, ``target_exists`` (unless ``replace``),
                ``too_many_targets``, ``too_many_images``, or a refusal of a photo
                (``image_too_small``, ``no_texture``, ``too_blurry``,
                ``too_few_features``, ``features_clustered``).
        """
        check_name(name)
        if not 1 <= len(images) <= MAX_IMAGES:
            raise TargetError("too_many_images", f"give 1 to {MAX_IMAGES} reference photos")
        self._check_room(name, replace)
        views = tuple(reference_features(image) for image in images)  # the slow part, unlocked
        target = Target(name, views)
        with self._write:
            if self.store is not None:
                self._reload()
            self._check_room(name, replace)
            if self.store is not None:
                self.store.save(name, list(images), views, replace)
            kept = [t for t in self._index.targets if t.name != name]
            self._index = TargetIndex([*kept, target], self.config)
        return _info(target)

    def remove(self, name: str) -> None:
        """Raises TargetError ``unknown_target`` when ``name`` is not registered."""
        with self._write:
            if self.store is not None:
                self._reload()
            if name not in self._index.names:
                raise TargetError("unknown_target", f"no target named {name!r}")
            if self.store is not None:
                self.store.remove(name)
            kept = [t for t in self._index.targets if t.name != name]
            self._index = TargetIndex(kept, self.config)

    def _check_room(self, name: str, replace: bool) -> None:
        names = self._index.names
        if name in names and not replace:
            raise TargetError("target_exists", f"a target named {name!r} exists (replace it?)")
        if name not in names and len(names) >= self.max_targets:
            raise TargetError(
                "too_many_targets", f"this server holds at most {self.max_targets} targets"
            )
