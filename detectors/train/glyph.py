"""Train the glyph check (:mod:`detectors.glyph_check`): 福 against its look-alikes, on crops.

Every crop is a box of a generated scene (:func:`detectors.synth.scenes.render_posters`)
cut out as the runtime cuts a detection (:func:`detectors.glyph_check.glyph_crop`):
the labelled 福 (whole, or cut by the frame with their radical in view) are
positives; the look-alikes and festive characters (cut by the frame too,
``--cut-look-alikes`` is on) and random boxes on the rest of the scene are
negatives. Each box is jittered as a detector's box would be. Crops are
made in worker processes while the GPU trains, as for the detector.

Its threshold is picked on training-split crops it never trained on, and its
pass rates printed on held-out crops (evaluation fonts and photos); ``--export``
then writes ONNX (FP32 and INT8) and compares the two files.

``--colour`` trains a recognizer of colour crops (luma and two chroma channels, each
standardized in the graph); ``--resume`` from a grey one starts it where the grey one was.
The scene flags (``--bare-ink-share``, ``--ornament-share``, ...) change the scenes the
training crops are cut from; the judging crops keep the generator's mix.

GPU:  python -m detectors.train.glyph --device cuda --scenes 150000 --minutes 5 --workers 15
CPU:  python -m detectors.train.glyph --device cpu --scenes 2000 --minutes 2 --workers 2
Then: python -m detectors.train.glyph --export --out build/glyph
Ship: python -m detectors.train.glyph --ship detectors/models --describe fields.json \
          --out build/glyph
From a shipped file:
      python -m detectors.train.glyph --recover detectors/models/fu_glyph.fp32.onnx --out build/g0
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import multiprocessing
import shutil
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

from detectors.card import read_card_fields, with_fields, write_card
from detectors.core import Box, iou
from detectors.glyph_check import GLYPH_SIDE, GlyphCheck, GlyphSpec, crop_tensor, glyph_crop
from detectors.quantize import QuantSettings, TensorReader, quantize_model
from detectors.shared_weights import read_model
from detectors.synth.scenes import (
    SceneOptions,
    Split,
    add_scene_arguments,
    render_posters,
    scene_options,
)
from detectors.train.model import count_macs_params
from detectors.train.recover import calibrate_norms, set_folded

FRAME = (640, 480)
"""Scenes are rendered at the size of the frames the detector is evaluated on."""
SCENES = SceneOptions(cut_look_alikes=True)
"""The generator's mix with look-alikes cut by the frame (and 福 cut too far ignored): the
judging crops' scenes, and the training crops' unless the scene flags change them."""
BOX_JITTER = 0.08
"""Each edge of a box moves by this share of the box's side (one standard deviation)."""
JITTERS = 2
"""Crops per labelled box."""
RANDOM_BOXES = 1
"""Crops of random boxes per scene, away from every 福."""
MIN_BOX_SIDE = 8
VAL_SEED = 90_000_000
HELD_OUT_SEED = 91_000_000
RECOVER_SEED = 92_000_000
"""Scenes whose crops give a recovered net its batch-norm statistics (``--recover``)."""
PASS_TARGET = 0.99
"""The threshold passes this share of 福 crops (training split, not trained on)."""
GLYPH_MODEL = "fu_glyph.int8.onnx"
GLYPH_FP32 = "fu_glyph.fp32.onnx"


def _jittered(rng: np.random.Generator, box: Box, width: int, height: int) -> Box | None:
    w, h = box[2] - box[0], box[3] - box[1]
    moves = rng.normal(0, BOX_JITTER, 4) * np.array([w, h, w, h])
    x0, y0, x1, y1 = (float(v) for v in np.array(box) + moves)
    x0, x1 = max(x0, 0.0), min(x1, float(width))
    y0, y1 = max(y0, 0.0), min(y1, float(height))
    return (x0, y0, x1, y1) if min(x1 - x0, y1 - y0) >= MIN_BOX_SIDE else None


