"""Object scan: recognise targets registered from a few photos, without training.

ORB features, an LSH index over every target's descriptors to shortlist
candidates, then ratio-test matching and a RANSAC homography per candidate;
see docs/object_scan.md.
"""

from detectors.objects.combined import CombinedDetector
from detectors.objects.features import TargetError
from detectors.objects.index import MatchConfig, Target, TargetIndex
from detectors.objects.registry import TargetInfo, TargetRegistry
from detectors.objects.store import TargetStore, default_dir

__all__ = [
    "CombinedDetector",
    "MatchConfig",
    "Target",
    "TargetError",
    "TargetIndex",
    "TargetInfo",
    "TargetRegistry",
    "TargetStore",
    "default_dir",
]
