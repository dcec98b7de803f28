"""``python run.py eval-targets``: precision, recall and per-frame cost of object scan.

1. Make ``--targets`` synthetic products (photo crops, rendered covers; see
   :mod:`detectors.objects.synth`) and register each the way the server does;
   references the server would refuse are counted and left out.
2. Make one clip of every registered product (perspective, drift, blur,
   lighting, partial occlusion, natural background; visible for the whole
   clip, at least 1 s), one clip of its unregistered look-alike, and
   background-only clips.
3. Run every frame through the target index and a fresh voter
   (``voting.make_voter(--preset)``, set up as a session on the ``--tier``
   福 model sets it up) per clip. A clip of product P is
   recalled when P is ``recognized``; every ``recognized`` event with another
   label, and every one in a look-alike or background clip, is a false one.
4. Time the per-frame cost on one OpenCV thread with 10, 100 and 1000
   registered targets, split into description, shortlist and verification.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from detectors.card import ModelCard, find_card
from detectors.core import Detections, ImageBGR
from detectors.objects.features import (
    FRAME_FEATURES,
    TargetError,
    frame_features,
    reference_features,
    to_gray,
)
from detectors.objects.index import Target, TargetIndex, inlier_score
from detectors.objects.synth import Product, cover_product, make_clip, make_products
from voting import make_voter


@dataclass(slots=True)
class Outcome:
    clips: int = 0
    recalled: int = 0
    true_events: int = 0
    false_events: int = 0
    frames: int = 0
    frames_detected: int = 0  # frames with the right label detected (positives)
    frames_false: int = 0  # frames with a wrong label detected
    right_inliers: list[int] = field(default_factory=list)
    wrong_inliers: list[int] = field(default_factory=list)


def register(products: Sequence[Product]) -> tuple[list[Target], Counter[str]]:
    """The products the server would accept as targets, and a count of refusals by code."""
    targets: list[Target] = []
    refused: Counter[str] = Counter()
    for product in products:
        try:
            views = (reference_features(product.image),)
        except TargetError as exc:
            refused[exc.code] += 1
            continue
        targets.append(Target(product.name, views))
    return targets, refused


def run_clip(
    index: TargetIndex,
    frames: Sequence[ImageBGR],
    expected: str | None,
    fps: float,
    preset: str,
    card: ModelCard,
) -> Outcome:
    # The voter a session on ``card``'s model builds: targets on the object-scan curve.
    voter = make_voter(preset, card.threshold, card.classes, card.vote)
    out = Outcome(clips=1, frames=len(frames))
    for i, frame in enumerate(frames):
        found = index.recognise(frame)
        detections = Detections(
            tuple(v.detection() for v in found), frame=(frame.shape[1], frame.shape[0])
        )
        labels = {d.label for d in detections}
        for v in found:
            (out.right_inliers if v.name == expected else out.wrong_inliers).append(v.inliers)
        out.frames_detected += expected in labels
        out.frames_false += bool(labels - {expected})
        for event in voter.update(detections, i / fps).events:
            if event.event != "recognized":
                continue
            if event.label == expected:
                out.true_events += 1
                out.recalled = 1
            else:
                out.false_events += 1
    return out


def _add(total: Outcome, one: Outcome) -> None:
    for name in Outcome.__slots__:  # ints add up, lists concatenate
        setattr(total, name, getattr(total, name) + getattr(one, name))


def accuracy(
    n_targets: int,
    frames: int,
    fps: float,
    preset: str,
    card: ModelCard,
    backgrounds: int,
    seed: int,
) -> int:
    products = make_products(n_targets)
    targets, refused = register(products)
    index = TargetIndex(targets)
    registered = {t.name for t in targets}
    print(
        f"products {len(products)}, registered {len(targets)}, refused {sum(refused.values())}"
        f" {dict(refused)}; {index.descriptor_count} descriptors"
    )
    kinds = {"target": Outcome(), "look-alike": Outcome(), "background": Outcome()}
    misses: list[str] = []
    false: list[str] = []
    for i, product in enumerate(products):
        if product.name not in registered:
            continue
        for kind, image, expected in (
            ("target", product.image, product.name),
            ("look-alike", product.look_alike, None),
        ):
            clip = make_clip(seed + 2 * i + (kind != "target"), image, frames)
            one = run_clip(index, clip.frames, expected, fps, preset, card)
            _add(kinds[kind], one)
            if kind == "target" and not one.recalled:
                misses.append(f"{product.name} ({one.frames_detected}/{one.frames} frames)")
            if one.false_events:
                false.append(f"{kind}:{product.name}")
    for j in range(backgrounds):
        clip = make_clip(seed + 100_000 + j, None, frames)
        one = run_clip(index, clip.frames, None, fps, preset, card)
        _add(kinds["background"], one)
        if one.false_events:
            false.append(f"background:{j}")
    print(
        f"\nvoting preset {preset!r} as a session on tier {card.tier} sets it up,"
        f" {frames} frames per clip at {fps:g} fps"
    )
    print("| clips | n | recognized right | recognized wrong | frames detected | frames wrong |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind, o in kinds.items():
        print(
            f"| {kind} | {o.clips} | {o.true_events} | {o.false_events} |"
            f" {o.frames_detected / max(1, o.frames):.1%} |"
            f" {o.frames_false / max(1, o.frames):.2%} |"
        )
    true_events = sum(o.true_events for o in kinds.values())
    false_events = sum(o.false_events for o in kinds.values())
    target = kinds["target"]
    precision = true_events / max(1, true_events + false_events)
    recall = target.recalled / max(1, target.clips)
    print(
        f"\nprecision {precision:.2%}"
        f" ({true_events}/{true_events + false_events} recognized events),"
        f" recall {recall:.2%} ({target.recalled}/{target.clips} target clips)"
    )
    right = [n for o in kinds.values() for n in o.right_inliers]
    wrong = [n for o in kinds.values() for n in o.wrong_inliers]
    print("\nper-frame detections by homography inliers (score calibration)")
    print("| inliers | right | wrong | score |")
    print("| --- | ---: | ---: | ---: |")
    edges = (0, 14, 17, 20, 25, 35, 50, 100, 10_000)
    for lo, hi in itertools.pairwise(edges):
        r = sum(lo <= n < hi for n in right)
        w = sum(lo <= n < hi for n in wrong)
        if r or w:
            print(f"| {lo}-{hi - 1} | {r} | {w} | {inlier_score(lo, index.config):.2f} |")
    if misses:
        print("missed:", ", ".join(misses))
    if false:
        print("false recognitions:", " ".join(false))
    return 0 if precision >= 0.995 and recall >= 0.95 else 1


def _timed_frames(count: int, seed: int) -> list[tuple[str, ImageBGR]]:
    """One frame of each of the first ``count`` products, with the product's name."""
    products = make_products(count)
    return [(p.name, make_clip(seed + i, p.image, 1).frames[0]) for i, p in enumerate(products)]


