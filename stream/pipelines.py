"""Start-up work done once: load every model tier, make the executor, build sessions on request."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from detectors.card import list_cards
from detectors.core import Detector
from detectors.onnx_detector import OnnxDetector
from hw_sim import DeviceSimulator, get_profile
from stream.session import FrameError, Send, Session
from voting import KOfNVoter


class OptionError(FrameError):
    """A session option is unknown or has the wrong type."""


@dataclass(frozen=True, slots=True)
class SessionOptions:
    profile: str = "host"
    tier: str | None = None  # None: the tier the profile gets

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
        try:
            get_profile(profile)
        except KeyError as exc:
            raise OptionError("unknown_profile", str(exc.args[0])) from None
        return cls(profile, tier)


class Pipelines:
    """Shared, read-only resources of all sessions: the loaded detectors and one executor."""

    def __init__(self, detectors: dict[str, Detector], workers: int | None = None) -> None:
        if not detectors:
            raise RuntimeError("no detectors to serve")
        self.detectors = detectors
        self.executor = ThreadPoolExecutor(
            max_workers=workers or os.cpu_count() or 1, thread_name_prefix="infer"
        )

    @classmethod
    def from_models(cls, precision: str = "int8") -> Pipelines:
        """Load every shipped model of ``precision`` (done once, at start-up)."""
        found = [card for card in list_cards() if card.precision == precision]
        if not found:
            raise RuntimeError(f"no {precision} models found in detectors/models")
        return cls({card.tier: OnnxDetector(card) for card in found})

    def detector_for(self, tier: str) -> Detector:
        try:
            return self.detectors[tier]
        except KeyError:
            raise OptionError(
                "unknown_tier", f"unknown model tier {tier!r}; have {sorted(self.detectors)}"
            ) from None

    def open(self, options: SessionOptions, send: Send) -> Session:
        simulator = DeviceSimulator(get_profile(options.profile))
        detector = self.detector_for(options.tier or simulator.tier)
        return Session(detector, KOfNVoter(), simulator, send, self.executor)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
