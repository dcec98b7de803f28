"""Multi-frame voting: per-frame detections in, stable ``recognized`` / ``lost`` events out.

Pure and clock-free: time is the frame's media timestamp, passed to ``update``.
``make_voter(preset, **overrides)`` builds the voter a session uses.
"""

from voting.core import TrackedDetection, VoteEvent, Voter, VoteUpdate
from voting.evidence import ScoreModel, SprtThresholds
from voting.kofn import KOfNVoter
from voting.presets import PRESETS, VotingConfigError, make_config, make_voter, preset_names
from voting.sequential import SequentialConfig, SequentialVoter

__all__ = [
    "PRESETS",
    "KOfNVoter",
    "ScoreModel",
    "SequentialConfig",
    "SequentialVoter",
    "SprtThresholds",
    "TrackedDetection",
    "VoteEvent",
    "VoteUpdate",
    "Voter",
    "VotingConfigError",
    "make_config",
    "make_voter",
    "preset_names",
]
