"""Synthetic scan targets and hand-held clips of them, for ``eval-targets`` and the tests.

Products are planar things a business might register: crops of natural photos
(posters, prints) and covers rendered with OpenCV (title, author, shapes,
publisher mark). Each product has a *look-alike*: for a photo crop, another
crop of the same photo; for a cover, the same layout, palette and publisher
mark with different title, author and artwork. Clips put one product in
perspective over a natural background, with camera drift, lighting changes,
blur, partial occlusion, noise and JPEG compression.

Deterministic by seed; pure numpy + OpenCV.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import ImageBGR
from detectors.synth.backgrounds import load_photos

Rng = np.random.Generator
Quad = npt.NDArray[np.float32]
"""4 x 2 float32 corners, clockwise from top-left."""

_WORDS = (
    "river", "moon", "garden", "silent", "north", "tea", "paper", "stone", "cloud", "harbor",
    "lantern", "winter", "golden", "city", "spring", "bamboo", "ocean", "road", "letters",
    "secret", "night", "forest", "dragon", "phoenix", "market", "kitchen", "songs", "history",
    "mountain", "light", "journey", "coffee", "orchard", "island", "echo", "thunder", "velvet",
    "maple", "copper",
)  # fmt: skip
_FONTS = (
    cv2.FONT_HERSHEY_SIMPLEX,
    cv2.FONT_HERSHEY_DUPLEX,
    cv2.FONT_HERSHEY_COMPLEX,
    cv2.FONT_HERSHEY_TRIPLEX,
    cv2.FONT_HERSHEY_SCRIPT_COMPLEX,
)


@dataclass(frozen=True, slots=True)
class Product:
    """A reference image to register and an unregistered look-alike of it."""

    name: str
    image: ImageBGR
    look_alike: ImageBGR


def _photos() -> tuple[ImageBGR, ...]:
    """Photos products are cut from: training photos of things (clip backgrounds use the
    held-out ones)."""
    return tuple(p for p in load_photos("objects") if min(p.shape[:2]) >= 300)


def photo_product(seed: int) -> Product:
    """A crop of a natural photo, and a crop of another quarter of the same photo.

    Seeds ``2k`` and ``2k + 1`` use the two diagonals of one photo's quarters,
    so products of distinct seeds below ``2 x (number of photos)`` never share pixels.
    """
    rng = np.random.default_rng(seed)
    photos = _photos()
    photo = photos[(seed // 2) % len(photos)]
    ph, pw = photo.shape[:2]
    qw, qh = pw // 2, ph // 2
    crops = []
    for quarter in ((0, 3), (1, 2))[seed % 2]:
        w, h = int(qw * rng.uniform(0.8, 1.0)), int(qh * rng.uniform(0.8, 1.0))
        x = (quarter % 2) * qw + int(rng.integers(qw - w + 1))
        y = (quarter // 2) * qh + int(rng.integers(qh - h + 1))
        crops.append(photo[y : y + h, x : x + w].copy())
    return Product(f"photo-{seed}", crops[0], crops[1])


def _text(rng: Rng, words: int) -> str:
    return " ".join(str(rng.choice(_WORDS)) for _ in range(words)).upper()


def _artwork(rng: Rng, canvas: ImageBGR, box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    for _ in range(int(rng.integers(6, 14))):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        kind = rng.integers(3)
        cx, cy = int(rng.integers(x0, x1)), int(rng.integers(y0, y1))
        size = int(rng.uniform(0.05, 0.3) * (x1 - x0))
        if kind == 0:
            cv2.circle(canvas, (cx, cy), size, colour, -1 if rng.random() < 0.6 else 3)
        elif kind == 1:
            corner = (min(x1, cx + size), min(y1, cy + int(size * rng.uniform(0.4, 1.6))))
            cv2.rectangle(canvas, (cx, cy), corner, colour, -1 if rng.random() < 0.6 else 3)
        else:
            points = rng.integers((x0, y0), (x1, y1), (int(rng.integers(3, 6)), 2)).astype(np.int32)
            cv2.fillPoly(canvas, [points], colour)


def _cover(layout: Rng, content: Rng, width: int, height: int) -> ImageBGR:
    """A book cover: ``layout`` draws palette, border and publisher mark; ``content`` the rest."""
    paper = layout.integers(20, 236, 3).astype(np.float32)
    ramp = np.linspace(layout.uniform(0.7, 1.0), layout.uniform(0.9, 1.2), height, dtype=np.float32)
    canvas = np.clip(paper[None, None, :] * ramp[:, None, None], 0, 255)
    image = np.ascontiguousarray(np.broadcast_to(canvas, (height, width, 3)).astype(np.uint8))
    ink = tuple(int(255 - c) for c in paper)
    accent = tuple(int(c) for c in layout.integers(0, 256, 3))
    cv2.rectangle(image, (8, 8), (width - 9, height - 9), accent, 4)
    art = (20, int(height * 0.3), width - 20, int(height * 0.78))
    _artwork(content, image, art)
    font = _FONTS[layout.integers(len(_FONTS))]
    for row, words in enumerate((2, 2)):
        y = int(height * (0.1 + 0.09 * row)) + 20
        cv2.putText(image, _text(content, words), (22, y), font, 0.9, ink, 2, cv2.LINE_AA)
    cv2.putText(
        image, _text(content, 2).title(), (22, int(height * 0.86)), font, 0.7, ink, 1, cv2.LINE_AA
    )
    mark = (width - 70, height - 60)  # publisher's mark: the same on the look-alike
    cv2.circle(image, (mark[0] + 20, mark[1] + 20), 18, accent, -1)
    cv2.putText(image, "PB", (mark[0] + 5, mark[1] + 28), cv2.FONT_HERSHEY_DUPLEX, 0.7, ink, 2)
    return image


def cover_product(seed: int) -> Product:
    """A rendered cover, and one with the same layout but different title, author and artwork."""
    rng = np.random.default_rng(seed)
    width = int(rng.integers(300, 380))
    height = int(width * rng.uniform(1.3, 1.5))
    layout_seed, content_seed, other_seed = (int(s) for s in rng.integers(0, 2**31, 3))

    def render(content: int) -> ImageBGR:
        return _cover(
            np.random.default_rng(layout_seed), np.random.default_rng(content), width, height
        )

    return Product(f"cover-{seed}", render(content_seed), render(other_seed))


def make_products(count: int, first_seed: int = 0) -> list[Product]:
    """``count`` distinct products: photo crops while photos last (no two share pixels),
    then covers."""
    photo_seeds = 2 * len(_photos())
    return [
        photo_product(seed) if seed < photo_seeds else cover_product(seed)
        for seed in range(first_seed, first_seed + count)
    ]


def _background(rng: Rng, width: int, height: int) -> ImageBGR:
    photos = load_photos("eval")
    photo = photos[rng.integers(len(photos))]
    ph, pw = photo.shape[:2]
    cw = int(pw * rng.uniform(0.5, 1.0))
    ch = min(ph, int(cw * height / width))
    x, y = int(rng.integers(pw - cw + 1)), int(rng.integers(ph - ch + 1))
    patch = photo[y : y + ch, x : x + cw]
    return np.asarray(cv2.resize(patch, (width, height), interpolation=cv2.INTER_LINEAR), np.uint8)


def _placement(rng: Rng, aspect: float, width: int, height: int) -> Quad:
    """Corners of a product seen in perspective, fully inside the frame."""
    side = rng.uniform(0.3, 0.65) * min(width, height)
    w, h = (side * np.sqrt(aspect), side / np.sqrt(aspect))
    angle = rng.normal(0, 0.25)
    square = np.array([[-w, -h], [w, -h], [w, h], [-w, h]], np.float64) / 2
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    corners = square @ rot.T
    # Perspective: one pair of opposite sides shrinks (the plane turns away from the camera).
    tilt = rng.uniform(0.0, 0.35)
    edge = int(rng.integers(4))
    corners[edge] *= 1 - tilt
    corners[(edge + 1) % 4] *= 1 - tilt
    span = corners.max(axis=0) - corners.min(axis=0)
    cx = rng.uniform(span[0] / 2 + 4, width - span[0] / 2 - 4)
    cy = rng.uniform(span[1] / 2 + 4, height - span[1] / 2 - 4)
    return np.asarray(corners + np.array([cx, cy]), np.float32)


@dataclass(frozen=True, slots=True)
class TargetClip:
    frames: list[ImageBGR]
    outlines: list[Quad]
    """Per frame, where the product's corners are."""


