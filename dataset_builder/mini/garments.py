"""Canonical garment drawings for LookBench-Mini: one silhouette per category, every attribute visible.

Why a module of its own: the ground truth of LookBench-Mini is that each annotated attribute changes the pixels
of the canonical render, and this file is where that promise is kept (and reviewed). Pure PIL/numpy.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from lookbench.dataset_builder.mini.plan import Item

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
