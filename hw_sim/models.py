"""Which model a device runs: the most accurate tier that fits its per-frame budget.

Works on :class:`ModelSpec`, the few numbers of a model card the simulator
needs, so that tests and tools need no ONNX files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from detectors.card import ModelCard
from hw_sim.profiles import AUTO_TIER, DeviceProfile, ProfileError

ACCURACY_KEYS = ("ap50", "map50", "AP50", "mAP50", "ap", "map", "mAP", "f1", "accuracy")
"""Card ``metrics`` keys read as accuracy, first found wins (higher is better)."""
ACCURACY_TOLERANCE = 0.01
"""Accuracies closer than this count as equal, and the larger model wins among them. A card's
figure is per frame on a few hundred scenes: fine-tunes that vote alike move it by this much
and swap the order of tiers (run 23: ``m`` INT8 0.988, ``l`` INT8 0.982; run 15 the other way
round), so a smaller tier must be clearly more accurate to be chosen over a larger one."""

TIER_ORDER = ("xs", "s", "m", "l", "xl")
WORKSPACE_FACTOR = 4.0
"""Memory a model needs, as a multiple of its weights (activations, runtime buffers)."""


class ModelChoiceError(ValueError):
    """No model can serve the request (none shipped, or an unknown tier asked for)."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the simulator needs to know of one shipped model."""

    tier: str
    precision: str
    macs: int
    params: int = 0
    accuracy: float | None = None

    @classmethod
    def from_card(cls, card: ModelCard) -> ModelSpec:
        return cls(card.tier, card.precision, card.macs, card.params, card_accuracy(card))

    @property
    def int8(self) -> bool:
        return self.precision == "int8"

    @property
    def memory_mb(self) -> float:
        bytes_per_weight = 1 if self.int8 else 4
        return self.params * bytes_per_weight * WORKSPACE_FACTOR / 2**20

    def nominal_latency(self, profile: DeviceProfile, runs: float = 1.0) -> float:
        """Seconds per frame on ``profile`` at full speed, without jitter.

        ``runs * 2 * MACs / effective ops per second + fixed pre-processing cost``:
        a two-pass detector runs the network once more per close-up.
        """
        compute = 2.0 * self.macs / (profile.gop_s(self.int8) * 1e9)
        return profile.preprocess_ms / 1000.0 + runs * compute


def card_accuracy(card: ModelCard) -> float | None:
    """The card's accuracy figure, if its ``metrics`` hold one under a known key."""
    for key in ACCURACY_KEYS:
        value = card.metrics.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _size(spec: ModelSpec) -> tuple[int, int]:
    """Sort key, bigger last: MACs, then the tier's place in :data:`TIER_ORDER`."""
    order = TIER_ORDER.index(spec.tier) if spec.tier in TIER_ORDER else len(TIER_ORDER)
    return spec.macs, order


def _most_accurate(specs: list[ModelSpec]) -> ModelSpec:
    """The most accurate of ``specs``: the biggest of those within :data:`ACCURACY_TOLERANCE`
    of the best accuracy known; where none is known, the biggest."""
    known = [s.accuracy for s in specs if s.accuracy is not None]
    if known:
        best = max(known)
        specs = [
            s for s in specs if s.accuracy is not None and s.accuracy >= best - ACCURACY_TOLERANCE
        ]
    return max(specs, key=_size)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a session runs, and why."""

    spec: ModelSpec
    latency: float | None  # nominal emulated seconds per frame; None for pass-through
    fits: bool  # within the profile's frame budget and memory
    reason: str


def choose_model(
    profile: DeviceProfile,
    specs: Iterable[ModelSpec],
    tier: str | None = None,
    host_precision: str = "int8",
) -> ModelChoice:
    """Pick the model for ``profile``.

    The precision is the profile's (``int8`` or not; ``host_precision`` for a
    pass-through profile), falling back to the other build when a tier has
    only one. The tier is ``tier`` when given (a per-session override), else
    the profile's fixed tier, else the most accurate tier whose nominal
    latency fits the profile's budget and whose weights fit ``memory_mb``; when
    none fits, the fastest.

    Raises:
        ModelChoiceError: no specs, ``tier`` is not shipped, or the profile has no
            speed figure for the only build(s) it could run.
    """
    specs = list(specs)
    if not specs:
        raise ModelChoiceError("no models to choose from")
    precision = profile.precision if profile.emulated else host_precision
    by_tier: dict[str, ModelSpec] = {}
    for spec in sorted(specs, key=lambda s: s.precision == precision):
        by_tier[spec.tier] = spec  # the wanted precision, if shipped, overwrites the other
    wanted = tier or (profile.tier if profile.tier != AUTO_TIER else None)
    if wanted is not None:
        if wanted not in by_tier:
            raise ModelChoiceError(f"unknown model tier {wanted!r}; have {sorted(by_tier)}")
        spec = by_tier[wanted]
        if not _has_speed(profile, spec):
            raise ModelChoiceError(
                f"tier {wanted} ships only {spec.precision}, and profile {profile.name!r} "
                f"has no {spec.precision}_gop_s"
            )
        source = "session override" if tier else "fixed by the profile"
        return _judge(profile, spec, f"tier {wanted} {source}")
    # A build of the other precision can only be emulated if the profile knows its speed.
    candidates = [s for s in by_tier.values() if _has_speed(profile, s)]
    if not candidates:
        raise ModelChoiceError(
            f"profile {profile.name!r} has a speed for no shipped build "
            f"({sorted({s.precision for s in specs})})"
        )
    if not profile.emulated:
        return _judge(profile, _most_accurate(candidates), "pass-through: the most accurate tier")
    fitting = [s for s in candidates if _judge(profile, s, "").fits]
    if fitting:
        return _judge(profile, _most_accurate(fitting), "the most accurate tier within the budget")
    fastest = min(candidates, key=lambda s: s.nominal_latency(profile))
    return _judge(profile, fastest, "no tier fits the budget: the fastest")


def check_tiers(profiles: Iterable[DeviceProfile], specs: Iterable[ModelSpec]) -> None:
    """Refuse a profile whose fixed tier is not shipped; with no specs nothing can be checked.

    Profile files are read without model files, so their tiers are checked here, once the
    shipped models are known, rather than by every session that picks the profile.

    Raises:
        ProfileError: naming the profile, its tier and the shipped ones.
    """
    shipped = {spec.tier for spec in specs}
    for profile in profiles:
        if shipped and profile.tier not in shipped | {AUTO_TIER}:
            raise ProfileError(
                f"profile {profile.name!r}: tier must be {AUTO_TIER!r} or a shipped tier "
                f"{sorted(shipped)}, got {profile.tier!r}"
            )


def _has_speed(profile: DeviceProfile, spec: ModelSpec) -> bool:
    return not profile.emulated or profile.gop_s(spec.int8) > 0


def _judge(profile: DeviceProfile, spec: ModelSpec, reason: str) -> ModelChoice:
    if not profile.emulated:
        return ModelChoice(spec, None, True, reason)
    latency = spec.nominal_latency(profile)
    in_time = profile.budget_ms <= 0 or latency * 1000 <= profile.budget_ms
    in_memory = profile.memory_mb <= 0 or spec.memory_mb <= profile.memory_mb
    return ModelChoice(spec, latency, in_time and in_memory, reason)
