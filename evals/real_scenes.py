"""Real pictures of 福 (and of other characters) as a phone camera sees them: clips and stills.

A real-world set is a folder with ``pos/`` (pictures of 福) and ``neg/`` (pictures of other
characters), and optionally ``PROVENANCE.tsv`` whose ``file`` and ``style`` columns give each
picture's script style. :func:`load_set` reads it; :func:`render_clip` holds one picture up to
a moving camera: printed on paper in front of a background photo, at a slant (a perspective
warp), coming closer (it grows), with hand-held drift, shake and motion blur, the light
changing, and upside down (倒福) when asked (``still=True``: one frame of such a clip).

The ground truth of a frame is the axis-aligned box of the picture's ink box (:func:`ink_box`,
or the picture's bounds) carried into the frame by the same warp, cut to the frame.

Pure numpy + OpenCV, deterministic by the random generator passed in.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import cv2
import numpy as np
import numpy.typing as npt

from detectors.core import Box, ImageBGR
from detectors.synth.backgrounds import load_photos

Label = Literal["pos", "neg"]
Truth = Literal["ink", "image"]
Rng = np.random.Generator
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp"})
MAX_SIDE = 1024
"""A picture's longer side is shrunk to this on loading (the camera never sees more of it)."""
PROVENANCE = "PROVENANCE.tsv"
NO_STYLE = "-"

SIZE_START = (0.2, 0.45)
"""The picture's longer side at the clip's start, as a share of the frame's short side..."""
SIZE_GROWTH = (1.3, 2.4)
"""...multiplied by this over the clip (the phone comes closer)..."""
SIZE_MAX = 0.9
"""...up to this."""
LIGHT_HEADROOM = 1.8
"""The most that light and colour cast together brighten a pixel (1.25 x 1.25 x 1.15)."""
NOISE_SHIFT = 32
"""Pixels by which a frame's sensor noise may be moved against the clip's noise field."""
YAW_DEG, PITCH_DEG, ROLL_DEG = 35.0, 25.0, 12.0
"""The largest slant (turn about the vertical and horizontal axes) and in-plane tilt."""


class RealSetError(ValueError):
    """A real-world set folder that cannot be used: no ``pos/``, an unreadable picture."""


@dataclass(frozen=True, slots=True)
class RealImage:
    """One picture of the set: ``name`` is its path under the set folder (``pos/x.jpg``)."""

    name: str
    label: Label
    style: str
    """The ``style`` column of ``PROVENANCE.tsv`` (:data:`NO_STYLE` without one)."""
    image: ImageBGR
    ink: Box
    """The box of the character's ink in ``image`` (:func:`ink_box`)."""

    @property
    def script(self) -> str:
        """The style's first word (``regular``, ``running``, ``photo``, ...): the report's group."""
        return style_group(self.style)

    def truth_box(self, truth: Truth) -> Box:
        """The picture's box that a detection of it should find: its ink or its bounds."""
        if truth == "ink":
            return self.ink
        height, width = self.image.shape[:2]
        return (0.0, 0.0, float(width), float(height))


def style_group(style: str) -> str:
    """``"running (calligraphy dictionary)"`` -> ``"running"``; ``"photo/print: ..."`` ->
    ``"photo"``: the style up to its first space, bracket, colon, slash or comma."""
    return re.split(r"[\s(:/,]", style.strip(), maxsplit=1)[0] or NO_STYLE


