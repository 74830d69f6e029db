"""Scenes of the synthetic world and how they are drawn: a textured background and one to three flat
shapes, each object with its exact mask. Pure numpy / Pillow; one scene always draws the same pixels."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image, ImageDraw

from .concepts import (
    BACKGROUND_PHRASES,
    BACKGROUND_WORDS,
    BACKGROUNDS,
    COLOURS,
    HIDDEN_COLOURS,
    POSITION_WORDS,
    POSITIONS,
    SHAPES,
    SIZES,
    article,
)

#: Side of a drawn scene in pixels (square).
_SCENE_SIDE = 128
#: Shapes are drawn this many times larger, then reduced: smooth edges, same result on every machine.
_SUPERSAMPLE = 4
#: Gap kept between two objects' outer circles, as a fraction of the side.
_GAP = 0.03
_JITTER = 0.03


@dataclass(frozen=True)
class SceneObject:
    """One shape: what it is, where, how large; ``half_colour`` paints its right half in another colour
    and ``opacity`` below 1 blends it with the background (the partial edits use both)."""

    shape: str
    colour: str
    size: str | None  # None: between two named sizes
    radius: float  # fraction of the side
    position: str | None  # None: between two named positions
    centre: tuple[float, float]  # fractions of the side
    half_colour: str | None = None
    opacity: float = 1.0

    @property
    def noun(self) -> str:
        return self.shape


@dataclass(frozen=True)
class Scene:
    """A background texture (with its own random seed) and objects drawn in order; ``blend`` mixes a second
    background in at the given weight."""

    background: str
    texture_seed: int
    objects: tuple[SceneObject, ...] = ()
    blend: tuple[str, int, float] | None = None  # (background, texture seed, weight)
    side: int = _SCENE_SIDE

    def find(self, shape: str) -> int:
        """Index of the object of ``shape`` (a scene holds each shape at most once)."""
        return next(i for i, obj in enumerate(self.objects) if obj.shape == shape)

    def with_object(self, index: int, **changes: object) -> Scene:
        objects = list(self.objects)
        objects[index] = replace(objects[index], **changes)  # type: ignore[arg-type]
        return replace(self, objects=tuple(objects))


@dataclass(frozen=True)
class DrawnScene:
    """A scene's pixels and each object's mask (True where the object is drawn)."""

    image: Image.Image
    masks: tuple[np.ndarray, ...] = field(default=())

    def mask_image(self, index: int) -> Image.Image:
        return Image.fromarray(self.masks[index].astype(np.uint8) * 255, mode="L")


# ---------------------------------------------------------------------------------------------- sampling


def place_object(rng: np.random.Generator, shape: str, colour: str, size: str, position: str) -> SceneObject:
    """An object at a named position, its centre moved by a small random offset."""
    x, y = POSITIONS[position]
    dx, dy = rng.uniform(-_JITTER, _JITTER, size=2)
    return SceneObject(shape, colour, size, SIZES[size], position, (float(x + dx), float(y + dy)))


def fits(objects: tuple[SceneObject, ...] | list[SceneObject], candidate: SceneObject,
         skip: int | None = None) -> bool:
    """Whether ``candidate`` keeps its gap to every object (but the one at index ``skip``) and stays inside."""
    x, y = candidate.centre
    r = candidate.radius
    if min(x, y) - r < 0.01 or max(x, y) + r > 0.99:
        return False
    return all(math.dist(candidate.centre, other.centre) >= candidate.radius + other.radius + _GAP
               for i, other in enumerate(objects) if i != skip)


def visible_colours(background: str) -> list[str]:
    """The colours an object may take on ``background``."""
    return [name for name in COLOURS if name not in HIDDEN_COLOURS[background]]


def random_scene(rng: np.random.Generator, *, min_objects: int = 1, max_objects: int = 3) -> Scene:
    """A scene of ``min_objects``..``max_objects`` objects of distinct shapes at distinct positions."""
    background = BACKGROUNDS[int(rng.integers(len(BACKGROUNDS)))]
    count = int(rng.integers(min_objects, max_objects + 1))
    shapes = [SHAPES[i] for i in rng.permutation(len(SHAPES))[:count]]
    positions = [list(POSITIONS)[i] for i in rng.permutation(len(POSITIONS))]
    colours = visible_colours(background)
    objects: list[SceneObject] = []
    for shape in shapes:
        colour = colours[int(rng.integers(len(colours)))]
        for position in positions:
            sizes = [list(SIZES)[i] for i in rng.permutation(len(SIZES))]
            placed = next((obj for size in sizes
                           if fits(objects, obj := place_object(rng, shape, colour, size, position))), None)
            if placed is not None:
                objects.append(placed)
                positions.remove(position)
                break
    return Scene(background, int(rng.integers(2**31)), tuple(objects))


# ---------------------------------------------------------------------------------------------- words


def object_words(obj: SceneObject, *, size: bool = True, position: bool = True) -> str:
    """'a large red ball on the left' (the size and position only where the object has a named one)."""
    words = [w for w in ((obj.size if size else None), obj.colour, obj.shape) if w]
    text = f"{article(words[0])} {' '.join(words)}"
    if position and obj.position:
        text += f" {POSITION_WORDS[obj.position]}"
    return text


def caption(scene: Scene) -> str:
    """The scene in one sentence: every object in order, then the background."""
    if not scene.objects:
        return f"an empty scene {BACKGROUND_WORDS[scene.background]}"
    parts = [object_words(obj) for obj in scene.objects]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed}, {BACKGROUND_WORDS[scene.background]}"


def _object_phrases(obj: SceneObject) -> list[str]:
    """Attribute phrases true of one object: its colour, size and position, each said of the shape."""
    phrases = [f"{article(obj.colour)} {obj.colour} {obj.shape}", f"the {obj.shape} is {obj.colour}"]
    if obj.size:
        phrases.append(f"{article(obj.size)} {obj.size} {obj.shape}")
    if obj.position:
        phrases.append(f"the {obj.shape} is {POSITION_WORDS[obj.position]}")
    return phrases


def scene_phrases(scene: Scene) -> list[str]:
    """Every attribute phrase true of the scene: each object's, then the background's."""
    phrases = [p for obj in scene.objects for p in _object_phrases(obj)]
    return phrases + [BACKGROUND_PHRASES[scene.background]]


# ---------------------------------------------------------------------------------------------- drawing


def _smooth_rows(field_: np.ndarray, length: int) -> np.ndarray:
    """Moving average along axis 0 (wrapping): noise stretched into vertical strokes."""
    out = np.zeros_like(field_)
    for shift in range(length):
        out += np.roll(field_, shift, axis=0)
    return out / length


def _background_texture(name: str, seed: int, side: int) -> np.ndarray:
    """The background ``name`` drawn with its own ``seed``: float RGB in [0, 255], shape (side, side, 3)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float64) / side
    if name == "grass":
        blades = _smooth_rows(rng.normal(size=(side, side)), max(2, side // 16))
        base = np.array([58.0, 138.0, 52.0]) + 30.0 * blades[..., None] * np.array([0.5, 1.0, 0.4])
    elif name == "sky":
        base = (1 - y)[..., None] * np.array([105.0, 165.0, 232.0]) + y[..., None] * np.array([185.0, 215.0, 248.0])
        for _ in range(3):
            cx, cy, sx, sy = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.06, 0.14), rng.uniform(0.03, 0.06)
            cloud = np.exp(-(((x - cx) / sx) ** 2 + ((y - cy) / sy) ** 2))[..., None]
            base = base * (1 - 0.8 * cloud) + 250.0 * 0.8 * cloud
    elif name == "sand":
        ripples = 9.0 * np.sin(2 * np.pi * (6 * y + 0.4 * np.sin(2 * np.pi * x + rng.uniform(0, 6))))
        base = np.array([214.0, 188.0, 138.0]) + (ripples + rng.normal(0, 9, size=(side, side)))[..., None]
    elif name == "night":
        base = np.array([14.0, 18.0, 50.0]) + rng.normal(0, 3, size=(side, side, 1))
        stars = rng.random((side, side)) < 0.006
        base = np.where(stars[..., None], np.array([235.0, 232.0, 200.0]), base)
    elif name == "snow":
        base = np.array([230.0, 235.0, 244.0]) + rng.normal(0, 5, size=(side, side, 1)) * np.array([1.0, 1.0, 0.6])
    else:
        raise ValueError(f"unknown background {name!r}; the world's backgrounds: {', '.join(BACKGROUNDS)}")
    return np.clip(np.broadcast_to(base, (side, side, 3)), 0, 255)


def _outline(draw: ImageDraw.ImageDraw, obj: SceneObject, side: int) -> None:
    """Draw ``obj``'s shape in white on ``draw`` (a supersampled mask)."""
    cx, cy = obj.centre[0] * side, obj.centre[1] * side
    r = obj.radius * side
    if obj.shape == "ball":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
    elif obj.shape == "ring":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
        inner = 0.55 * r
        draw.ellipse((cx - inner, cy - inner, cx + inner, cy + inner), fill=0)
    elif obj.shape == "box":
        half = 0.8 * r
        draw.rectangle((cx - half, cy - half, cx + half, cy + half), fill=255)
    elif obj.shape == "star":
        points = [(cx + (r if k % 2 == 0 else 0.45 * r) * math.cos(math.pi * (k / 5 - 0.5)),
                   cy + (r if k % 2 == 0 else 0.45 * r) * math.sin(math.pi * (k / 5 - 0.5))) for k in range(10)]
        draw.polygon(points, fill=255)
    elif obj.shape == "triangle":
        points = [(cx + r * math.cos(a), cy + 0.15 * r + r * math.sin(a))
                  for a in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6)]
        draw.polygon(points, fill=255)
    elif obj.shape == "cross":
        long, wide = 0.9 * r, 0.3 * r
        draw.rectangle((cx - long, cy - wide, cx + long, cy + wide), fill=255)
        draw.rectangle((cx - wide, cy - long, cx + wide, cy + long), fill=255)
    else:
        raise ValueError(f"unknown shape {obj.shape!r}; the world's shapes: {', '.join(SHAPES)}")


