"""Train the slimmable 福 supernet on generated scenes (all tiers at once).

Every step follows the sandwich rule over the three tiers: the widest at full
size learns from the labels, the others from the labels and, where they run at
its input size, from its outputs (in-place distillation). The smallest tier
runs at half the input side (``model.INPUT_SCALE``) and learns from the labels
of the shrunk scenes. Each tier keeps its own batch-norm statistics.

With ``--shift-weight``, every step also runs each tier on a copy of the
batch moved by a fraction of a pixel to a few pixels, and pulls each 福's
peak score in the weaker of the two views up to the stronger's: a 福 should
not be found in one frame and lost in the next because the camera moved by a
pixel (``eval-model --shift-stability`` measures it). With
``--hold-down-weight``, away from the 福 the mirror: each peak's score in
the stronger view is pulled down to the weaker's, so that what the
detector finds on a look-alike in one view only does not last to be voted on.

With ``--teacher``, the tiers named by ``--teacher-tiers`` also learn from
that frozen supernet's same tiers (distillation): a retrain for one tier can
hold the shipped others near what was measured and tuned for them, while the
weights they share with it move. With ``--teacher-off-target`` as well, only
away from the labelled 福: a retrain that is to find 福 the teacher misses
(bare ink, say: ``--bare-ink-share``) is held near it on everything else.

With ``--hard-share``, that share of every batch is drawn again from the
scenes seen so far, in proportion to how hard the widest tier found each one
the last time (its focal loss per labelled 福, ``HardScenes``): what the
detector scores near 0 is shown until it is found, instead of as often as
any easy scene.

The learning rate warms up over ``--warmup`` steps, then follows a cosine to
zero over ``--minutes`` (or ``--max-steps``, whichever ends first). A run
longer than one sitting allows is cut into parts: ``--stop-at 0.5`` ends
this part half-way through its schedule, and ``--continue-from`` on the saved
checkpoint picks up the schedule and the optimizer where it stopped
(``--resume`` would warm up and decay again from the start).

GPU:  python -m detectors.train.train --device cuda --images 120000 --minutes 5 --workers 16
CPU:  python -m detectors.train.train --device cpu --images 4000 --minutes 60 --workers 2
Two parts of one 16-minute schedule, new scenes in the second:
      python -m detectors.train.train --minutes 16 --stop-at 0.5 --seed 1000000 --out a
      python -m detectors.train.train --continue-from a/supernet.pt --seed 2000000 --out b
"""

from __future__ import annotations

import argparse
import math
import shlex
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from detectors.synth.scenes import (
    SceneOptions,
    add_scene_arguments,
    scene_options,
    share_argument,
)
from detectors.train.model import BOX_SCALE, INPUT_SCALE, TIERS, FuNet, output_size, scaled_size
from detectors.train.targets import PEAK_HEAT, generate_parallel

KD_WEIGHT = 1.0
GIOU_WEIGHT = 2.0
L1_WEIGHT = 0.2
SCALES = tuple(sorted(set(INPUT_SCALE.values()), reverse=True))
"""Input scales the tiers run at; scenes are rendered at the first (1.0) and shrunk."""
SCHEDULE_FLAGS = {
    "lr": (3e-3, "peak learning rate"),
    "warmup": (300, "warm-up steps"),
    "minutes": (5.0, "training time budget"),
    "max_steps": (30_000, "step budget"),
}
"""The schedule's flags: default and meaning. ``--continue-from`` takes them from the checkpoint."""


@dataclass(frozen=True)
class Schedule:
    """Warm-up, then a cosine to zero over a time budget or a step budget, whichever ends first.

    It is measured in steps and seconds taken since it began, over every part
    of a run cut into parts (``--stop-at``, ``--continue-from``).
    """

    lr: float
    warmup: int
    minutes: float
    max_steps: int

    def progress(self, steps: int, seconds: float) -> float:
        return max(steps / self.max_steps, seconds / (self.minutes * 60))

    def lr_at(self, steps: int, seconds: float) -> float:
        warm = min(1.0, (steps + 1) / self.warmup)
        decay = 0.5 * (1 + math.cos(math.pi * min(self.progress(steps, seconds), 1.0)))
        return self.lr * warm * decay