def load_set(directory: Path, max_images: int | None = None) -> list[RealImage]:
    """The pictures of ``directory``'s ``pos/`` and ``neg/`` (``neg/`` may be missing), sorted
    by name within each, the first ``max_images`` of each when given.

    Raises:
        RealSetError: no ``pos/`` folder, no picture in it, or a picture OpenCV cannot read.
    """
    if not (directory / "pos").is_dir():
        raise RealSetError(f"{directory}: no pos/ folder (pictures of 福; neg/ holds the others)")
    styles = read_styles(directory / PROVENANCE)
    images = []
    for label in ("pos", "neg"):
        folder = directory / label
        files = sorted(
            p for p in folder.glob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
        )
        for path in files[:max_images]:
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                raise RealSetError(f"cannot read picture {path}")
            image = _shrunk(np.asarray(image, np.uint8))
            name = f"{label}/{path.name}"
            images.append(RealImage(name, label, styles.get(name, NO_STYLE), image, ink_box(image)))
    if not any(image.label == "pos" for image in images):
        raise RealSetError(
            f"{directory / 'pos'}: no pictures ({', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    return images


def read_styles(path: Path) -> dict[str, str]:
    """``file -> style`` from a ``PROVENANCE.tsv`` (empty without the file; the first row of a
    file listed twice wins).

    Raises:
        RealSetError: the file lacks a ``file`` or ``style`` column.
    """
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if rows and not {"file", "style"} <= rows[0].keys():
        raise RealSetError(f"{path}: needs the columns 'file' and 'style'")
    styles: dict[str, str] = {}
    for row in rows:
        styles.setdefault(row["file"], row["style"] or NO_STYLE)
    return styles


def _shrunk(image: ImageBGR) -> ImageBGR:
    scale = MAX_SIDE / max(image.shape[:2])
    if scale >= 1:
        return image
    return np.asarray(cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA))


