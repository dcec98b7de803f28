"""Multi-frame voting: per-frame detections in, stable ``recognized`` / ``lost`` events out.

Pure and clock-free: time is the frame's media timestamp, passed to ``update``.
"""

from voting.core import TrackedDetection, VoteEvent, Voter, VoteUpdate
from voting.kofn import KOfNVoter

__all__ = ["KOfNVoter", "TrackedDetection", "VoteEvent", "VoteUpdate", "Voter"]
