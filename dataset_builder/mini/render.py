"""Pure drawing for LookBench-Mini: canonical garments, product views, backdrops and street looks.

Why apart from the plan and the writer: every function here maps an ``Item`` (and a seeded generator) to
pixels and nothing else, so the same plan renders the same bytes in any process and any order, and the
drawing can be read or changed without touching the ground truth. Everything is drawn with PIL and numpy.
"""
from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from .plan import Item

ITEM_PX = 128  # item images
RAW_PX = 256  # outfit photos
SS = 2  # supersampling factor: everything is drawn at twice the size, then box-reduced
G = ITEM_PX * SS  # canonical garment canvas

COLORS = {
    "black": (35, 35, 38), "white": (242, 242, 238), "grey": (135, 135, 140), "red": (196, 36, 44),
    "blue": (38, 78, 186), "green": (36, 136, 70), "yellow": (238, 196, 40), "pink": (236, 138, 178),
    "brown": (122, 78, 42), "purple": (118, 58, 156),
}
SOLES = {"white": (240, 240, 235), "black": (30, 30, 30), "gum": (176, 128, 70)}
HARDWARE = {"gold": (214, 172, 48), "silver": (190, 192, 202)}


# --------------------------------------------------------------------------------------------- garments
def _u(pts):
    return [(x * G, y * G) for x, y in pts]


def _ubox(x0, y0, x1, y1):
    return (x0 * G, y0 * G, x1 * G, y1 * G)


def _mirror(left):
    """Full symmetric outline from its left half, which runs from the top centre to the bottom centre."""
    return left + [(1 - x, y) for x, y in reversed(left[1:-1])]


def _lum(rgb) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