def ink_box(image: ImageBGR) -> Box:
    """The box of the character's ink in a picture of one character, estimated from colour.

    Ink is what differs from the paper (the median colour of the picture's border, in CIE Lab)
    by more than Otsu's cut of the differences; strokes closer than 6 % of the short side are
    joined, and the box holds every joined part at least a quarter the size of the largest (a
    caption under a calligraphy sample is smaller). A part that fills its convex hull (a red
    diamond or disc of paper on a white page) is paper, not ink: the search repeats inside it,
    against its own colour. An estimate: ``--truth image`` uses the picture's bounds instead.
    """
    height, width = image.shape[:2]
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    ring = max(1, round(0.03 * min(height, width)))
    inside = np.ones((height, width), bool)
    border = inside.copy()
    border[ring : height - ring, ring : width - ring] = False
    ground = np.median(lab[border], axis=0)
    box: Box = (0.0, 0.0, float(width), float(height))
    joint = max(3, round(0.06 * min(height, width))) | 1
    for _ in range(3):
        distance = np.linalg.norm(lab - ground, axis=2)
        scaled = np.clip(distance, 0, 255).astype(np.uint8)
        cut, _ = cv2.threshold(scaled[inside], 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
        ink = (distance > max(cut, 20.0)) & inside
        joined = cv2.morphologyEx(
            ink.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((joint, joint), np.uint8)
        )
        count, parts, stats, _ = cv2.connectedComponentsWithStats(joined)
        if count <= 1:
            return box
        areas = stats[1:, cv2.CC_STAT_AREA]
        kept = np.isin(parts, 1 + np.flatnonzero(areas >= 0.25 * areas.max()))
        ys, xs = np.nonzero(kept & ink)
        if not len(xs):
            return box
        box = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
        hull = cv2.convexHull(np.stack([xs, ys], 1).astype(np.int32))
        if len(xs) < 0.75 * max(1.0, cv2.contourArea(hull)):
            return box
        inside = kept
        ground = np.median(lab[kept & ink], axis=0)
    return box


# ---------------------------------------------------------------- the camera


@dataclass(frozen=True, slots=True)
class CameraPath:
    """Per frame of a clip: where the picture is and how it looks (all ``n_frames`` long)."""

    size: npt.NDArray[np.float64]
    """The picture's longer side as a share of the frame's short side."""
    centre: npt.NDArray[np.float64]
    """``n x 2``: the picture's centre as shares of the frame's width and height."""
    angles: npt.NDArray[np.float64]
    """``n x 3``: yaw, pitch and roll in degrees (roll 180 more for 倒福)."""
    blur: npt.NDArray[np.float64]
    """``n x 2``: the motion blur's streak, pixels of a 1000 px short side."""
    light: npt.NDArray[np.float64]
    """``n``: the light, a factor of every pixel."""
    cast: npt.NDArray[np.float64]
    """``3``: the colour cast, a factor per BGR channel."""
    shade: float
    """How much darker one side of the frame is than the other (0..0.4)."""
    noise: float
    """Sensor noise, grey levels."""
    background: int
    """Which background photo; its crop follows."""
    crop: tuple[float, float, float]
    """The photo's crop: share of its side, and the left and top corner as shares."""


def camera_path(
    rng: Rng, n_frames: int, fps: float, turned: bool, still: bool = False
) -> CameraPath:
    """How a person holds a phone up to a picture for ``n_frames`` frames at ``fps``: it grows
    (they come closer), drifts and shakes, turns a little, streaks when the hand moves fast,
    and the light changes; rolled 180 degrees for a 倒福 (``turned``). A ``still`` is one
    moment of such a clip, anywhere in it (one frame)."""
    t = rng.random(1) if still else np.arange(n_frames) / max(1, n_frames - 1)
    start = math.exp(rng.uniform(math.log(SIZE_START[0]), math.log(SIZE_START[1])))
    end = min(SIZE_MAX, start * rng.uniform(*SIZE_GROWTH))
    ease = t * t * (3 - 2 * t)
    size = start + (end - start) * ease
    pace = math.sqrt(30.0 / fps)  # a random walk's step per frame, for the same drift per second
    drift = np.cumsum(rng.normal(0, 0.004 * pace, (n_frames, 2)), axis=0)
    shake = rng.normal(0, 0.002, (n_frames, 2))
    centre = 0.5 + rng.uniform(-0.12, 0.12, 2) + drift + shake
    angles = np.array(
        [rng.uniform(-YAW_DEG, YAW_DEG), rng.uniform(-PITCH_DEG, PITCH_DEG), 0.0]
    ) + np.cumsum(rng.normal(0, 0.3 * pace, (n_frames, 3)), axis=0)
    angles[:, 2] += rng.uniform(-ROLL_DEG, ROLL_DEG) + (180.0 if turned else 0.0)
    speed = np.diff(centre, axis=0, prepend=centre[:1]) * 1000 * rng.uniform(0.5, 1.5)
    jolts = rng.random(n_frames) < 0.1  # a hand's sudden jerk
    speed[jolts] += rng.normal(0, 8, (int(jolts.sum()), 2))
    light = rng.uniform(0.6, 1.25) * (
        1 + rng.uniform(0, 0.25) * np.sin(2 * math.pi * (t * rng.uniform(0.3, 1.2) + rng.random()))
    )
    cast = rng.uniform(0.85, 1.15, 3)
    shade = float(rng.uniform(0, 0.4))
    crop = (rng.uniform(0.4, 1.0), rng.random(), rng.random())
    return CameraPath(
        size,
        centre,
        angles,
        speed,
        light,
        cast,
        shade,
        float(rng.uniform(2, 6)),
        int(rng.integers(1 << 30)),
        crop,
    )


def placement(
    image_size: tuple[int, int], path: CameraPath, i: int, width: int, height: int
) -> npt.NDArray[np.float64]:
    """The 3 x 3 homography that carries picture pixels into frame ``i`` of ``path``.

    The picture is a plane turned by the frame's yaw, pitch and roll in front of a pinhole
    camera, its longer side ``path.size[i]`` of the frame's short side at its centre; it is
    moved, where it can be, so that the whole picture stays in the frame.
    """
    w, h = image_size
    short = min(width, height)
    scale = path.size[i] * short / max(w, h)
    yaw, pitch, roll = np.radians(path.angles[i])
    rx = np.array(
        [[1, 0, 0], [0, math.cos(pitch), -math.sin(pitch)], [0, math.sin(pitch), math.cos(pitch)]]
    )
    ry = np.array(
        [[math.cos(yaw), 0, math.sin(yaw)], [0, 1, 0], [-math.sin(yaw), 0, math.cos(yaw)]]
    )
    rz = np.array(
        [[math.cos(roll), -math.sin(roll), 0], [math.sin(roll), math.cos(roll), 0], [0, 0, 1]]
    )
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64)
    plane = np.column_stack([(corners - (w / 2, h / 2)) * scale, np.zeros(4)])
    turned = plane @ (rz @ ry @ rx).T
    focal = 1.2 * max(width, height)
    projected = turned[:, :2] * (focal / (focal + turned[:, 2:3]))
    centre = path.centre[i] * (width, height)
    low, high = projected.min(axis=0), projected.max(axis=0)
    frame = np.array([width, height], np.float64)
    centre = np.where(high - low < frame, np.clip(centre, -low, frame - high), frame / 2)
    source = corners.astype(np.float32)
    target = (projected + centre).astype(np.float32)
    return np.asarray(cv2.getPerspectiveTransform(source, target), np.float64)