def _fu_count(targets: torch.Tensor) -> torch.Tensor:
    """The number of labelled 福 in a batch of targets, at least 1: what the losses that sum
    over cells are divided by."""
    return targets[:, 0].ge(PEAK_HEAT).sum().clamp(min=1)


def focal_terms(logits: torch.Tensor, heat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """CenterNet's penalty-reduced focal loss of each image, summed over its cells, and the
    number of peaks of each image."""
    pos = heat.ge(PEAK_HEAT).float()
    p = torch.sigmoid(logits)
    pos_loss = -F.logsigmoid(logits) * (1 - p) ** 2 * pos
    neg_loss = -F.logsigmoid(-logits) * p**2 * (1 - heat) ** 4 * (1 - pos)
    return (pos_loss + neg_loss).flatten(1).sum(1), pos.flatten(1).sum(1)


def focal_loss(logits: torch.Tensor, heat: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss, normalised by the number of peaks."""
    per_image, peaks = focal_terms(logits, heat)
    return per_image.sum() / peaks.sum().clamp(min=1)


def scene_hardness(logits: torch.Tensor, heat: torch.Tensor) -> torch.Tensor:
    """How hard each scene is for a tier: its focal loss per labelled 福 (per scene without one)."""
    per_image, peaks = focal_terms(logits.detach().float(), heat)
    return per_image / peaks.clamp(min=1)


class HardScenes:
    """Which scenes to show again: each scene's hardness the last time the widest tier saw it.

    ``--hard-share`` of every batch is drawn in proportion to hardness (the rest
    uniformly), so a 福 the detector scores near 0 comes back until it is found,
    and a look-alike it fires on until it is not. A scene drawn for its hardness
    keeps half of what it scores then: one that stays hard (a 福 no one could
    see, say) loses its claim geometrically instead of filling the batches.
    """

    def __init__(self, count: int, device: torch.device) -> None:
        self.hardness = torch.zeros(count, device=device)

    def draw(self, ready: int, size: int, share: float) -> tuple[torch.Tensor, int]:
        """``size`` indices among the first ``ready`` scenes, the hard ones first, and how many
        of them were drawn for their hardness (none before any scene was scored)."""
        weights = self.hardness[:ready]
        hard = round(size * share) if share > 0 and bool(weights.sum() > 0) else 0
        uniform = torch.randint(0, ready, (size - hard,), device=weights.device)
        if not hard:
            return uniform, 0
        return torch.cat([torch.multinomial(weights, hard, replacement=True), uniform]), hard

    def remember(self, idx: torch.Tensor, hardness: torch.Tensor, hard: int) -> None:
        """Record the hardness the scenes ``idx`` scored; the first ``hard`` were replays."""
        kept = hardness.clone()
        kept[:hard] *= 0.5
        self.hardness[idx] = kept


def giou_loss(pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Weighted 1 - GIoU of ltrb boxes that share their cell centre; all in pixels."""
    pl, pt, pr, pb = pred.unbind(1)
    tl, tt, tr, tb = target.unbind(1)
    inter = (torch.min(pl, tl) + torch.min(pr, tr)).clamp(min=0) * (
        torch.min(pt, tt) + torch.min(pb, tb)
    ).clamp(min=0)
    union = (pl + pr) * (pt + pb) + (tl + tr) * (tt + tb) - inter
    hull = (torch.max(pl, tl) + torch.max(pr, tr)) * (torch.max(pt, tt) + torch.max(pb, tb))
    giou = inter / union.clamp(min=1e-6) - (hull - union) / hull.clamp(min=1e-6)
    return ((1 - giou) * weight).sum() / weight.sum().clamp(min=1)


def detection_loss(heat: torch.Tensor, box: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Loss of raw outputs against targets (channels heat, l, t, r, b, weight)."""
    weight = targets[:, 5]
    pixels = F.relu(box) * BOX_SCALE
    l1 = ((box - targets[:, 1:5] / BOX_SCALE).abs().sum(1) * weight).sum() / weight.sum().clamp(
        min=1
    )
    return (
        focal_loss(heat[:, 0], targets[:, 0])
        + GIOU_WEIGHT * giou_loss(pixels, targets[:, 1:5], weight)
        + L1_WEIGHT * l1
    )


OFF_TARGET_HEAT = 0.05
"""Below this target heat a cell is away from every 福 (``distill_loss(off_target=True)``)."""


def distill_loss(
    heat: torch.Tensor,
    box: torch.Tensor,
    teacher: tuple[torch.Tensor, torch.Tensor],
    targets: torch.Tensor,
    off_target: bool = False,
) -> torch.Tensor:
    """The student's distance from another network's (detached) outputs.

    With ``off_target`` only away from the labelled 福 (target heat under
    ``OFF_TARGET_HEAT``; no box term): there the labels alone teach, so a
    teacher that misses a 福 cannot hold the student back on it, while
    everything else (look-alikes, background) is held where the teacher has it.
    """
    t_heat, t_box = (t.detach() for t in teacher)
    peaks = _fu_count(targets)
    # Binary KL divergence: cross-entropy less the teacher's own entropy. The gradient is the
    # same; the printed loss reads 0 for a student that matches (cross-entropy alone showed
    # the entropy, about 90 on a batch, as if the tier were far off).
    soft = torch.sigmoid(t_heat)
    heat_kd = F.binary_cross_entropy_with_logits(
        heat, soft, reduction="none"
    ) - F.binary_cross_entropy_with_logits(t_heat, soft, reduction="none")
    if off_target:
        return (heat_kd * targets[:, 0:1].lt(OFF_TARGET_HEAT)).sum() / peaks
    weight = targets[:, 5:6]
    box_kd = ((box - t_box).abs() * weight).sum() / weight.sum().clamp(min=1)
    return heat_kd.sum() / peaks + box_kd


def _within_reach(heat: torch.Tensor) -> torch.Tensor:
    """Each cell's highest logit within a cell of it, ``(N, 1, h, w)``: a shift of less than a
    cell keeps a peak in reach."""
    return F.max_pool2d(heat, 3, stride=1, padding=1)


def shift_consistency_loss(
    heat: torch.Tensor, shifted_heat: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Mean gap between each 福's peak score in two views of it, the stronger view held fixed.

    A peak is the highest score within reach of the 福's centre cell; only
    the weaker view is pulled (up), so the term cannot talk the detector out
    of a 福.
    """
    centres = targets[:, 0].ge(PEAK_HEAT)
    if not bool(centres.any()):
        return heat.sum() * 0
    ours, theirs = (torch.sigmoid(_within_reach(h)[:, 0][centres]) for h in (heat, shifted_heat))
    return torch.where(ours < theirs, theirs.detach() - ours, ours.detach() - theirs).mean()


HOLD_DOWN_FLOOR = 0.2
"""``shift_hold_down_loss`` looks only at peaks that score above this."""


def shift_hold_down_loss(
    heat: torch.Tensor, shifted_heat: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """The mirror of :func:`shift_consistency_loss` away from every 福: how far each peak there
    (a look-alike, mostly) scores above the best the other view has within reach of it, the
    other view held fixed; summed over the peaks of both views and divided by the number of
    labelled 福, as the focal loss is. (A mean over the peaks themselves pushes each the
    harder the fewer are left, and pulled every score down with them.)

    Only the stronger view is pulled (down): what the detector finds in one
    view of a look-alike and not in the other is its noise, and the vote
    recognizes a look-alike that scores high in enough frames. A peak is a
    cell that scores above ``HOLD_DOWN_FLOOR`` and highest within reach; it
    counts when no cell within reach of it is near a labelled 福 (target heat
    at least ``OFF_TARGET_HEAT``; an ignored 福's cells are above it).
    """
    away = _within_reach(targets[:, 0:1]).lt(OFF_TARGET_HEAT)
    reach, shifted_reach = _within_reach(heat), _within_reach(shifted_heat)
    gaps = []
    for mine, mine_reach, other_reach in (
        (heat, reach, shifted_reach),
        (shifted_heat, shifted_reach, reach),
    ):
        score = torch.sigmoid(mine)
        peaks = away & mine.ge(mine_reach) & score.gt(HOLD_DOWN_FLOOR)
        gaps.append((score - torch.sigmoid(other_reach.detach())).clamp(min=0)[peaks])
    return torch.cat(gaps).sum() / _fu_count(targets)


def shifted_views(x: torch.Tensor, max_shift: float) -> torch.Tensor:
    """Each image of ``x`` moved by its own random offset of up to ``max_shift`` pixels each way.

    Bilinear, so most offsets fall between pixels (a camera that moves does
    not move by whole pixels); the border is repeated into the gap.
    """
    n, _, height, width = x.shape
    offsets = (torch.rand(n, 2, device=x.device) * 2 - 1) * max_shift
    theta = torch.zeros(n, 2, 3, device=x.device, dtype=x.dtype)
    theta[:, 0, 0] = 1
    theta[:, 1, 1] = 1
    theta[:, 0, 2] = offsets[:, 0] * (-2 / width)
    theta[:, 1, 2] = offsets[:, 1] * (-2 / height)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def at_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``x`` shrunk by ``scale`` with a box filter, as the detector's letterbox shrinks frames."""
    if scale == 1.0:
        return x
    width, height = scaled_size(x.shape[-1], x.shape[-2], scale)
    return F.interpolate(x, size=(height, width), mode="area")


def augment(images: torch.Tensor) -> torch.Tensor:
    """uint8 NCHW RGB to float in [0, 1], with per-image brightness, contrast and greyness."""
    x = images.float() / 255
    n = x.shape[0]
    contrast = torch.empty(n, 1, 1, 1, device=x.device).uniform_(0.7, 1.3)
    bright = torch.empty(n, 1, 1, 1, device=x.device).uniform_(-0.12, 0.12)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (x - mean) * contrast + mean + bright
    grey = torch.rand(n, 1, 1, 1, device=x.device) < 0.1
    x = torch.where(grey, x.mean(1, keepdim=True).expand_as(x), x)
    return x.clamp(0, 1)


class SceneStream:
    """Training scenes generated in worker processes straight into device memory, while training.

    ``ready`` scenes (the first ones by seed) are usable at any time; training
    samples among them, so it starts after the first chunks instead of after all.
    """

    def __init__(self, args: argparse.Namespace, device: torch.device) -> None:
        self.images = torch.empty(
            (args.images, 3, args.height, args.width), dtype=torch.uint8, device=device
        )
        self.targets = {
            scale: torch.empty(
                (args.images, 6, *output_size(*scaled_size(args.width, args.height, scale))[::-1]),
                device=device,
            )
            for scale in SCALES
        }
        self.ready = 0
        seeds = range(args.seed, args.seed + args.images)
        chunks = generate_parallel(
            seeds,
            args.width,
            args.height,
            "train",
            args.workers,
            SCALES,
            options=scene_options(args),
        )
        self._thread = threading.Thread(target=self._fill, args=(chunks,), daemon=True)
        self._thread.start()

    def _fill(self, chunks: Iterator[tuple[np.ndarray, list[np.ndarray]]]) -> None:
        for images, targets in chunks:
            end = self.ready + len(images)
            self.images[self.ready : end].copy_(torch.from_numpy(images))
            for scale, scaled in zip(SCALES, targets, strict=True):
                self.targets[scale][self.ready : end].copy_(torch.from_numpy(scaled))
            self.ready = end

    def wait_for(self, count: int) -> None:
        while self.ready < count and self._thread.is_alive():
            time.sleep(0.5)

    def batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, dict[float, torch.Tensor]]:
        return self.images[idx], {scale: t[idx] for scale, t in self.targets.items()}


def load_prefix(model: FuNet, state: dict[str, torch.Tensor]) -> None:
    """Load ``state`` into ``model``'s leading channels, cutting wider tensors to fit.

    A slimmable net keeps its most useful channels first, so a checkpoint of
    wider layers is a warm start for narrower ones. Into a wider model, the
    checkpoint fills the leading channels and the weights that read the extra
    channels start at zero: the widened net computes what the checkpoint did,
    and training finds uses for the extra channels (Net2Net-style widening).
    """
    own = model.state_dict()
    for name, value in state.items():
        if not value.dim():
            own[name] = value
            continue
        target = own[name].clone()
        if value.dim() == 4 and target.shape[1] > value.shape[1]:  # a conv reading more channels
            target[:, value.shape[1] :] = 0
        common = tuple(slice(0, min(a, b)) for a, b in zip(target.shape, value.shape, strict=True))
        target[common] = value[common]
        own[name] = target
    model.load_state_dict(own)


def width_scale_of(checkpoint: dict[str, Any]) -> float:
    """The ``--width-scale`` a checkpoint was trained at (1 for the shipped width)."""
    return float(checkpoint.get("args", {}).get("width_scale", 1.0))


def train(args: argparse.Namespace) -> None:
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    start = time.time()
    checkpoint: dict[str, Any] | None = None
    optimizer_state = None
    if args.continue_from:
        checkpoint = torch.load(args.continue_from, map_location="cpu")
        schedule, taken_steps, taken_seconds, optimizer_state = _continued(
            args.continue_from, checkpoint
        )
        vars(args).update(asdict(schedule))  # saved with the checkpoint: the schedule it ran
        args.width_scale = width_scale_of(checkpoint)  # and the net it trained
        print(f"continuing {schedule} after {taken_steps} steps, {taken_seconds:.0f}s")
    else:
        schedule = Schedule(args.lr, args.warmup, args.minutes, args.max_steps)
        taken_steps, taken_seconds = 0, 0.0  # of this schedule, in earlier parts
        if args.resume:
            checkpoint = torch.load(args.resume, map_location="cpu")
    val_seeds = range(10**9, 10**9 + args.val)
    val_chunks = list(
        generate_parallel(
            val_seeds,
            args.width,
            args.height,
            "eval",
            args.workers,
            SCALES,
            # the training mix's labels, but the generator's own share of styles
            options=SceneOptions(cut_look_alikes=args.cut_look_alikes),
        )
    )
    val = (
        torch.from_numpy(np.concatenate([c[0] for c in val_chunks])).to(device),
        {
            scale: torch.from_numpy(np.concatenate([c[1][i] for c in val_chunks])).to(device)
            for i, scale in enumerate(SCALES)
        },
    )
    stream = SceneStream(args, device)
    replay = HardScenes(args.images, device)
    stream.wait_for(min(args.images, args.min_ready))
    print(f"{stream.ready} scenes ready after {time.time() - start:.0f}s", flush=True)

    model = FuNet(width_scale=args.width_scale)
    if checkpoint is not None:
        load_prefix(model, checkpoint["model"])
    model = model.to(device).to(memory_format=torch.channels_last)
    teacher_net = None if args.teacher is None else frozen_supernet(args.teacher, device)
    optim = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=args.weight_decay)
    if optimizer_state is not None:
        optim.load_state_dict(optimizer_state)
    use_amp = device.type == "cuda"
    shifting = args.shift_weight > 0 or args.hold_down_weight > 0
    train_start = time.time()
    step = 0
    progress = 0.0
    while progress < args.stop_at:  # the step that reaches it is taken too
        steps, seconds = taken_steps + step, taken_seconds + time.time() - train_start
        progress = schedule.progress(steps, seconds)
        lr = schedule.lr_at(steps, seconds)
        for group in optim.param_groups:
            group["lr"] = lr
        idx, hard = replay.draw(stream.ready, args.batch, args.hard_share)
        images, y = stream.batch(idx)
        x = augment(images).contiguous(memory_format=torch.channels_last)
        moved = shifted_views(x, args.max_shift) if shifting else None
        optim.zero_grad(set_to_none=True)
        losses = {}
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            loss = torch.zeros((), device=device)
            for tier in TIERS[::-1]:  # the widest first: the others learn from its outputs
                model.set_tier(tier)
                scale = INPUT_SCALE[tier]
                tier_x = at_scale(x, scale)
                heat, box = (t.float() for t in model(tier_x))
                tier_loss = detection_loss(heat, box, y[scale])
                if moved is not None:
                    moved_heat = model(at_scale(moved, scale))[0].float()
                    for weight, term in (
                        (args.shift_weight, shift_consistency_loss),
                        (args.hold_down_weight, shift_hold_down_loss),
                    ):
                        if weight > 0:
                            tier_loss = tier_loss + weight * term(heat, moved_heat, y[scale])
                if tier == "l":
                    widest = (heat, box)
                    if args.hard_share > 0:  # hardness is only worth scoring if it is drawn on
                        replay.remember(idx, scene_hardness(heat[:, 0], y[scale][:, 0]), hard)
                elif scale == 1.0:  # the widest tier's outputs are only comparable at its own scale
                    tier_loss = tier_loss + KD_WEIGHT * distill_loss(heat, box, widest, y[1.0])
                if teacher_net is not None and tier in args.teacher_tiers:
                    with torch.no_grad():
                        teacher_net.set_tier(tier)
                        held_heat, held_box = (t.float() for t in teacher_net(tier_x))
                    tier_loss = tier_loss + args.teacher_weight * distill_loss(
                        heat, box, (held_heat, held_box), y[scale], args.teacher_off_target
                    )
                loss = loss + tier_loss
                losses[tier] = tier_loss.item() if step % 100 == 0 else 0.0
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optim.step()
        if step % 100 == 0:
            shown = " ".join(f"{k}={v:.3f}" for k, v in losses.items())
            print(f"step {steps} {seconds:.0f}s lr={lr:.5f} {shown}", flush=True)
        if step % 1000 == 0 or progress >= args.stop_at:
            print(f"  val {evaluate_loss(model, val)} ({stream.ready} scenes)", flush=True)
        step += 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.set_tier("l")
    torch.save(
        {
            "model": {k: v.cpu() for k, v in model.state_dict().items()},
            "args": {k: v if not isinstance(v, Path) else str(v) for k, v in vars(args).items()},
            "steps": step + (0 if checkpoint is None else int(checkpoint["steps"])),
            "schedule": asdict(schedule),
            "schedule_taken": {
                "steps": taken_steps + step,
                "seconds": taken_seconds + time.time() - train_start,
            },
            "optimizer": optim.state_dict(),
        },
        out / "supernet.pt",
    )
    print(f"saved {out / 'supernet.pt'} after {step} steps, {time.time() - start:.0f}s in all")


def _continued(
    path: Path, checkpoint: dict[str, Any]
) -> tuple[Schedule, int, float, dict[str, Any]]:
    """The schedule ``checkpoint`` stopped in, the steps and seconds of it taken, the optimizer."""
    if "schedule" not in checkpoint:
        raise SystemExit(f"{path} was not saved by a training part: --resume starts from it")
    schedule = Schedule(**checkpoint["schedule"])
    taken = checkpoint["schedule_taken"]
    steps, seconds = int(taken["steps"]), float(taken["seconds"])
    if schedule.progress(steps, seconds) >= 1.0:
        raise SystemExit(f"{path} finished its schedule: --resume starts a new one from it")
    return schedule, steps, seconds, checkpoint["optimizer"]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def frozen_supernet(path: Path, device: torch.device) -> FuNet:
    """The supernet of checkpoint ``path`` in eval mode, without gradients, on ``device``."""
    checkpoint = torch.load(path, map_location="cpu")
    net = FuNet(width_scale=width_scale_of(checkpoint))
    load_prefix(net, checkpoint["model"])
    net.eval().requires_grad_(False)
    return net.to(device).to(memory_format=torch.channels_last)


@torch.no_grad()
def evaluate_loss(
    model: FuNet, val: tuple[torch.Tensor, dict[float, torch.Tensor]]
) -> dict[str, float]:
    """Detection loss of each tier on held-out scenes at its input scale (BN in eval mode)."""
    images, targets = val
    model.eval()
    result = {}
    for tier in TIERS:
        model.set_tier(tier)
        scale = INPUT_SCALE[tier]
        total = 0.0
        for i in range(0, len(images), 256):
            x = at_scale(images[i : i + 256].float() / 255, scale)
            heat, box = model(x.contiguous(memory_format=torch.channels_last))
            total += detection_loss(heat.float(), box.float(), targets[scale][i : i + 256]).item()
        result[tier] = round(total / math.ceil(len(images) / 256), 4)
    model.train()
    return result


def make_parser() -> argparse.ArgumentParser:
    """The command line of a training run (:func:`main`; :func:`command_line` writes one back)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", default="build/detector")
    parser.add_argument("--device", help="cuda or cpu (default: cuda where there is one)")
    parser.add_argument("--images", type=int, default=120_000)
    parser.add_argument("--val", type=int, default=2000)
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    for name, (default, what) in SCHEDULE_FLAGS.items():
        parser.add_argument(
            _flag(name), type=type(default), help=f"{what} (default {default}; schedule)"
        )
    parser.add_argument(
        "--stop-at",
        type=share_argument,
        default=1.0,
        help="end this part when this share of the schedule is taken; --continue-from goes on",
    )
    parser.add_argument(
        "--width-scale",
        type=float,
        default=1.0,
        help="every layer's channels times this: above 1, a teacher for --teacher, never shipped "
        "(a narrower --resume checkpoint widens into it, computing what it computed)",
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-ready", type=int, default=8000, help="scenes before training starts")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--resume", type=Path, help="a supernet.pt to start from, a new schedule")
    start.add_argument(
        "--continue-from",
        type=Path,
        help="a supernet.pt saved by --stop-at: its schedule and optimizer go on",
    )
    add_scene_arguments(parser)
    parser.add_argument(
        "--teacher", type=Path, help="a supernet.pt that --teacher-tiers are held near"
    )
    parser.add_argument("--teacher-tiers", nargs="+", choices=TIERS, default=["l", "m"])
    parser.add_argument("--teacher-weight", type=float, default=2.0)
    parser.add_argument(
        "--teacher-off-target",
        action="store_true",
        help="the teacher's term only away from the labelled 福: the labels alone teach the 福",
    )
    parser.add_argument(
        "--shift-weight",
        type=float,
        default=0.0,
        help="weight of the shift-consistency term (0: off)",
    )
    parser.add_argument(
        "--hold-down-weight",
        type=float,
        default=0.0,
        help="weight of the shift term away from the 福: look-alike peaks pulled down to the "
        "weaker view (0: off)",
    )
    parser.add_argument(
        "--max-shift", type=float, default=2.0, help="largest shift of the second view, pixels"
    )
    parser.add_argument(
        "--hard-share",
        type=share_argument,
        default=0.0,
        help="share of each batch drawn again by how hard the widest tier found each scene",
    )
    return parser


def command_line(args: dict[str, Any]) -> str:
    """The command that runs training with ``args`` (a checkpoint's), as one would type it:
    flags at their defaults, unset or off are left out, and ``--out`` is the caller's. A
    continued run's schedule is its checkpoint's, so its flags are left out too (they would be
    refused beside ``--continue-from``)."""
    words = ["python", "-m", "detectors.train.train"]
    skipped = {"out"} | (set(SCHEDULE_FLAGS) if args.get("continue_from") else set())
    for action in make_parser()._actions:
        value = args.get(action.dest)
        if action.dest in skipped or value is None or value is False or value == action.default:
            continue
        words.append(action.option_strings[-1])
        if value is True:
            continue
        if isinstance(value, tuple):  # a LOW:HIGH range
            words.append(":".join(map(str, value)))
        elif isinstance(value, list):
            words.extend(map(str, value))
        else:
            words.append(str(value))
    return shlex.join(words)


def main(argv: list[str] | None = None) -> None:
    parser = make_parser()
    args = parser.parse_args(argv)
    # resolved here, not as the flag's default, so the recorded command names the device
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    given = [name for name in SCHEDULE_FLAGS if getattr(args, name) is not None]
    if args.continue_from and given:
        flags = ", ".join(_flag(name) for name in given)
        parser.error(f"--continue-from goes on with the checkpoint's schedule; drop {flags}")
    for name, (default, _) in SCHEDULE_FLAGS.items():
        if getattr(args, name) is None and not args.continue_from:
            setattr(args, name, default)
    train(args)


if __name__ == "__main__":
    main()