def _coverage(obj: SceneObject, side: int) -> np.ndarray:
    """How much of each pixel ``obj`` covers, in [0, 1] (its shape drawn large and reduced)."""
    big = Image.new("L", (side * _SUPERSAMPLE, side * _SUPERSAMPLE), 0)
    _outline(ImageDraw.Draw(big), obj, side * _SUPERSAMPLE)
    return np.asarray(big.reduce(_SUPERSAMPLE), dtype=np.float64) / 255.0


def draw_scene(scene: Scene) -> DrawnScene:
    """The scene's pixels (8-bit RGB) and every object's mask."""
    side = scene.side
    pixels = _background_texture(scene.background, scene.texture_seed, side)
    if scene.blend is not None:
        other, seed, weight = scene.blend
        pixels = (1 - weight) * pixels + weight * _background_texture(other, seed, side)
    masks = []
    columns = np.arange(side)[None, :] + 0.5
    for obj in scene.objects:
        cover = _coverage(obj, side)
        colour = np.broadcast_to(np.array(COLOURS[obj.colour], dtype=np.float64), (side, side, 3))
        if obj.half_colour is not None:
            right = np.broadcast_to((columns >= obj.centre[0] * side)[..., None], (side, side, 3))
            colour = np.where(right, np.array(COLOURS[obj.half_colour], dtype=np.float64), colour)
        alpha = (cover * obj.opacity)[..., None]
        pixels = pixels * (1 - alpha) + colour * alpha
        masks.append(cover >= 0.5)
    image = Image.fromarray(np.rint(pixels).astype(np.uint8), mode="RGB")
    return DrawnScene(image, tuple(masks))