def warped_box(box: Box, homography: npt.NDArray[np.float64], width: int, height: int) -> Box:
    """The axis-aligned box around ``box``'s corners carried by ``homography``, cut to the
    ``width x height`` frame."""
    x0, y0, x1, y1 = box
    corners = np.array([[[x0, y0], [x1, y0], [x1, y1], [x0, y1]]], np.float64)
    moved = cv2.perspectiveTransform(corners, homography)[0]
    lo = np.clip(moved.min(axis=0), 0, (width, height))
    hi = np.clip(moved.max(axis=0), 0, (width, height))
    return (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))


def background(path: CameraPath, width: int, height: int, margin: float) -> ImageBGR:
    """The clip's background: a crop of one of the held-out background photos, ``margin`` of
    each side larger than the frame, so that the camera can drift over it."""
    photos = load_photos("eval")
    photo = photos[path.background % len(photos)]
    ph, pw = photo.shape[:2]
    share, left, top = path.crop
    big_w, big_h = round(width * (1 + 2 * margin)), round(height * (1 + 2 * margin))
    cw = max(8, min(pw, round(pw * share)))
    ch = max(8, min(ph, round(cw * big_h / big_w)))
    x, y = round(left * (pw - cw)), round(top * (ph - ch))
    patch = photo[y : y + ch, x : x + cw]
    return np.asarray(cv2.resize(patch, (big_w, big_h), interpolation=cv2.INTER_LINEAR))