def make_clip(
    seed: int, product: ImageBGR | None, n_frames: int = 30, width: int = 640, height: int = 480
) -> TargetClip:
    """A hand-held clip of ``product`` (``None``: background only), visible in every frame.

    Per clip: a perspective placement, camera drift and shake, a lighting
    gain that changes over the clip, maybe an occluder covering up to a
    quarter of the product, maybe blur (Gaussian or motion) on some frames,
    sensor noise and JPEG compression.
    """
    rng = np.random.default_rng(seed)
    background = _background(rng, width, height)
    ph, pw = (1, 1) if product is None else product.shape[:2]
    quad = _placement(rng, pw / ph, width, height)
    scene = background.astype(np.float32)
    if product is not None:
        src = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float32)
        warp = cv2.getPerspectiveTransform(src, quad)
        flat = cv2.warpPerspective(product, warp, (width, height), flags=cv2.INTER_LINEAR)
        mask = cv2.warpPerspective(np.ones((ph, pw), np.float32), warp, (width, height))
        scene = scene * (1 - mask[..., None]) + flat.astype(np.float32) * mask[..., None]
    if product is not None and rng.random() < 0.3:  # a hand or an object in front of it
        x0, y0 = quad.min(axis=0)
        x1, y1 = quad.max(axis=0)
        ow, oh = (x1 - x0) * rng.uniform(0.2, 0.5), (y1 - y0) * rng.uniform(0.2, 0.5)
        ox = x0 if rng.random() < 0.5 else x1 - ow
        oy = rng.uniform(y0, y1 - oh)
        colour = tuple(float(c) for c in rng.uniform(40, 220, 3))
        cv2.rectangle(scene, (int(ox), int(oy)), (int(ox + ow), int(oy + oh)), colour, -1)
    gain_start, gain_end = rng.uniform(0.6, 1.3, 2)
    blur_kind = rng.choice(3, p=(0.5, 0.25, 0.25))
    drift = np.cumsum(rng.normal(0, 1.0, (n_frames, 2)), axis=0)
    frames: list[ImageBGR] = []
    outlines: list[Quad] = []
    for i in range(n_frames):
        shift = drift[i] + rng.normal(0, 0.7, 2)
        move = np.array([[1, 0, shift[0]], [0, 1, shift[1]]], np.float32)
        frame = cv2.warpAffine(scene, move, (width, height), borderMode=cv2.BORDER_REFLECT)
        frame *= gain_start + (gain_end - gain_start) * i / max(1, n_frames - 1)
        if blur_kind == 1 and rng.random() < 0.5:
            frame = cv2.GaussianBlur(frame, (0, 0), rng.uniform(0.8, 2.0))
        elif blur_kind == 2 and rng.random() < 0.5:
            length = int(rng.integers(3, 9))
            kernel = np.zeros((length, length), np.float32)
            kernel[length // 2] = 1.0 / length
            frame = cv2.filter2D(frame, -1, kernel)
        noise = rng.normal(0.0, 4.0, (height, width, 3)).astype(np.float32)
        image = np.clip(frame + noise, 0, 255).astype(np.uint8)
        _, blob = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(50, 90))])
        frames.append(np.asarray(cv2.imdecode(blob, cv2.IMREAD_COLOR), np.uint8))
        outlines.append((quad + shift).astype(np.float32))
    return TargetClip(frames, outlines)