def cost(sizes: Sequence[int], n_frames: int, seed: int) -> None:
    """Per-frame cost on one thread for each index size in ``sizes``.

    The frames show the first products, registered in every index; "target
    found" counts the single frames in which they were recognised (no voting).
    """
    cv2.setNumThreads(1)
    frames = _timed_frames(n_frames, seed)
    largest = max(sizes)
    base = make_products(min(largest, 100))
    extra = [cover_product(s) for s in range(10_000, 10_000 + largest - len(base))]
    targets, _ = register([*base, *extra])
    print(f"\nper-frame cost, 640x480, cv2.setNumThreads(1), {len(frames)} frames, ms")
    print("(wall clock; 'CPU' is this thread's CPU time, less sensitive to a busy machine)")
    print(
        "| targets | descriptors | describe | shortlist | verify | total mean | total p95 |"
        " CPU mean | target found |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        index = TargetIndex(targets[:size])
        parts: dict[str, list[float]] = {
            "describe": [],
            "shortlist": [],
            "verify": [],
            "total": [],
            "cpu": [],
        }
        found = expected = 0
        for name, frame in frames:
            c0, t0 = time.thread_time(), time.perf_counter()
            features = frame_features(frame)
            c1, t1 = time.thread_time(), time.perf_counter()
            index.shortlist(features)
            c2, t2 = time.thread_time(), time.perf_counter()
            seen = index.recognise(frame, features)  # shortlist again + verify
            c3, t3 = time.thread_time(), time.perf_counter()
            if name in index.names:
                expected += 1
                found += any(v.name == name for v in seen)
            parts["describe"].append(t1 - t0)
            parts["shortlist"].append(t2 - t1)
            parts["verify"].append(max(0.0, (t3 - t2) - (t2 - t1)))
            parts["total"].append(t1 - t0 + t3 - t2)
            parts["cpu"].append(c1 - c0 + c3 - c2)
        ms = {k: [v * 1000 for v in vs] for k, vs in parts.items()}
        p95 = float(np.percentile(ms["total"], 95))
        print(
            f"| {size} | {index.descriptor_count} | {statistics.mean(ms['describe']):.1f} |"
            f" {statistics.mean(ms['shortlist']):.1f} | {statistics.mean(ms['verify']):.1f} |"
            f" {statistics.mean(ms['total']):.1f} | {p95:.1f} |"
            f" {statistics.mean(ms['cpu']):.1f} | {found}/{expected} |"
        )


def feature_cost(seed: int) -> None:
    """ORB against SIFT on one 640x480 frame, one thread."""
    cv2.setNumThreads(1)
    gray = to_gray(_timed_frames(1, seed)[0][1])
    print("\ndescribing one 640x480 frame, one thread, ms (median of 5)")
    print("| features | keypoints | ms |")
    print("| --- | ---: | ---: |")
    for name, make in (
        (f"ORB {FRAME_FEATURES}", lambda: cv2.ORB.create(nfeatures=FRAME_FEATURES)),
        (f"SIFT {FRAME_FEATURES}", lambda: cv2.SIFT.create(nfeatures=FRAME_FEATURES)),
    ):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            keypoints, _ = make().detectAndCompute(gray, None)
            times.append(time.perf_counter() - t0)
        print(f"| {name} | {len(keypoints)} | {statistics.median(times) * 1000:.1f} |")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--targets", type=int, default=100, help="products to register")
    parser.add_argument("--frames", type=int, default=30, help="frames per clip")
    parser.add_argument("--fps", type=float, default=15.0, help="the clips' frame rate")
    parser.add_argument("--backgrounds", type=int, default=25, help="background-only clips")
    parser.add_argument("--preset", default="balanced", help="voting preset")
    parser.add_argument(
        "--tier", default="l", help="the 福 model whose session's voter is used (int8)"
    )
    parser.add_argument("--seed", type=int, default=7000, help="seed of the products and clips")
    parser.add_argument("--cost-sizes", default="10,100,1000", help="'' skips the cost table")
    parser.add_argument(
        "--cost-frames", type=int, default=30, help="frames timed per size, cost table"
    )
    parser.add_argument(
        "--skip-accuracy", action="store_true", help="only the cost tables, no clips scored"
    )


def run(args: argparse.Namespace) -> int:
    status = 0
    if not args.skip_accuracy:
        status = accuracy(
            args.targets,
            args.frames,
            args.fps,
            args.preset,
            find_card(args.tier),
            args.backgrounds,
            args.seed,
        )
    if args.cost_sizes:
        feature_cost(args.seed)
        cost([int(s) for s in args.cost_sizes.split(",")], args.cost_frames, args.seed)
    return status
