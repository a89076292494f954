"""Scenes for LookBench-Mini: product views on studio backdrops and multi-item street looks.

Why apart from the plan and the writer: every function maps ``Item``s (and a seeded generator) to pixels and
nothing else, so the same plan renders the same bytes in any process and any order. The garments themselves are
drawn by ``garments``.
"""
from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from lookbench.dataset_builder.mini.garments import G, RAW_PX, SS, render_garment
from lookbench.dataset_builder.mini.plan import Item

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