class RealClip(Sequence[ImageBGR]):
    """The frames of pictures held up to the camera, rendered when first asked for (a session
    of an emulated phone decodes only the frames it processes), and per frame the true 福
    boxes (``N x 4``; none for a picture of another character).

    ``images`` are shown in equal parts of the clip, in turn, on one camera path
    (:func:`camera_path`); ``None``: the background alone. Deterministic by ``seed`` (a
    :class:`numpy.random.SeedSequence` entropy): a frame's pixels do not depend on which
    other frames were rendered. ``still``: one frame, from anywhere in such a clip.
    """

    def __init__(
        self,
        images: Sequence[RealImage | None],
        seed: Sequence[int],
        n_frames: int,
        fps: float,
        size: tuple[int, int],
        turned: bool = False,
        truth: Truth = "ink",
        still: bool = False,
    ) -> None:
        self.seed = tuple(seed)
        self.width, self.height = size
        self.path = camera_path(np.random.default_rng(self.seed), n_frames, fps, turned, still)
        self.images = [
            images[min(len(images) - 1, i * len(images) // n_frames)] for i in range(n_frames)
        ]
        self._scene = background(self.path, self.width, self.height, 0.06)
        # The colour cast and the shading across the frame, scaled by LIGHT_HEADROOM: one
        # multiplication per frame, its scale the frame's light.
        ramp = np.linspace(1.0, 1.0 - self.path.shade, self.width)
        light = ramp[None, :, None] * self.path.cast[None, None, :] * 255 / LIGHT_HEADROOM
        self._light = np.ascontiguousarray(
            np.broadcast_to(np.clip(light, 0, 255).astype(np.uint8), (self.height, self.width, 3))
        )
        self._homographies = [
            None
            if image is None
            else placement((image.image.shape[1], image.image.shape[0]), self.path, i, *size)
            for i, image in enumerate(self.images)
        ]
        self.boxes = [self._truth(i, truth) for i in range(n_frames)]
        self._rendered: dict[int, ImageBGR] = {}
        noise = np.random.default_rng(self.seed).standard_normal(
            (self.height + NOISE_SHIFT, self.width + NOISE_SHIFT, 3), dtype=np.float32
        )
        self._noise = np.round(noise * np.float32(self.path.noise)).astype(np.int16)

    def __len__(self) -> int:
        return len(self.images)

    @overload
    def __getitem__(self, index: int) -> ImageBGR: ...

    @overload
    def __getitem__(self, index: slice) -> list[ImageBGR]: ...

    def __getitem__(self, index: int | slice) -> ImageBGR | list[ImageBGR]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        i = range(len(self))[index]
        if i not in self._rendered:
            self._rendered[i] = self.render(i)
        return self._rendered[i]

    def _truth(self, i: int, truth: Truth) -> npt.NDArray[np.float32]:
        image, homography = self.images[i], self._homographies[i]
        if image is None or homography is None or image.label != "pos":
            return np.zeros((0, 4), np.float32)
        box = warped_box(image.truth_box(truth), homography, self.width, self.height)
        return np.array([box], np.float32)

    def render(self, i: int) -> ImageBGR:
        """Frame ``i``: the background moved with the camera, the picture printed on it through
        the frame's homography, then light, shading, motion blur and sensor noise."""
        path, width, height = self.path, self.width, self.height
        scene = self._scene
        margin_x, margin_y = (scene.shape[1] - width) // 2, (scene.shape[0] - height) // 2
        dx, dy = np.round((path.centre[i] - path.centre[0]) * (width, height) * 0.5).astype(int)
        x, y = (
            margin_x + int(np.clip(dx, -margin_x, margin_x)),
            margin_y + int(np.clip(dy, -margin_y, margin_y)),
        )
        frame = np.ascontiguousarray(scene[y : y + height, x : x + width])
        image, homography = self.images[i], self._homographies[i]
        if image is not None and homography is not None:
            _print(frame, image.image, homography)
        scale = float(path.light[i]) * LIGHT_HEADROOM / 255
        frame = np.asarray(cv2.multiply(frame, self._light, scale=scale), np.uint8)
        frame = _streaked(frame, path.blur[i] * min(width, height) / 1000)
        # Sensor noise: a part of the clip's noise field, moved per frame (drawing it afresh
        # per frame costs more than the rest of the frame).
        ox, oy = np.random.default_rng([*self.seed, i]).integers(NOISE_SHIFT, size=2)
        noise = self._noise[oy : oy + height, ox : ox + width]
        return np.asarray(cv2.add(frame, noise, dtype=cv2.CV_8U), np.uint8)


def _print(frame: ImageBGR, picture: ImageBGR, homography: npt.NDArray[np.float64]) -> None:
    """Paste ``picture`` onto ``frame`` through ``homography``, shrunk first where the warp
    shrinks it (a warp alone would alias its strokes)."""
    height, width = frame.shape[:2]
    h, w = picture.shape[:2]
    corners = np.array([[[0, 0], [w, 0], [w, h], [0, h]]], np.float64)
    moved = cv2.perspectiveTransform(corners, homography)[0]
    sides = np.linalg.norm(moved - np.roll(moved, -1, axis=0), axis=1)
    shrink = min(1.0, max(sides[0], sides[2]) / w, max(sides[1], sides[3]) / h)
    if shrink < 0.8:
        picture = np.asarray(
            cv2.resize(picture, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
        )
        homography = homography @ np.diag([1 / shrink, 1 / shrink, 1.0])
    x0, y0 = np.clip(np.floor(moved.min(axis=0)).astype(int), 0, (width, height))
    x1, y1 = np.clip(np.ceil(moved.max(axis=0)).astype(int) + 1, 0, (width, height))
    if x1 <= x0 or y1 <= y0:
        return
    # Warped into the picture's part of the frame only.
    homography = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64) @ homography
    size = (int(x1 - x0), int(y1 - y0))
    printed = cv2.warpPerspective(picture, homography, size, flags=cv2.INTER_LINEAR)
    cover = cv2.warpPerspective(np.full(picture.shape[:2], 255, np.uint8), homography, size)
    np.copyto(frame[y0:y1, x0:x1], printed, where=(cover > 127)[..., None])


def _streaked(frame: ImageBGR, streak: npt.NDArray[np.float64]) -> ImageBGR:
    """Motion blur along ``streak`` (pixels, x and y); none under two pixels."""
    length = float(np.hypot(*streak))
    if length < 2:
        return frame
    side = math.ceil(length) | 1
    kernel = np.zeros((side, side), np.float32)
    c = side // 2
    ux, uy = streak / length
    half = length / 2
    start = (round(c - ux * half), round(c - uy * half))
    cv2.line(kernel, start, (round(c + ux * half), round(c + uy * half)), 1.0, 1)
    kernel /= max(float(kernel.sum()), 1e-6)
    return np.asarray(cv2.filter2D(frame, -1, kernel), np.uint8)
