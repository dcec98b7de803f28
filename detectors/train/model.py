"""The 福 detector network: a slimmable supernet of plain 3x3 convolutions, and its tiers.

One set of weights serves every tier: a tier uses the first ``width`` channels
of each convolution, at its own input size, and its own batch-norm statistics
(switchable BN). For
export, :func:`materialize` cuts a tier out as an ordinary network with the
batch norm folded into the convolutions, so the ONNX graph is Conv/Relu only
(what ONNX Runtime's INT8 kernels run fastest).

Outputs, at stride 8: ``heatmap`` (after sigmoid) and ``boxes``, the distances
from each cell centre to the box's left, top, right and bottom edges, in input
pixels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

STRIDE = 8
TIERS = ("s", "m", "l")
WIDTH = {"s": 1.0, "m": 0.75, "l": 1.0}
"""Each tier's share of the channels. ``s`` keeps them all: layers narrower than about
16 channels gain little from INT8 (docs/benchmarks.md), so it saves its MACs in pixels."""
INPUT_SCALE = {"s": 0.5, "m": 1.0, "l": 1.0}
"""Each tier's input side as a fraction of the widest tier's: the smallest trades
resolution for speed (a quarter of the pixels), so it also trains on shrunk scenes."""
BASE_CHANNELS = {"c1": 16, "c2": 32, "c4": 64, "c8": 80, "c16": 96, "neck": 64}
"""Channel counts of the shipped supernet's widest tier. A teacher trained only to be
distilled into the shipped tiers multiplies them by its ``width_scale``."""
BOX_SCALE = 16.0
"""The box branch predicts distances / BOX_SCALE, which keeps its raw outputs near 1."""
HEAT_PRIOR = 0.01


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """``(width, height)`` times ``scale``, rounded: a tier's input, or a scene shrunk for it."""
    return round(width * scale), round(height * scale)


def input_size(tier: str, width: int, height: int) -> tuple[int, int]:
    """``(width, height)`` of ``tier``'s input when the widest tier takes ``width x height``."""
    return scaled_size(width, height, INPUT_SCALE[tier])