@lru_cache(maxsize=None)
def _pattern_masks() -> dict[str, Image.Image]:
    """Where the secondary colour goes, per pattern, on the canonical canvas (L: 0, 128 = half, 255 = full)."""
    yy, xx = np.mgrid[0:G, 0:G]
    row = yy // 28
    dx = (xx + 14 * (row % 2)) % 28 - 14
    dy = yy % 28 - 14
    masks = {
        "solid": np.zeros((G, G)),
        "stripes": (yy // 12) % 2 * 255,
        "dots": (dx * dx + dy * dy <= 36) * 255,
        "check": ((yy // 14) % 2 + (xx // 14) % 2) * 255 // 2,
    }
    return {name: Image.fromarray(m.astype(np.uint8), "L") for name, m in masks.items()}


class _Painter:
    """Draws one garment: body shapes into a mask, a pattern fill through it, then outlined details on top."""

    def __init__(self, base, pattern):
        self.base = tuple(int(c) for c in base)
        self.pattern = pattern
        self.mask = Image.new("L", (G, G), 0)
        self._md = ImageDraw.Draw(self.mask)
        self._outlines = []
        dark = _lum(self.base) < 70
        self.line = tuple(min(255, c + 90) for c in self.base) if dark else tuple(int(c * 0.55) for c in self.base)
        self.inner = tuple(min(255, c + 60) for c in self.base) if dark else tuple(int(c * 0.65) for c in self.base)
        self.second = (40, 40, 60) if _lum(self.base) > 150 else (245, 245, 240)

    def poly(self, pts):
        pts = _u(pts)
        self._md.polygon(pts, fill=255)
        self._outlines.append(("poly", pts))

    def ellipse(self, box):
        self._md.ellipse(_ubox(*box), fill=255)
        self._outlines.append(("ellipse", _ubox(*box)))

    def chord(self, box, start, end):
        self._md.chord(_ubox(*box), start, end, fill=255)
        self._outlines.append(("chord", _ubox(*box), start, end))

    def rrect(self, box, r):
        self._md.rounded_rectangle(_ubox(*box), radius=r * G, fill=255)
        self._outlines.append(("rrect", _ubox(*box), r * G))

    def fill(self):
        """Pattern-fill the body and outline every body shape; afterwards details are drawn on ``self.img``."""
        second, base = (Image.new("RGBA", (G, G), c + (255,)) for c in (self.second, self.base))
        self.img = Image.composite(second, base, _pattern_masks()[self.pattern])
        self.img.putalpha(self.mask)
        self.d = ImageDraw.Draw(self.img)
        ink = self.line + (255,)
        for kind, *args in self._outlines:
            if kind == "poly":
                self.d.line(args[0] + [args[0][0]], fill=ink, width=3, joint="curve")
            elif kind == "ellipse":
                self.d.ellipse(args[0], outline=ink, width=3)
            elif kind == "chord":
                self.d.chord(args[0], args[1], args[2], outline=ink, width=3)
            else:
                self.d.rounded_rectangle(args[0], radius=args[1], outline=ink, width=3)

    def dpoly(self, pts, fill, outline=True):
        self.d.polygon(_u(pts), fill=tuple(fill) + (255,), outline=self.line + (255,) if outline else None, width=2)

    def dline(self, pts, color, width=3):
        self.d.line(_u(pts), fill=tuple(color) + (255,), width=width)

    def dellipse(self, box, fill, outline=True):
        self.d.ellipse(_ubox(*box), fill=tuple(fill) + (255,), outline=self.line + (255,) if outline else None, width=2)

    def drect(self, box, fill, outline=True):
        self.d.rectangle(_ubox(*box), fill=tuple(fill) + (255,), outline=self.line + (255,) if outline else None, width=2)


def _draw_tops(p: _Painter, a):
    left = {
        "sleeveless": [(0.5, 0.13), (0.41, 0.13), (0.35, 0.16), (0.34, 0.30), (0.31, 0.42), (0.30, 0.88), (0.5, 0.88)],
        "short": [(0.5, 0.13), (0.41, 0.13), (0.30, 0.18), (0.12, 0.32), (0.19, 0.43), (0.31, 0.37), (0.30, 0.88), (0.5, 0.88)],
        "long": [(0.5, 0.13), (0.41, 0.13), (0.30, 0.18), (0.19, 0.38), (0.10, 0.85), (0.20, 0.87), (0.31, 0.43), (0.30, 0.88), (0.5, 0.88)],
    }[a["sleeve_length"]]
    p.poly(_mirror(left))
    p.fill()
    p.dline([(0.31, 0.84), (0.69, 0.84)], p.line, 2)
    neck = a["neckline"]
    if neck == "v-neck":
        p.dpoly([(0.40, 0.13), (0.60, 0.13), (0.5, 0.34)], p.inner)
    else:
        p.d.pieslice(_ubox(0.41, 0.06, 0.59, 0.21), 0, 180, fill=p.inner + (255,), outline=p.line + (255,), width=2)
    if neck == "collar":
        p.dpoly([(0.41, 0.12), (0.5, 0.18), (0.47, 0.27), (0.36, 0.20)], p.base)
        p.dpoly([(0.59, 0.12), (0.5, 0.18), (0.53, 0.27), (0.64, 0.20)], p.base)
        p.dline([(0.5, 0.21), (0.5, 0.40)], p.line, 2)
        for y in (0.29, 0.36):
            p.dellipse((0.485, y - 0.015, 0.515, y + 0.015), p.second)


def _draw_dresses(p: _Painter, a):
    hem = {"mini": 0.58, "midi": 0.76, "maxi": 0.95}[a["length"]]
    w = 0.12 + (hem - 0.38) * 0.42
    top = {
        "sleeveless": [(0.5, 0.05), (0.43, 0.05), (0.38, 0.06), (0.37, 0.14), (0.36, 0.23)],
        "short": [(0.5, 0.05), (0.43, 0.05), (0.36, 0.07), (0.25, 0.17), (0.30, 0.24), (0.36, 0.22)],
        "long": [(0.5, 0.05), (0.43, 0.05), (0.36, 0.07), (0.28, 0.22), (0.21, 0.52), (0.28, 0.54), (0.36, 0.25)],
    }[a["sleeve_length"]]
    p.poly(_mirror(top + [(0.38, 0.38), (0.5 - w, hem), (0.5, hem)]))
    p.fill()
    p.dline([(0.38, 0.38), (0.62, 0.38)], p.line, 2)
    neck = a["neckline"]
    if neck == "v-neck":
        p.dpoly([(0.42, 0.05), (0.58, 0.05), (0.5, 0.25)], p.inner)
    elif neck == "square":
        p.drect((0.42, 0.05, 0.58, 0.18), p.inner)
    else:
        p.d.pieslice(_ubox(0.42, -0.01, 0.58, 0.11), 0, 180, fill=p.inner + (255,), outline=p.line + (255,), width=2)


def _draw_skirts(p: _Painter, a):
    hem = {"mini": 0.42, "knee": 0.64, "maxi": 0.92}[a["length"]]
    shape = a["silhouette"]
    if shape == "a-line":
        w = 0.18 + (hem - 0.13) * 0.30
        left = [(0.5, 0.08), (0.32, 0.08), (0.32, 0.13), (0.5 - w, hem), (0.5, hem)]
    elif shape == "pencil":
        left = [(0.5, 0.08), (0.32, 0.08), (0.32, 0.13), (0.29, 0.25), (0.33, hem), (0.5, hem)]
    else:
        left, w = [(0.5, 0.08), (0.32, 0.08), (0.32, 0.13)], 0.18
        tiers = [0.13 + (hem - 0.13) * i / 3 for i in range(4)]
        for i in range(3):
            left += [(0.5 - w, tiers[i]), (0.5 - w - 0.035, tiers[i + 1])]
            w += 0.075
        left.append((0.5, hem))
    p.poly(_mirror(left))
    p.fill()
    p.drect((0.32, 0.08, 0.68, 0.13), p.inner)
    if shape == "pencil":
        p.dline([(0.5, hem), (0.5, hem - 0.09)], p.line, 3)
    elif shape == "tiered":
        w = 0.215
        for y in [0.13 + (hem - 0.13) * i / 3 for i in (1, 2)]:
            p.dline([(0.5 - w, y), (0.5 + w, y)], p.line, 3)
            w += 0.075


def _draw_trousers(p: _Painter, a):
    hem = {"shorts": 0.40, "cropped": 0.70, "full": 0.94}[a["leg_length"]]
    half = {"skinny": 0.045, "straight": 0.075, "wide": 0.115}[a["fit"]]
    cx = 0.38 if a["fit"] == "wide" else 0.40
    p.poly(_mirror([(0.5, 0.05), (0.30, 0.05), (0.30, 0.10), (cx - half, hem), (cx + half, hem), (0.5, 0.33)]))
    p.fill()
    p.drect((0.30, 0.05, 0.70, 0.10), p.inner)
    p.dline([(0.5, 0.10), (0.5, 0.24)], p.line, 2)
    p.dline([(0.33, 0.11), (0.38, 0.17)], p.line, 2)
    p.dline([(0.67, 0.11), (0.62, 0.17)], p.line, 2)


def _draw_outerwear(p: _Painter, a):
    hem = {"cropped": 0.52, "hip": 0.72, "knee": 0.95}[a["length"]]
    side = {"cropped": 0.28, "hip": 0.27, "knee": 0.24}[a["length"]]
    collar = a["collar"]
    if collar == "hood":
        p.ellipse((0.36, 0.0, 0.64, 0.19))
    if collar == "stand":
        p.poly([(0.41, 0.05), (0.59, 0.05), (0.59, 0.11), (0.41, 0.11)])
    p.poly(_mirror([(0.5, 0.10), (0.41, 0.10), (0.27, 0.15), (0.17, 0.40), (0.09, 0.80), (0.18, 0.82),
                    (0.29, 0.38), (side, hem), (0.5, hem)]))
    p.fill()
    if collar == "hood":
        p.dellipse((0.41, 0.03, 0.59, 0.15), p.inner)
    if collar == "lapel":
        p.dpoly([(0.41, 0.10), (0.59, 0.10), (0.5, 0.36)], p.inner)
        p.dpoly([(0.41, 0.10), (0.34, 0.20), (0.39, 0.22), (0.36, 0.26), (0.5, 0.37)], p.base)
        p.dpoly([(0.59, 0.10), (0.66, 0.20), (0.61, 0.22), (0.64, 0.26), (0.5, 0.37)], p.base)
    closure = a["closure"]
    if closure == "zip":
        p.dline([(0.5, 0.11), (0.5, hem)], HARDWARE["silver"], 6)
        p.dline([(0.5, 0.11), (0.5, hem)], (90, 90, 96), 2)
    elif closure == "buttons":
        p.dline([(0.5, 0.36), (0.5, hem)], p.line, 2)
        y = 0.40
        while y < hem - 0.04:
            p.dellipse((0.525, y - 0.025, 0.575, y + 0.025), p.inner)
            y += 0.1
    else:
        p.dline([(0.5, 0.36), (0.5, hem)], p.line, 2)
        y = min(0.45, hem - 0.10)
        p.drect((0.29, y, 0.71, y + 0.06), p.inner)
        p.d.rectangle(_ubox(0.46, y - 0.01, 0.54, y + 0.07), outline=HARDWARE["silver"] + (255,), width=4)


# Per shoe style: the upper's outline, then the sole pieces (drawn in the ``sole`` colour over the body).
_SHOE_SHAPES = {
    "sneaker": ([(0.12, 0.72), (0.12, 0.52), (0.20, 0.45), (0.34, 0.45), (0.44, 0.52), (0.62, 0.56), (0.80, 0.60),
                 (0.90, 0.66), (0.92, 0.72)],
                [[(0.10, 0.70), (0.94, 0.70), (0.94, 0.76), (0.90, 0.80), (0.12, 0.80), (0.10, 0.76)]]),
    "boot": ([(0.18, 0.14), (0.42, 0.14), (0.44, 0.54), (0.62, 0.58), (0.82, 0.62), (0.92, 0.68), (0.92, 0.74),
              (0.14, 0.74), (0.16, 0.40)],
             [[(0.12, 0.74), (0.94, 0.74), (0.94, 0.80), (0.30, 0.80), (0.30, 0.86), (0.12, 0.86)]]),
    "pump": ([(0.13, 0.44), (0.22, 0.50), (0.50, 0.66), (0.70, 0.68), (0.88, 0.72), (0.92, 0.78), (0.55, 0.78),
              (0.30, 0.68), (0.14, 0.62)],
             [[(0.14, 0.62), (0.30, 0.68), (0.55, 0.78), (0.92, 0.78), (0.92, 0.82), (0.55, 0.82), (0.30, 0.72), (0.16, 0.66)],
              [(0.14, 0.62), (0.23, 0.66), (0.21, 0.92), (0.17, 0.92)]]),
}


def _draw_shoes(p: _Painter, a):
    style = a["style"]
    upper, soles = _SHOE_SHAPES[style]
    for shape in [upper] + soles:
        p.poly(shape)
    p.fill()
    for shape in soles:
        p.dpoly(shape, SOLES[a["sole"]])
    if style == "sneaker":
        p.dpoly([(0.16, 0.48), (0.33, 0.48), (0.36, 0.52), (0.15, 0.53)], p.inner)
        for i in range(4):
            x = 0.42 + i * 0.06
            p.dline([(x, 0.51 + i * 0.012), (x + 0.05, 0.58 + i * 0.012)], p.second, 3)
        p.dline([(0.72, 0.60), (0.76, 0.70)], p.line, 2)
    elif style == "boot":
        p.drect((0.18, 0.14, 0.42, 0.19), p.inner)
        p.dline([(0.40, 0.20), (0.41, 0.50)], p.line, 2)
    else:
        p.dline([(0.13, 0.44), (0.22, 0.50), (0.50, 0.66)], p.inner, 5)


def _draw_bags(p: _Painter, a):
    shape, hw = a["shape"], HARDWARE[a["hardware"]]
    if shape == "tote":
        p.poly([(0.22, 0.36), (0.78, 0.36), (0.86, 0.90), (0.14, 0.90)])
        p.fill()
        for x0 in (0.28, 0.52):
            p.d.arc(_ubox(x0, 0.12, x0 + 0.20, 0.60), 180, 360, fill=p.inner + (255,), width=9)
            for x in (x0, x0 + 0.20):
                p.dellipse((x - 0.025, 0.355, x + 0.025, 0.405), hw)
    elif shape == "crossbody":
        p.rrect((0.24, 0.44, 0.76, 0.84), 0.06)
        p.fill()
        p.dline([(0.27, 0.46), (0.5, 0.04), (0.73, 0.46)], p.inner, 6)
        p.dline([(0.24, 0.60), (0.5, 0.68), (0.76, 0.60)], p.line, 3)
        p.dellipse((0.45, 0.615, 0.55, 0.715), hw)
    else:
        p.rrect((0.10, 0.38, 0.90, 0.72), 0.03)
        p.fill()
        p.dline([(0.11, 0.39), (0.5, 0.60), (0.89, 0.39)], p.line, 3)
        p.drect((0.45, 0.56, 0.55, 0.65), hw)


def _draw_hats(p: _Painter, a):
    style = a["style"]
    if style == "cap":
        p.chord((0.20, 0.26, 0.74, 0.86), 180, 360)
        p.poly([(0.64, 0.52), (0.95, 0.57), (0.93, 0.63), (0.60, 0.60)])
        p.fill()
        p.dellipse((0.44, 0.235, 0.50, 0.285), p.inner)
        p.d.arc(_ubox(0.35, 0.26, 0.59, 0.86), 180, 360, fill=p.line + (255,), width=2)
    elif style == "beanie":
        p.chord((0.24, 0.12, 0.76, 0.96), 180, 360)
        p.poly([(0.22, 0.50), (0.78, 0.50), (0.78, 0.68), (0.22, 0.68)])
        p.fill()
        for i in range(14):
            x = 0.24 + i * 0.04
            p.dline([(x, 0.51), (x, 0.67)], p.line, 2)
    elif style == "bucket":
        p.chord((0.33, 0.20, 0.67, 0.36), 180, 360)
        p.poly([(0.33, 0.28), (0.67, 0.28), (0.71, 0.56), (0.29, 0.56)])
        p.poly([(0.29, 0.55), (0.71, 0.55), (0.88, 0.73), (0.12, 0.73)])
        p.fill()
        for f in (0.35, 0.7):
            p.dline([(0.29 - 0.17 * f, 0.55 + 0.18 * f), (0.71 + 0.17 * f, 0.55 + 0.18 * f)], p.line, 2)
    else:
        p.ellipse((0.06, 0.56, 0.94, 0.72))
        p.poly([(0.30, 0.64), (0.32, 0.34), (0.42, 0.28), (0.5, 0.33), (0.58, 0.28), (0.68, 0.34), (0.70, 0.64)])
        p.fill()
        p.drect((0.305, 0.52, 0.695, 0.60), p.inner)


_DRAW = {
    "tops": _draw_tops, "dresses": _draw_dresses, "skirts": _draw_skirts, "trousers": _draw_trousers,
    "outerwear": _draw_outerwear, "shoes": _draw_shoes, "bags": _draw_bags, "hats": _draw_hats,
}


@lru_cache(maxsize=256)
def render_garment(item: Item) -> Image.Image:
    """The canonical RGBA render of an item (transparent background, ``G``×``G``) — its ground truth in pixels."""
    a = item.a
    base = np.clip(np.asarray(COLORS[a["color"]]) + np.asarray(item.shade), 0, 255)
    p = _Painter(base, a.get("pattern", "solid"))
    _DRAW[item.category](p, a)
    return p.img


# --------------------------------------------------------------------------------------------- views
def _place(garment: Image.Image, size: int, center, scale, angle=0.0, flip=False, squash=1.0, shear=0.0, pivot=(G / 2, G / 2)):
    """Affine-map the garment onto a transparent ``size``² canvas, ``pivot`` going to ``center`` (rotate, scale,
    flip, squash, shear)."""
    t = math.radians(angle)
    rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    fwd = rot @ np.array([[scale * squash * (-1 if flip else 1), 0], [0, scale]]) @ np.array([[1, shear], [0, 1]])
    inv = np.linalg.inv(fwd)
    # Only the region the garment lands on is resampled (then pasted): same pixels, a fraction of the work.
    x0, y0, x1, y1 = garment.getbbox()
    corners = fwd @ (np.array([[x0, x0, x1, x1], [y0, y1, y0, y1]], float) - np.asarray(pivot, float)[:, None])
    corners += np.asarray(center, float)[:, None]
    ox, oy = (max(0, int(math.floor(v)) - 2) for v in corners.min(axis=1))
    ex, ey = (min(size, int(math.ceil(v)) + 2) for v in corners.max(axis=1))
    canvas = Image.new(garment.mode, (size, size), 0)
    if ex <= ox or ey <= oy:
        return canvas
    off = np.asarray(pivot, float) - inv @ (np.asarray(center, float) - (ox, oy))
    data = (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1])
    canvas.paste(garment.transform((ex - ox, ey - oy), Image.Transform.AFFINE, data, resample=Image.Resampling.BILINEAR), (ox, oy))
    return canvas


def _light(img: Image.Image, brightness: float, warmth: float) -> Image.Image:
    """Global exposure and colour-temperature change, small enough to keep every colour name (one LUT pass)."""
    v = np.arange(256) * brightness
    lut = np.concatenate([v + warmth, v, v - warmth])
    return img.point(np.clip(np.rint(lut), 0, 255).astype(int).tolist())


def _muted(rng, s=(0.12, 0.35), v=(0.72, 0.95)):
    r, g, b = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(*s), rng.uniform(*v))
    return np.array([r, g, b]) * 255


_LOW = 64  # smooth backdrops are computed on a coarse grid and upsampled (they have no fine detail)


@lru_cache(maxsize=1)
def _grid() -> tuple[np.ndarray, np.ndarray]:
    yy, xx = (np.mgrid[0:_LOW, 0:_LOW].astype(np.float32) + 0.5) / _LOW
    return yy, xx


def _upsample(arr: np.ndarray, size: int) -> Image.Image:
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB").resize((size, size), Image.Resampling.BILINEAR)


def _gradient(rng, c0, c1) -> np.ndarray:
    yy, xx = _grid()
    t = rng.uniform(0, 2 * math.pi)
    g = np.clip((xx - 0.5) * math.cos(t) + (yy - 0.5) * math.sin(t) + 0.5, 0, 1)[..., None]
    return c0 * (1 - g) + c1 * g


def _styled_background(size, rng) -> Image.Image:
    """AIGen-studio backdrop: a two-tone gradient with a soft wave texture and a vignette."""
    arr = _gradient(rng, _muted(rng), _muted(rng))
    yy, xx = _grid()
    f = rng.uniform(3, 7)
    arr = arr * (1 + 0.04 * np.sin(f * (xx + rng.uniform() * yy) * 2 * math.pi))[..., None]
    arr = arr * (1 - 0.25 * ((xx - 0.5) ** 2 + (yy - 0.5) ** 2))[..., None]
    return _upsample(arr, size)


def _soft_shadow(alpha: Image.Image, dx: int, dy: int, strength: float) -> Image.Image:
    """A blurred, offset drop shadow as an RGBA layer (blur by down- and up-sampling: cheap and deterministic)."""
    size = alpha.size[0]
    small = alpha.resize((size // 8, size // 8), Image.Resampling.BOX).resize((size, size), Image.Resampling.BILINEAR)
    shifted = Image.new("L", (size, size), 0)
    shifted.paste(small.point(lambda v: int(v * strength)), (dx, dy))
    layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    layer.putalpha(shifted)
    return layer


@lru_cache(maxsize=256)
def _framing(item: Item) -> tuple[tuple[float, float], float]:
    """Centre and fit-to-frame scale of the garment's own extent: product photos show the product, centred."""
    x0, y0, x1, y1 = render_garment(item).getchannel("A").getbbox()
    return ((x0 + x1) / 2, (y0 + y1) / 2), 0.86 * G / max(x1 - x0, y1 - y0)


def render_view(item: Item, style: str, rng: np.random.Generator) -> Image.Image:
    """One product photo of ``item`` (``ITEM_PX``² RGB): ``flat`` = flat-lay on white, ``studio`` = styled shot."""
    garment = render_garment(item)
    pivot, fit = _framing(item)
    if style == "flat":
        placed = _place(garment, G, (G / 2 + rng.uniform(-6, 6), G / 2 + rng.uniform(-6, 6)), fit * rng.uniform(0.88, 1.0),
                        angle=rng.uniform(-5, 5), flip=rng.uniform() < 0.25, pivot=pivot)
        bg = Image.new("RGBA", (G, G), tuple(int(v) for v in 250 + rng.integers(-3, 4, 3)) + (255,))
        shadow = _soft_shadow(placed.getchannel("A"), 4, 6, 0.18)
        light = (1.0, 0.0)
    elif style == "studio":
        placed = _place(garment, G, (G / 2 + rng.uniform(-14, 14), G / 2 + rng.uniform(-14, 14)), fit * rng.uniform(0.68, 0.92),
                        angle=rng.uniform(-15, 15), flip=rng.uniform() < 0.3, squash=rng.uniform(0.85, 1.0),
                        shear=rng.uniform(-0.1, 0.1), pivot=pivot)
        bg = _styled_background(G, rng).convert("RGBA")
        shadow = _soft_shadow(placed.getchannel("A"), int(rng.integers(-8, 9)), int(rng.integers(4, 12)), 0.35)
        light = (rng.uniform(0.87, 1.13), rng.uniform(-12, 12))
    else:
        raise ValueError(f"unknown view style {style!r}; expected 'flat' or 'studio'")
    img = Image.alpha_composite(Image.alpha_composite(bg, shadow), placed).convert("RGB")
    if light != (1.0, 0.0):
        img = _light(img, *light)
    return img.reduce(SS)


# --------------------------------------------------------------------------------------------- street looks
S = RAW_PX  # street scenes are drawn at their final size: the garments come in supersampled already
# Where each category sits on a standing figure: centre (dx from the figure axis, y), size in canvas pixels.
_LAYOUT = {
    "hats": (0, 36, 75), "tops": (0, 95, 125), "outerwear": (0, 102, 140), "dresses": (0, 122, 165),
    "trousers": (0, 165, 125), "skirts": (0, 155, 120), "shoes": (12, 218, 80), "bags": (75, 145, 90),
}
_DRAW_ORDER = ("shoes", "trousers", "skirts", "dresses", "tops", "outerwear", "bags", "hats")
MIN_VISIBLE = 0.45  # fraction of an item's pixels that must stay unoccluded in a street look


def _street_background(rng, aigen: bool) -> Image.Image:
    """A cluttered backdrop: buildings, windows, poles, shrubs and pavement (real) or bokeh and floor (aigen)."""
    if aigen:
        img = _upsample(_gradient(rng, _muted(rng, (0.3, 0.6), (0.6, 0.95)), _muted(rng, (0.3, 0.6), (0.4, 0.8))), S).convert("RGBA")
        bokeh = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
        bd = ImageDraw.Draw(bokeh)
        for _ in range(int(rng.integers(10, 18))):
            x, y, r = rng.uniform(0, 64), rng.uniform(0, 50), rng.uniform(2, 7)
            bd.ellipse((x - r, y - r, x + r, y + r), fill=tuple(int(c) for c in _muted(rng, (0.0, 0.4), (0.8, 1.0))) + (110,))
        floor = int(rng.uniform(0.72, 0.82) * 64)
        bd.rectangle((0, floor, 64, 64), fill=tuple(int(c) for c in _muted(rng, (0.05, 0.2), (0.5, 0.8))) + (255,))
        bd.ellipse((13, floor + 1, 51, floor + 5), fill=(0, 0, 0, 60))
        return Image.alpha_composite(img, bokeh.resize((S, S), Image.Resampling.BILINEAR)).convert("RGB")
    img = _upsample(_gradient(rng, _muted(rng, (0.05, 0.3)), _muted(rng, (0.05, 0.3), (0.5, 0.8))), S)
    d = ImageDraw.Draw(img)
    horizon = int(rng.uniform(0.62, 0.74) * S)
    x = -int(rng.uniform(0, 20))
    while x < S:
        w, h = int(rng.uniform(30, 80)), int(rng.uniform(0.3, 0.9) * horizon)
        wall = tuple(int(c) for c in _muted(rng, (0.05, 0.35), (0.35, 0.85)))
        d.rectangle((x, horizon - h, x + w, horizon), fill=wall)
        win = tuple(int(c * 0.55) for c in wall)
        for wy in range(horizon - h + 6, horizon - 12, 17):
            for wx in range(x + 5, x + w - 9, 14):
                d.rectangle((wx, wy, wx + 7, wy + 10), fill=win)
        x += w + int(rng.uniform(0, 10))
    d.rectangle((0, horizon, S, S), fill=tuple(int(c) for c in _muted(rng, (0.0, 0.15), (0.35, 0.6))))
    for _ in range(5):
        x0 = rng.uniform(-S, 2 * S)
        d.line([(S / 2 + rng.uniform(-15, 15), horizon), (x0, S)], fill=(200, 200, 195), width=2)
    for _ in range(int(rng.integers(2, 5))):
        px = rng.uniform(0, S)
        d.rectangle((px, horizon - rng.uniform(75, 150), px + 4, horizon + 10), fill=(60, 60, 64))
    for _ in range(int(rng.integers(2, 6))):
        sx, sy, r = rng.uniform(0, S), horizon + rng.uniform(-10, 5), rng.uniform(12, 30)
        d.ellipse((sx - r, sy - r * 0.8, sx + r, sy + r * 0.6), fill=tuple(int(c) for c in (40, 95, 50) + rng.integers(-20, 20, 3)))
    return img


def render_outfit(items: Sequence[Item], rng: np.random.Generator, *, aigen: bool, judged: int | None = None):
    """A street-look photo of a figure wearing ``items`` (``RAW_PX``² RGB) and each item's bbox in its pixels.

    Items overlap in their natural layering (a bag over the top, the top over the waistband); a layout is
    re-drawn until every judged item (all, or only the first ``judged``) keeps at least ``MIN_VISIBLE`` of its
    pixels, the best of 12 tries otherwise. Layouts are judged on a coarse ``_LOW``² canvas, which is cheap.
    """
    order = sorted(range(len(items)), key=lambda i: _DRAW_ORDER.index(items[i].category))
    judged = len(items) if judged is None else judged
    best = None
    for _ in range(12):
        axis = rng.uniform(0.40, 0.60) * S
        side = -1 if rng.uniform() < 0.5 else 1
        poses = {}
        for i in order:
            dx, y, size = _LAYOUT[items[i].category]
            poses[i] = dict(center=(axis + side * dx + rng.uniform(-9, 9), y + rng.uniform(-9, 9)),
                            scale=size * rng.uniform(0.9, 1.1) / G, angle=rng.uniform(-8, 8),
                            flip=items[i].category in ("shoes", "hats", "bags") and side < 0)
        cover, visible = np.zeros((_LOW, _LOW), np.float32), []
        for i in reversed(order):  # from the top layer down
            k = _LOW / S
            pose = dict(poses[i], center=(poses[i]["center"][0] * k, poses[i]["center"][1] * k), scale=poses[i]["scale"] * k)
            alpha = np.asarray(_place(render_garment(items[i]).getchannel("A"), _LOW, **pose), np.float32) / 255
            if i < judged:
                visible.append(float((alpha * (1 - cover)).sum() / max(alpha.sum(), 1.0)))
            cover = np.maximum(cover, alpha)
        if best is None or min(visible) > best[0]:
            best = (min(visible), poses)
        if best[0] >= MIN_VISIBLE:
            break
    layers = {i: _place(render_garment(items[i]), S, **pose) for i, pose in best[1].items()}
    img = _street_background(rng, aigen).convert("RGBA")
    for i in order:
        img = Image.alpha_composite(img, _soft_shadow(layers[i].getchannel("A"), 3, 4, 0.3))
        img = Image.alpha_composite(img, layers[i])
    img = _light(img.convert("RGB"), rng.uniform(0.85, 1.15) if aigen else rng.uniform(0.9, 1.1), rng.uniform(-14, 14))
    boxes = [list(layers[i].getchannel("A").point(lambda v: 255 if v > 64 else 0).getbbox()) for i in range(len(items))]
    return img, boxes

