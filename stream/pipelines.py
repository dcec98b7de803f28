"""Start-up work done once: load every model tier, make the executor, build sessions on request."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from detectors.card import MODELS_DIR, list_cards
from detectors.core import Detector
from detectors.objects import CombinedDetector, TargetRegistry
from detectors.objects.features import FRAME_SIDE
from detectors.onnx_detector import OnnxDetector
from hw_sim import DeviceSimulator, ModelChoiceError, ModelSpec, choose_model, get_profile
from stream.prefork import usable_cores
from stream.session import FrameError, Send, Session, ViewSide
from voting import VotingConfigError, make_voter


class OptionError(FrameError):
    """A session option is unknown or has the wrong type."""


@dataclass(frozen=True, slots=True)
class SessionOptions:
    profile: str = "host"
    tier: str | None = None  # None: the tier the profile gets
    seed: int = 0  # seed of the emulated device's latency jitter
    preset: str = "balanced"  # voting preset: strict, balanced, fast or kofn
    voting: dict[str, Any] = field(default_factory=dict)  # overrides of the preset's fields

    @classmethod
    def from_json(cls, raw: dict[str, Any], default_profile: str) -> SessionOptions:
        """Validate client-supplied options.

        Raises:
            OptionError: an option has the wrong type or an unknown value.
        """
        profile = raw.get("profile", default_profile)
        tier = raw.get("tier")
        if not isinstance(profile, str):
            raise OptionError("bad_option", "profile must be a string")
        if tier is not None and not isinstance(tier, str):
            raise OptionError("bad_option", "tier must be a string or null")
        seed = raw.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise OptionError("bad_option", "seed must be an integer")
        try:
            get_profile(profile)
        except KeyError as exc:
            raise OptionError("unknown_profile", str(exc.args[0])) from None
        preset = raw.get("preset", "balanced")
        voting = raw.get("voting", {})
        if not isinstance(preset, str):
            raise OptionError("bad_option", "preset must be a string")
        if not isinstance(voting, dict):
            raise OptionError("bad_option", "voting must be an object")
        try:
            make_voter(preset, **voting)  # checks names, types and ranges
        except VotingConfigError as exc:
            raise OptionError(exc.code, str(exc)) from None
        return cls(profile, tier, seed, preset, dict(voting))


class Pipelines:
    """Shared, read-only resources of all sessions: the loaded detectors and one executor."""

    def __init__(
        self,
        detectors: dict[str, Detector],
        workers: int | None = None,
        models: Sequence[tuple[ModelSpec, Detector]] = (),
        precision: str = "int8",
        targets: TargetRegistry | None = None,
    ) -> None:
        """Share ``detectors`` (tier -> detector of ``precision``) among sessions.

        Args:
            models: every loaded model with the spec hw_sim chooses by. Without
                them, each detector counts as a model of 0 MACs: emulated
                profiles then cost only their fixed per-frame time.
            targets: registered scan targets, recognised in every session's
                frames next to the model's classes; ``None``: none.
        """
        if not detectors:
            raise RuntimeError("no detectors to serve")
        self.detectors = detectors
        self.models = dict(models) or {
            ModelSpec(tier, precision, macs=0): det for tier, det in detectors.items()
        }
        self.precision = precision
        self.targets = targets
        self.executor = ThreadPoolExecutor(
            max_workers=workers or usable_cores(), thread_name_prefix="infer"
        )

    @classmethod
    def from_models(
        cls,
        precision: str = "int8",
        targets: TargetRegistry | None = None,
        models_dir: Path = MODELS_DIR,
        threads: int | None = None,
    ) -> Pipelines:
        """Load every model in ``models_dir`` (done once, at start-up; default: the shipped
        ones); ``precision`` serves the host; ``threads`` run inference (default: one per core
        it may use).

        Emulated profiles get the build their profile asks for (int8 or fp32).
        """
        cards = list_cards(models_dir)
        if not any(card.precision == precision for card in cards):
            raise RuntimeError(f"no {precision} models found in {models_dir}")
        for card in cards:  # a card's vote fields fail here, at start-up, not in a session
            try:
                make_voter("balanced", card.threshold, card.classes, card.vote)
            except VotingConfigError as exc:
                raise RuntimeError(f"bad vote fields in {card.path}: {exc}") from None
        loaded = [(ModelSpec.from_card(card), OnnxDetector(card)) for card in cards]
        primary: dict[str, Detector] = {
            spec.tier: det for spec, det in loaded if spec.precision == precision
        }
        return cls(primary, threads, models=loaded, precision=precision, targets=targets)

    def detector_for(self, tier: str) -> Detector:
        try:
            return self.detectors[tier]
        except KeyError:
            raise OptionError(
                "unknown_tier", f"unknown model tier {tier!r}; have {sorted(self.detectors)}"
            ) from None

    def simulator_for(self, options: SessionOptions) -> tuple[DeviceSimulator, Detector]:
        """The emulated device and the detector a session with ``options`` gets.

        Raises:
            OptionError: unknown profile or tier.
        """
        try:
            profile = get_profile(options.profile)
        except KeyError as exc:
            raise OptionError("unknown_profile", str(exc.args[0])) from None
        try:
            choice = choose_model(profile, self.models, options.tier, self.precision)
        except ModelChoiceError as exc:
            raise OptionError("unknown_tier", str(exc)) from None
        return DeviceSimulator(profile, choice.spec, options.seed), self.models[choice.spec]

    def open(self, options: SessionOptions, send: Send, *, realtime: bool = True) -> Session:
        """A session for one client; ``realtime=False`` runs as fast as the host allows."""
        simulator, detector = self.simulator_for(options)
        # The model's labels are weighed relative to its own threshold, every other
        # label (a registered target) on the object-scan curve (docs/voting.md).
        model = detector.model
        side = view_side(detector, self.targets)
        if self.targets is not None:
            detector = CombinedDetector(detector, self.targets)
        if model is None:
            voter = make_voter(options.preset, **options.voting)
        else:
            voter = make_voter(
                options.preset, model.threshold, model.classes, model.vote, **options.voting
            )
        return Session(
            detector, voter, simulator, send, self.executor, realtime=realtime, view_side=side
        )

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


def view_side(detector: Detector, targets: TargetRegistry | None) -> ViewSide | None:
    """The longest frame side a session with ``detector`` (and ``targets``) can use.

    The model letterboxes into its input; object scan describes frames at up to
    ``FRAME_SIDE`` pixels, but only while a target is registered. Any other detector:
    ``None`` (frames decoded at full size).
    """
    if detector.model is None:
        return None
    side = detector.model.input_side
    if targets is None:
        return lambda: side
    return lambda: max(side, FRAME_SIDE) if targets.current().targets else side