def _random_box(rng: np.random.Generator, width: int, height: int) -> Box:
    side = math.exp(rng.uniform(math.log(30), math.log(0.8 * height)))
    aspect = math.exp(rng.normal(0, 0.2))
    # A long thin box is cut to the frame: placing one longer than the frame raised (it once
    # stopped a training run's crop workers at its 57,000th scene).
    w, h = min(side * aspect, width), min(side / aspect, height)
    x0, y0 = rng.uniform(-0.2 * w, width - 0.8 * w), rng.uniform(-0.2 * h, height - 0.8 * h)
    return max(x0, 0.0), max(y0, 0.0), min(x0 + w, width), min(y0 + h, height)


def scene_crops(
    seed: int, split: Split = "train", channels: int = 1, options: SceneOptions = SCENES
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """The crops of one scene of ``options`` (:func:`glyph_crop`'s, in ``channels``) and
    their labels (1: 福)."""
    width, height = FRAME
    image, fu, ignored, others = render_posters(seed, width, height, split, "mixed", options)
    rng = np.random.default_rng(seed + 1)
    boxes: list[tuple[Box, int]] = []
    for label, labelled in ((1, fu), (0, others)):
        for row in labelled.tolist():
            for _ in range(JITTERS):
                box = _jittered(rng, (row[0], row[1], row[2], row[3]), width, height)
                if box is not None:
                    boxes.append((box, label))
    avoid = [(r[0], r[1], r[2], r[3]) for r in (*fu.tolist(), *ignored.tolist())]
    for _ in range(RANDOM_BOXES):
        box = _random_box(rng, width, height)
        if all(iou(box, other) < 0.2 for other in avoid):
            boxes.append((box, 0))
    crops = np.zeros((len(boxes), *crop_shape(channels)), np.uint8)
    for i, (box, _) in enumerate(boxes):
        crops[i] = glyph_crop(image, box, channels=channels)
    return crops, np.array([label for _, label in boxes], np.uint8)


def crop_shape(channels: int) -> tuple[int, ...]:
    """The shape of one :func:`glyph_crop` in ``channels`` (1: grey, 3: BGR)."""
    return (GLYPH_SIDE, GLYPH_SIDE) if channels == 1 else (GLYPH_SIDE, GLYPH_SIDE, channels)


def crops_of(
    seeds: range, split: Split = "train", channels: int = 1, options: SceneOptions = SCENES
) -> tuple[npt.NDArray[np.uint8], ...]:
    """:func:`scene_crops` of every seed, stacked."""
    return stacked(scene_crops(s, split, channels, options) for s in seeds)


def stacked(
    parts: Iterable[tuple[npt.NDArray[np.uint8], ...]],
) -> tuple[npt.NDArray[np.uint8], ...]:
    """Crops and labels of several scenes or chunks as one array each."""
    crops, labels = zip(*parts, strict=True)
    return np.concatenate(crops), np.concatenate(labels)


def _chunk(job: tuple[range, Split, int, SceneOptions]) -> tuple[npt.NDArray[np.uint8], ...]:
    return crops_of(*job)


def _single_threaded() -> None:
    cv2.setNumThreads(1)  # one process per core already


def crops_parallel(
    seeds: range,
    split: Split,
    workers: int,
    channels: int = 1,
    options: SceneOptions = SCENES,
    chunk: int = 64,
) -> Iterator[tuple[npt.NDArray[np.uint8], ...]]:
    """:func:`crops_of` in ``workers`` processes, chunk by chunk in seed order."""
    jobs = [(seeds[i : i + chunk], split, channels, options) for i in range(0, len(seeds), chunk)]
    # Spawned, not forked: the parent has started OpenCV's and torch's thread pools, whose
    # locks a forked child could inherit held (it hung so).
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(workers, initializer=_single_threaded) as pool:
        yield from pool.imap(_chunk, jobs)


def _block(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
    )


LUMA_BGR = (0.114, 0.587, 0.299)
"""Grey from BGR as OpenCV makes it (BT.601): a colour network's first channel is the grey
network's input."""


class GlyphNet(nn.Module):
    """64x64 crops in [0, 1] (grey, or BGR if ``channels`` is 3) -> logit of 福.

    A colour crop is turned into luma (the grey crop) and two chroma channels (blue and red
    less luma), so that ink differing from its ground only in hue still shows. Each channel
    of each crop is standardized first (in the graph): its mean is taken away (brightness
    does not matter) and it is divided by its spread plus 0.02 (contrast matters only in
    faint crops)."""

    def __init__(self, widths: tuple[int, ...] = (16, 32, 64, 96, 128), channels: int = 1) -> None:
        super().__init__()
        if channels not in (1, 3):
            raise ValueError(f"a glyph net reads 1 or 3 channels, not {channels}")
        self.channels = channels
        layers = [_block(channels, widths[0], 1)]
        for cin, cout in itertools.pairwise(widths):
            layers += [_block(cin, cout, 2), _block(cout, cout, 1)]
        self.features = nn.Sequential(*layers)
        cells = GLYPH_SIDE // 2 ** (len(widths) - 1)
        self.head = nn.Linear(widths[-1] * cells * cells, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.channels == 3:
            blue, red = x[:, 0:1], x[:, 2:3]
            luma = LUMA_BGR[0] * blue + LUMA_BGR[1] * x[:, 1:2] + LUMA_BGR[2] * red
            x = torch.cat((luma, blue - luma, red - luma), dim=1)
        mean = x.mean(dim=(2, 3), keepdim=True)
        spread = ((x - mean) ** 2).mean(dim=(2, 3), keepdim=True).sqrt()
        x = (x - mean) / (spread + 0.02)
        return self.head(self.features(x).flatten(1)).squeeze(1)


FIRST_CONV = "features.0.0.weight"
"""The state-dict key of a :class:`GlyphNet`'s first convolution, whose input channels tell
a grey network from a colour one."""


def colour_from_grey(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A grey :class:`GlyphNet`'s weights for a colour one: its first convolution reads luma
    as it read grey and gives the chroma channels no weight yet, so the colour network starts
    out scoring every crop as the grey one did."""
    grey = state[FIRST_CONV]
    if grey.shape[1] != 1:
        raise ValueError(f"not a grey glyph net: its first convolution reads {grey.shape[1]}")
    chroma = torch.zeros_like(grey)
    return state | {FIRST_CONV: torch.cat((grey, chroma, chroma), 1)}


def load_net(path: str | Path, device: torch.device, channels: int | None = None) -> GlyphNet:
    """The :class:`GlyphNet` saved at ``path``, reading ``channels`` (by default as saved): a
    grey one becomes a colour one through :func:`colour_from_grey`."""
    state = torch.load(path, map_location=device)
    saved = int(state[FIRST_CONV].shape[1])
    channels = saved if channels is None else channels
    if channels != saved:
        if (saved, channels) != (1, 3):
            raise ValueError(f"{path} reads {saved} channels; it cannot be made to read {channels}")
        state = colour_from_grey(state)
    net = GlyphNet(channels=channels).to(device)
    net.load_state_dict(state)
    return net


@torch.no_grad()
def from_file(path: Path, calibration: npt.NDArray[np.uint8]) -> GlyphNet:
    """The :class:`GlyphNet` that computes ``path`` (an exported ``fu_glyph.fp32.onnx``,
    batch norm folded into each convolution) in eval mode, its batch norm given the statistics
    of ``calibration`` crops (:func:`detectors.train.recover.calibrate_norms`), so that training
    can go on from a shipped file whose checkpoint is gone.

    Raises:
        ValueError: ``path`` is not a glyph net's graph (convolutions, then one dense layer).
    """
    graph = read_model(path).graph
    tensors = {t.name: numpy_helper.to_array(t).copy() for t in graph.initializer}
    convs = [node for node in graph.node if node.op_type == "Conv"]
    dense = [node for node in graph.node if node.op_type == "Gemm"]
    if not convs or len(dense) != 1:
        raise ValueError(
            f"{path} is not a glyph net: {len(convs)} convolutions, {len(dense)} dense"
        )
    weights = [tensors[node.input[1]] for node in convs]
    channels = int(weights[0].shape[1])
    widths = tuple(int(w.shape[0]) for w in weights[:1] + weights[1::2])
    net = GlyphNet(widths, channels)
    blocks = list(net.features)
    shapes = [tuple(block[0].weight.shape) for block in blocks]
    if shapes != [w.shape for w in weights]:
        raise ValueError(f"{path} is not a glyph net: convolutions {[w.shape for w in weights]}")
    for block, node, weight in zip(blocks, convs, weights, strict=True):
        block[0].weight.copy_(torch.from_numpy(weight))
        set_folded(block[1], np.ones(len(weight), np.float32), tensors[node.input[2]])
    net.head.weight.copy_(torch.from_numpy(tensors[dense[0].input[1]]))
    net.head.bias.copy_(torch.from_numpy(tensors[dense[0].input[2]]))
    norms = {str(i): block[1] for i, block in enumerate(blocks)}
    batches = (
        torch.from_numpy(crop_tensor(calibration[i : i + 512]))
        for i in range(0, len(calibration), 512)
    )
    calibrate_norms(net, norms, batches)
    return net


def recover(path: Path, out: Path, scenes: int, workers: int) -> None:
    """Write ``out/glyph.pt`` from the exported ``path`` (:func:`from_file`, its statistics from
    ``scenes`` training-split scenes of their own seeds) and print how far it is from the file
    on crops of held-out scenes, in eval mode and in training mode."""
    shipped = GlyphCheck(path, GlyphSpec(path.name, 0.5))
    seeds = range(RECOVER_SEED, RECOVER_SEED + scenes)
    net = from_file(path, stacked(crops_parallel(seeds, "train", workers, shipped.channels))[0])
    held = range(HELD_OUT_SEED, HELD_OUT_SEED + min(scenes, 500))
    crops = stacked(crops_parallel(held, "eval", workers, shipped.channels))[0]
    expected = shipped.scores(crops)
    differences = {}
    # A training-mode pass moves batch norm's running statistics: a copy takes it.
    for mode, model in (("eval", net.eval()), ("training", copy.deepcopy(net).train())):
        with torch.no_grad():
            got = torch.sigmoid(model(torch.from_numpy(crop_tensor(crops)))).numpy()
        differences[mode] = float(np.abs(got - expected).max())
    print(f"largest difference from {path} on {len(crops)} held-out crops: {differences}")
    if differences["eval"] > 1e-4:
        raise SystemExit(f"the rebuilt net does not compute {path}")
    out.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), out / "glyph.pt")
    print(f"saved {out / 'glyph.pt'}")


class Probability(nn.Module):
    """What is exported: the probability of 福, not the logit."""

    def __init__(self, net: GlyphNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x))


class CropStream:
    """Training crops made in worker processes straight into device memory, while training.

    ``chunks`` yields (crops, labels) arrays; past ``room`` crops the rest are dropped. If
    making them fails, training goes on over the crops already made (a device call is not
    lost to it) and :attr:`failure` says what went wrong, for the run's report.
    """

    def __init__(
        self,
        chunks: Iterator[tuple[npt.NDArray[np.uint8], ...]],
        room: int,
        channels: int,
        device: torch.device,
    ) -> None:
        self.crops = torch.empty((room, *crop_shape(channels)), dtype=torch.uint8, device=device)
        self.labels = torch.empty(room, device=device)
        self.ready = 0
        self.failure: str | None = None
        self._thread = threading.Thread(target=self._fill, args=(chunks,), daemon=True)
        self._thread.start()

    @classmethod
    def of_scenes(cls, args: argparse.Namespace, device: torch.device) -> CropStream:
        """The crops of ``args.scenes`` training-split scenes from ``args.seed`` on, as the
        scene flags make them (:func:`training_scenes`)."""
        channels = channels_of(args)
        seeds = range(args.seed, args.seed + args.scenes)
        chunks = crops_parallel(seeds, "train", args.workers, channels, training_scenes(args))
        return cls(chunks, args.scenes * 6, channels, device)  # about 4.5 crops a scene

    def _fill(self, chunks: Iterator[tuple[npt.NDArray[np.uint8], ...]]) -> None:
        try:
            for crops, labels in chunks:
                end = min(self.ready + len(crops), len(self.crops))
                n = end - self.ready
                self.crops[self.ready : end].copy_(torch.from_numpy(crops[:n]))
                self.labels[self.ready : end].copy_(torch.from_numpy(labels[:n]).float())
                self.ready = end
        except Exception as exc:  # any failure of a worker: reported, not raised in a thread
            self.failure = f"{type(exc).__name__}: {exc} (after {self.ready} crops)"
            traceback.print_exc()

    def batch(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        while self.ready < size:
            if not self._thread.is_alive():  # a worker failed, or every scene is cropped
                why = f": {self.failure}" if self.failure else ""
                raise RuntimeError(
                    f"{self.ready} training crops, fewer than a batch of {size}{why}"
                )
            time.sleep(0.2)
        idx = torch.randint(0, self.ready, (size,), device=self.crops.device)
        return augment(self.crops[idx]), self.labels[idx]


def channels_of(args: argparse.Namespace) -> int:
    return 3 if args.colour else 1


def training_scenes(args: argparse.Namespace) -> SceneOptions:
    """The scenes the training crops are cut from: the scene flags', look-alikes always cut by
    the frame too."""
    return replace(scene_options(args), cut_look_alikes=True)


def as_input(crops: torch.Tensor) -> torch.Tensor:
    """uint8 N x H x W (grey) or N x H x W x 3 (BGR) to float N x C x H x W in [0, 1], as
    :func:`detectors.glyph_check.crop_tensor` makes the runtime's."""
    x = crops.float() / 255
    return x[:, None] if crops.dim() == 3 else x.permute(0, 3, 1, 2)


_ORDERS = torch.tensor(list(itertools.permutations(range(3))))


def augment(crops: torch.Tensor) -> torch.Tensor:
    """:func:`as_input` with per-crop noise and gamma (brightness the network standardizes
    away, and most of contrast), half of them turned upside down (a turned 福 is still 福,
    a turned look-alike still not), and half of the colour ones with their channels in
    another order (so that no ink or paper colour comes to mean 福)."""
    x = as_input(crops)
    n = x.shape[0]
    if x.shape[1] == 3:
        orders = _ORDERS.to(x.device)[torch.randint(0, len(_ORDERS), (n,), device=x.device)]
        keep = torch.rand(n, device=x.device) < 0.5
        orders[keep] = torch.arange(3, device=x.device)
        x = torch.gather(x, 1, orders[:, :, None, None].expand_as(x))
    turned = torch.rand(n, 1, 1, 1, device=x.device) < 0.5
    x = torch.where(turned, x.flip(2, 3), x)
    gamma = torch.exp(torch.empty(n, 1, 1, 1, device=x.device).normal_(0, 0.25))
    x = x.clamp_min(1e-3) ** gamma
    x = x + torch.randn_like(x) * torch.empty(n, 1, 1, 1, device=x.device).uniform_(0, 0.04)
    return x.clamp(0, 1)


def _scores(net: nn.Module, crops: npt.NDArray[np.uint8], device: torch.device) -> np.ndarray:
    training = net.training
    net.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(crops), 2048):
            x = torch.from_numpy(crop_tensor(crops[i : i + 2048])).to(device)
            out.append(torch.sigmoid(net(x)).cpu().numpy())
    net.train(training)
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def pick_threshold(scores: np.ndarray, labels: np.ndarray, pass_target: float) -> float:
    """The highest threshold at which ``pass_target`` of the 福 crops (label 1) still pass."""
    if not 0 < pass_target <= 1:
        raise ValueError(f"pass_target must be within (0, 1], got {pass_target}")
    fu = np.sort(scores[labels == 1])
    if not len(fu):
        raise ValueError("no 福 crops to pick a threshold on")
    passing = math.ceil(round(pass_target * len(fu), 9))  # 0.9 * 10 is 9, not 9.000...01
    return float(fu[len(fu) - passing])


def pass_rates(
    scores: np.ndarray, labels: np.ndarray, threshold: float
) -> dict[str, float | int | None]:
    """Share of 福 crops and of other crops scoring ``threshold`` or more (``None``: no crop
    of that kind)."""
    passed = scores >= threshold
    fu, other = passed[labels == 1], passed[labels == 0]
    return {
        "fu_pass": float(fu.mean()) if len(fu) else None,
        "other_pass": float(other.mean()) if len(other) else None,
        "fu_crops": len(fu),
        "other_crops": len(other),
    }


def check_crops(
    scenes: int, workers: int, channels: int
) -> tuple[tuple[npt.NDArray[np.uint8], ...], tuple[npt.NDArray[np.uint8], ...]]:
    """Crops and labels to judge a recognizer on: of ``scenes`` training-split scenes it never
    trains on (to pick its threshold), and of as many held-out scenes."""
    val = range(VAL_SEED, VAL_SEED + scenes)
    held = range(HELD_OUT_SEED, HELD_OUT_SEED + scenes)
    return (
        stacked(crops_parallel(val, "train", workers, channels)),
        stacked(crops_parallel(held, "eval", workers, channels)),
    )


def train(args: argparse.Namespace) -> None:
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    channels = channels_of(args)
    (val_crops, val_labels), (held_crops, held_labels) = check_crops(
        args.val_scenes, args.workers, channels
    )
    stream = CropStream.of_scenes(args, device)
    net = (
        load_net(args.resume, device, channels)
        if args.resume
        else GlyphNet(channels=channels).to(device)
    )
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    start, step = time.time(), 0
    while (elapsed := time.time() - start) < args.minutes * 60 and step < args.max_steps:
        progress = max(elapsed / (args.minutes * 60), step / args.max_steps)
        for group in opt.param_groups:
            group["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * progress))
        x, y = stream.batch(args.batch)
        loss = F.binary_cross_entropy_with_logits(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % 500 == 0:
            failed = f" (making crops failed: {stream.failure})" if stream.failure else ""
            print(f"step {step} loss {loss.item():.4f} crops {stream.ready} {elapsed:.0f}s{failed}")
    torch.save(net.state_dict(), out / "glyph.pt")
    val_scores = _scores(net, val_crops, device)
    threshold = pick_threshold(val_scores, val_labels, args.pass_target)
    macs, params = count_macs_params(net, GLYPH_SIDE, GLYPH_SIDE, channels=channels)
    report = {
        "macs": macs,
        "params": params,
        "steps": step,
        "crops_trained_on": stream.ready,
        "training_scenes": training_scenes(args).changes(),
        "crop_failure": stream.failure,
        "threshold": threshold,
        "train_split": pass_rates(val_scores, val_labels, threshold),
        "held_out": pass_rates(_scores(net, held_crops, device), held_labels, threshold),
    }
    print(json.dumps(report, indent=2))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")


def export(net: GlyphNet, out: Path, calibration: npt.NDArray[np.uint8]) -> None:
    """``net`` as ``fu_glyph.fp32.onnx`` and INT8 ``fu_glyph.int8.onnx`` in ``out``
    (calibrated on ``calibration``'s first 256 crops)."""
    net.eval()
    fp32 = out / GLYPH_FP32
    dummy = torch.zeros(1, net.channels, GLYPH_SIDE, GLYPH_SIDE)
    torch.onnx.export(
        Probability(net).eval(),  # export restores the wrapper's mode: a new one trains
        (dummy,),
        str(fp32),
        input_names=["crops"],
        output_names=["fu"],
        dynamic_axes={"crops": {0: "n"}, "fu": {0: "n"}},
        opset_version=17,
        dynamo=False,
    )
    tensors = (crop_tensor(calibration[i : i + 1]) for i in range(min(256, len(calibration))))
    quantize_model(fp32, out / GLYPH_MODEL, TensorReader("crops", tensors), QuantSettings())


def export_and_compare(out: Path, val_scenes: int, workers: int, pass_target: float) -> None:
    """Export ``out``'s ``glyph.pt``; pick the INT8 file's threshold on training-split crops
    it never trained on; print both files' pass rates there and on held-out crops."""
    net = load_net(out / "glyph.pt", torch.device("cpu"))
    channels = net.channels
    val, held_out = check_crops(val_scenes, workers, channels)
    export(net, out, val[0])
    int8 = GlyphCheck(out / GLYPH_MODEL, GlyphSpec(GLYPH_MODEL, 0.5))
    threshold = pick_threshold(int8.scores(val[0]), val[1], pass_target)
    macs, params = count_macs_params(net, GLYPH_SIDE, GLYPH_SIDE, channels=channels)
    report: dict[str, object] = {"threshold": threshold, "macs": macs, "params": params}
    for name in (GLYPH_FP32, GLYPH_MODEL):
        check = GlyphCheck(out / name, GlyphSpec(name, threshold))
        for split, (crops, labels) in (("train_split", val), ("held_out", held_out)):
            report[f"{name} {split}"] = pass_rates(check.scores(crops), labels, threshold)
    print(json.dumps(report, indent=2))
    (out / "export.json").write_text(json.dumps(report, indent=2) + "\n")


def ship(out: Path, models_dir: Path, described: dict[str, Any]) -> list[Path]:
    """Put ``out``'s exported recognizer into ``models_dir``: its two files, and in the glyph
    check's card there what is measured of them (FP32 file name, size, multiply-adds and
    parameters) and ``described`` (card fields such as ``metrics`` and ``provenance``: what
    only the person shipping it can write). The threshold and the views stay the card's own.
    Returns the cards written.

    Raises:
        SystemExit: ``out`` was not exported, or ``models_dir`` has no glyph check's card.
    """
    missing = [n for n in (GLYPH_FP32, GLYPH_MODEL, "export.json") if not (out / n).is_file()]
    if missing:
        raise SystemExit(f"{out} has no {', '.join(missing)}: run --export on it first")
    card = models_dir / Path(GLYPH_MODEL).with_suffix(".json")
    if not card.is_file():
        raise SystemExit(f"{models_dir} has no {card.name} to ship into")
    exported = json.loads((out / "export.json").read_text())
    measured = {
        "fp32_model": GLYPH_FP32,
        "macs": exported["macs"],
        "params": exported["params"],
        "file_size": (out / GLYPH_MODEL).stat().st_size,
    }
    for name in (GLYPH_FP32, GLYPH_MODEL):
        shutil.copyfile(out / name, models_dir / name)
    write_card(card, with_fields(read_card_fields(card), described | measured))
    return [card]


def _described(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        fields = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"--describe {path}: {error}") from None
    if not isinstance(fields, dict):
        raise SystemExit(f"{path}: want a JSON object of glyph fields, got {type(fields).__name__}")
    return fields


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--scenes", type=int, default=2000, help="training scenes to crop")
    parser.add_argument("--val-scenes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--max-steps", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=80_000_000)
    parser.add_argument(
        "--pass-target", type=float, default=PASS_TARGET, help="share of 福 crops to pass, (0, 1]"
    )
    parser.add_argument(
        "--colour", action="store_true", help="read colour crops (luma and two chroma channels)"
    )
    parser.add_argument("--resume", help="a glyph.pt to start from (a grey one for --colour too)")
    parser.add_argument("--out", default="build/glyph")
    # The scene flags change the training crops only; the judging crops stay at SCENES. Look-
    # alikes are always cut by the frame, and scenes are mixed as the generator mixes them.
    add_scene_arguments(parser, clips=True)
    parser.add_argument(
        "--export", action="store_true", help="export --out's glyph.pt to ONNX and compare"
    )
    parser.add_argument(
        "--ship",
        metavar="MODELS_DIR",
        help="copy --out's exported files into MODELS_DIR and describe them in its cards",
    )
    parser.add_argument(
        "--describe",
        metavar="JSON",
        help="with --ship: fields of the glyph check's card (metrics, provenance)",
    )
    parser.add_argument(
        "--recover",
        metavar="FP32_ONNX",
        help="rebuild --out's glyph.pt from an exported fp32 file (its batch-norm statistics "
        "from --val-scenes scenes), to train on from a shipped recognizer",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = make_parser().parse_args(argv)
    if args.export:
        export_and_compare(Path(args.out), args.val_scenes, args.workers, args.pass_target)
    elif args.ship:
        for card in ship(Path(args.out), Path(args.ship), _described(args.describe)):
            print(f"wrote {card}")
    elif args.recover:
        recover(Path(args.recover), Path(args.out), args.val_scenes, args.workers)
    else:
        train(args)


if __name__ == "__main__":
    main()