def output_size(width: int, height: int) -> tuple[int, int]:
    """``(width, height)`` of the stride-8 output maps for a ``width x height`` input."""
    return -(-width // STRIDE), -(-height // STRIDE)


def channels(tier: str, width_scale: float = 1.0) -> dict[str, int]:
    """Channel counts of ``tier``: base counts times its width (and ``width_scale``), rounded up
    to a multiple of 8."""
    share = WIDTH[tier] * width_scale
    return {k: max(8, -(-int(v * share) // 8) * 8) for k, v in BASE_CHANNELS.items()}


# (name, input channel key or "rgb", output channel key or a number, kernel, stride)
LAYERS: tuple[tuple[str, str, str | int, int, int], ...] = (
    ("stem", "rgb", "c1", 3, 2),
    ("down4", "c1", "c2", 3, 2),
    ("conv4", "c2", "c2", 3, 1),
    ("down8", "c2", "c4", 3, 2),
    ("conv8", "c4", "c4", 3, 1),
    ("down16", "c4", "c8", 3, 2),
    ("conv16", "c8", "c8", 3, 1),
    ("down32", "c8", "c16", 3, 2),
    ("conv32", "c16", "c16", 3, 1),
    ("lat32", "c16", "neck", 1, 1),
    ("lat16", "c8", "neck", 1, 1),
    ("lat8", "c4", "neck", 1, 1),
    ("fuse16", "neck", "neck", 3, 1),
    ("fuse8", "neck", "neck", 3, 1),
    ("head", "neck", "neck", 3, 1),
    ("heat", "neck", 1, 1, 1),
    ("box", "neck", 4, 1, 1),
)
OUTPUT_LAYERS = ("heat", "box")
"""Layers with a bias and no batch norm; every other layer is conv + BN + ReLU."""


def _count(key: str | int, tier: str, width_scale: float) -> int:
    if isinstance(key, int):
        return key
    return 3 if key == "rgb" else channels(tier, width_scale)[key]


class SlimConv(nn.Module):
    """A convolution whose active channels depend on the tier, with one BN per tier."""

    def __init__(
        self,
        name: str,
        cin: str,
        cout: str | int,
        kernel: int,
        stride: int,
        width_scale: float = 1.0,
    ) -> None:
        super().__init__()
        self.io = {t: (_count(cin, t, width_scale), _count(cout, t, width_scale)) for t in TIERS}
        big_in, big_out = self.io["l"]
        self.stride, self.padding = stride, kernel // 2
        self.weight = nn.Parameter(torch.empty(big_out, big_in, kernel, kernel))
        nn.init.kaiming_normal_(self.weight, nonlinearity="relu")
        self.is_output = name in OUTPUT_LAYERS
        if self.is_output:
            prior = -torch.log(torch.tensor((1 - HEAT_PRIOR) / HEAT_PRIOR))
            self.bias = nn.Parameter(
                torch.full((big_out,), float(prior) if name == "heat" else 0.5)
            )
            nn.init.normal_(self.weight, std=0.01)
        else:
            self.bn = nn.ModuleDict({t: nn.BatchNorm2d(self.io[t][1]) for t in TIERS})
        self.tier = "l"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cin, cout = self.io[self.tier]
        y = F.conv2d(x, self.weight[:cout, :cin], None, self.stride, self.padding)
        if self.is_output:
            return y + self.bias[:cout, None, None]
        return F.relu(self.bn[self.tier](y))

    def folded(self) -> nn.Module:
        """This layer at the current tier as a plain conv (+ ReLU), batch norm folded in."""
        cin, cout = self.io[self.tier]
        weight = self.weight[:cout, :cin].detach()
        if self.is_output:
            bias = self.bias[:cout].detach()
        else:
            bn = self.bn[self.tier]
            gain = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
            weight = weight * gain[:, None, None, None]
            bias = bn.bias.detach() - bn.running_mean * gain
        conv = nn.Conv2d(cin, cout, weight.shape[-1], self.stride, self.padding)
        conv.weight.data.copy_(weight)
        conv.bias.data.copy_(bias)
        return conv if self.is_output else nn.Sequential(conv, nn.ReLU())


class FuNet(nn.Module):
    """The detector's topology; ``layers`` are :class:`SlimConv` (training) or folded convs.

    ``forward`` returns raw heat-map logits and raw box outputs (distances / BOX_SCALE)
    while training, and sigmoid heat map and pixel distances in export mode.
    ``width_scale`` multiplies every layer's channels (new :class:`SlimConv` layers only).
    """

    def __init__(
        self, layers: nn.ModuleDict | None = None, export: bool = False, width_scale: float = 1.0
    ) -> None:
        super().__init__()
        self.layers = layers or nn.ModuleDict(
            {spec[0]: SlimConv(*spec, width_scale=width_scale) for spec in LAYERS}
        )
        self.export = export

    def set_tier(self, tier: str) -> None:
        for layer in self.layers.values():
            if isinstance(layer, SlimConv):
                layer.tier = tier

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        run = self.layers
        x = run["conv4"](run["down4"](run["stem"](x)))
        f8 = run["conv8"](run["down8"](x))
        f16 = run["conv16"](run["down16"](f8))
        f32 = run["conv32"](run["down32"](f16))
        p16 = run["lat16"](f16) + F.interpolate(run["lat32"](f32), size=f16.shape[-2:])
        p16 = run["fuse16"](p16)
        p8 = run["fuse8"](run["lat8"](f8) + F.interpolate(p16, size=f8.shape[-2:]))
        feat = run["head"](p8)
        heat, box = run["heat"](feat), run["box"](feat)
        if self.export:
            return torch.sigmoid(heat), F.relu(box) * BOX_SCALE
        return heat, box


def materialize(supernet: FuNet, tier: str) -> FuNet:
    """Tier ``tier`` of ``supernet`` as a plain export-mode network (eval statistics)."""
    supernet.set_tier(tier)
    layers = nn.ModuleDict(
        {
            name: layer.folded()
            for name, layer in supernet.layers.items()
            if isinstance(layer, SlimConv)
        }
    )
    return FuNet(layers, export=True).eval()


def count_macs_params(
    model: nn.Module, height: int, width: int, channels: int = 3
) -> tuple[int, int]:
    """Multiply-accumulates of one forward pass at ``height x width`` (convolutions and linear
    layers), and the parameter count."""
    macs = 0

    def hook(module: nn.Module, _: object, out: torch.Tensor) -> None:
        nonlocal macs
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            macs += out.numel() * module.in_channels * kh * kw // module.groups
        elif isinstance(module, nn.Linear):
            macs += out.numel() * module.in_features

    counted = (nn.Conv2d, nn.Linear)
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, counted)]
    training = model.training
    model.eval()  # a pass in training mode would move batch-norm statistics toward zeros
    with torch.no_grad():
        model(torch.zeros(1, channels, height, width, device=next(model.parameters()).device))
    model.train(training)
    for handle in handles:
        handle.remove()
    return macs, sum(p.numel() for p in model.parameters())
