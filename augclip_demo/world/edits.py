"""Edits of the world with a known answer: for one source scene and one instruction, the correct edit and
four that fail it in known ways, and the order people would put them in, fixed by how each was built.

=============  ==================================================================  ======
role           how it is built                                                     rating
=============  ==================================================================  ======
``correct``    the instruction carried out, nothing else changed                   5
``partial``    half done: half the object recoloured, half the way moved or        3
               resized, or added, removed, replaced or re-backgrounded at half
               strength (blended with what was there)
``over_edit``  the correct edit plus unrelated changes: another background and     2
               another object recoloured (for a background edit: every object)
``unchanged``  a copy of the source                                                2
``wrong``      an edit of the same kind that misses: another colour, position,    1
               shape or background, the other direction, or another object
=============  ==================================================================  ======

The ratings say what the constructions mean (an edit that did what was asked, then one that did half of
it, then the two ways of failing the balance the metrics are about, then the edit that did something
else); no metric is ever consulted to build or order them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..choices import EDIT_KINDS
from .concepts import BACKGROUND_WORDS, BACKGROUNDS, POSITION_WORDS, POSITIONS, SHAPES, SIZES, article
from .scenes import Scene, SceneObject, fits, place_object, random_scene, visible_colours

#: HATIE's edit type of each kind (``None``: HATIE has no type for it).
HATIE_TYPES: dict[str, str | None] = {"recolour": "attribute", "resize": "resize", "move": None, "add": "add",
                                      "remove": "remove", "replace": "replace", "background": "background"}
#: The roles of a world item's edits and the rating each gets by construction (higher is better).
RATINGS: dict[str, float] = {"correct": 5.0, "partial": 3.0, "over_edit": 2.0, "unchanged": 2.0, "wrong": 1.0}
#: A manifest role for each (AugCLIP's AccBoth compares gt with ep and em).
MANIFEST_ROLES: dict[str, str] = {"correct": "gt", "partial": "candidate", "over_edit": "em", "unchanged": "ep",
                                  "wrong": "candidate"}
_SIZE_ORDER = list(SIZES)


@dataclass(frozen=True)
class WorldEdit:
    """One instruction on one source scene, with every constructed result.

    ``edited`` is the shape the instruction is about (for ``add``, the new one; for ``replace``, the old
    one; ``None`` for a background change) and ``new_shape`` the shape that comes in (add, replace).
    """

    kind: str
    instruction: str
    source: Scene
    results: dict[str, Scene]  # role -> scene, every role of RATINGS
    edited: str | None
    new_shape: str | None
    size_state: str | None = None
    position_state: str | None = None

    @property
    def target(self) -> Scene:
        return self.results["correct"]


class _NoEdit(Exception):
    """The scene does not allow this kind of edit (e.g. nothing to remove): draw another scene."""


def _other(rng: np.random.Generator, choices: list[str] | tuple[str, ...], *avoid: str | None) -> str:
    left = [c for c in choices if c not in avoid]
    if not left:
        raise _NoEdit
    return left[int(rng.integers(len(left)))]


def _over(rng: np.random.Generator, correct: Scene, keep: int | None) -> Scene:
    """``correct`` with another background and one other object (not ``keep``) recoloured."""
    background = _other(rng, BACKGROUNDS, correct.background)
    scene = replace(correct, background=background, texture_seed=int(rng.integers(2**31)))
    others = [i for i in range(len(scene.objects)) if i != keep]
    colours = visible_colours(background)
    for i in others[:1]:
        scene = scene.with_object(i, colour=_other(rng, colours, scene.objects[i].colour))
    for i, obj in enumerate(scene.objects):  # a colour the new background hides is redrawn visibly
        if obj.colour not in colours:
            scene = scene.with_object(i, colour=_other(rng, colours))
    return scene


def _midpoint(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)


def _recolour(rng: np.random.Generator, source: Scene) -> WorldEdit:
    i = int(rng.integers(len(source.objects)))
    obj = source.objects[i]
    colours = visible_colours(source.background)
    new = _other(rng, colours, obj.colour)
    wrong = _other(rng, colours, obj.colour, new)
    correct = source.with_object(i, colour=new)
    results = {"correct": correct, "partial": source.with_object(i, colour=new, half_colour=obj.colour),
               "over_edit": _over(rng, correct, i), "wrong": source.with_object(i, colour=wrong)}
    return WorldEdit("recolour", f"make the {obj.shape} {new}", source, results, obj.shape, None)


def _resize(rng: np.random.Generator, source: Scene) -> WorldEdit:
    i = int(rng.integers(len(source.objects)))
    obj = source.objects[i]
    step = _SIZE_ORDER.index(obj.size) if obj.size else 1
    options = [s for s in _SIZE_ORDER if s != obj.size and fits(source.objects, replace(obj, radius=SIZES[s]), i)]
    if not options:
        raise _NoEdit
    new = options[int(rng.integers(len(options)))]
    bigger = _SIZE_ORDER.index(new) > step
    opposite = [s for s in _SIZE_ORDER if (_SIZE_ORDER.index(s) < step if bigger else _SIZE_ORDER.index(s) > step)
                and fits(source.objects, replace(obj, radius=SIZES[s]), i)]
    if opposite:
        wrong = source.with_object(i, size=opposite[0], radius=SIZES[opposite[0]])
    else:  # the other direction is impossible: the same change made to another object that fits it
        others = [j for j, o in enumerate(source.objects) if j != i and o.size != new
                  and fits(source.objects, replace(o, radius=SIZES[new]), j)]
        if not others:
            raise _NoEdit
        wrong = source.with_object(others[0], size=new, radius=SIZES[new])
    correct = source.with_object(i, size=new, radius=SIZES[new])
    half = source.with_object(i, size=None, radius=(obj.radius + SIZES[new]) / 2)
    results = {"correct": correct, "partial": half, "over_edit": _over(rng, correct, i), "wrong": wrong}
    word = "bigger" if bigger else "smaller"
    return WorldEdit("resize", f"make the {obj.shape} {word}", source, results, obj.shape, None, size_state=word)


def _free_positions(scene: Scene, obj: SceneObject, skip: int | None) -> list[str]:
    taken = {o.position for j, o in enumerate(scene.objects) if j != skip}
    return [p for p in POSITIONS if p not in taken and p != obj.position
            and fits(scene.objects, replace(obj, centre=POSITIONS[p]), skip)]


def _move(rng: np.random.Generator, source: Scene) -> WorldEdit:
    i = int(rng.integers(len(source.objects)))
    obj = source.objects[i]
    free = _free_positions(source, obj, i)
    if len(free) < 2:
        raise _NoEdit
    new = _other(rng, free)
    wrong = _other(rng, free, new)
    moved = place_object(rng, obj.shape, obj.colour, obj.size or "medium", new)
    correct = source.with_object(i, position=new, centre=moved.centre)
    partial = source.with_object(i, position=None, centre=_midpoint(obj.centre, moved.centre))
    results = {"correct": correct, "partial": partial, "over_edit": _over(rng, correct, i),
               "wrong": source.with_object(i, position=wrong, centre=POSITIONS[wrong])}
    where = POSITION_WORDS[new].replace("on the ", "to the ").replace("at the ", "to the ").replace("in the ",
                                                                                                   "to the ")
    return WorldEdit("move", f"move the {obj.shape} {where}", source, results, obj.shape, None,
                     position_state=new)


def _add(rng: np.random.Generator, source: Scene) -> WorldEdit:
    present = {o.shape for o in source.objects}
    shapes = [s for s in SHAPES if s not in present]
    shape = _other(rng, shapes)
    colour = _other(rng, visible_colours(source.background))
    size = _other(rng, list(SIZES))
    spots = [p for p in POSITIONS if p not in {o.position for o in source.objects}
             and fits(source.objects, place_object(rng, shape, colour, size, p))]
    if not spots:
        raise _NoEdit
    position = _other(rng, spots)
    new = place_object(rng, shape, colour, size, position)
    if not fits(source.objects, new):
        raise _NoEdit
    correct = replace(source, objects=source.objects + (new,))
    k = len(correct.objects) - 1
    wrong_shape = _other(rng, shapes, shape)
    results = {"correct": correct, "partial": correct.with_object(k, opacity=0.5),
               "over_edit": _over(rng, correct, k), "wrong": correct.with_object(k, shape=wrong_shape)}
    instruction = f"add {article(colour)} {colour} {shape} {POSITION_WORDS[position]}"
    return WorldEdit("add", instruction, source, results, shape, shape, position_state=position)


def _remove(rng: np.random.Generator, source: Scene) -> WorldEdit:
    if len(source.objects) < 2:
        raise _NoEdit
    i = int(rng.integers(len(source.objects)))
    j = _other(rng, [str(k) for k in range(len(source.objects))], str(i))
    without = lambda k: replace(source, objects=source.objects[:k] + source.objects[k + 1:])  # noqa: E731
    correct = without(i)
    over = _over(rng, correct, None)
    results = {"correct": correct, "partial": source.with_object(i, opacity=0.5), "over_edit": over,
               "wrong": without(int(j))}
    return WorldEdit("remove", f"remove the {source.objects[i].shape}", source, results,
                     source.objects[i].shape, None)


def _replace(rng: np.random.Generator, source: Scene) -> WorldEdit:
    i = int(rng.integers(len(source.objects)))
    obj = source.objects[i]
    present = {o.shape for o in source.objects}
    free = [s for s in SHAPES if s not in present]
    new = _other(rng, free)
    wrong = _other(rng, free, new)
    correct = source.with_object(i, shape=new)
    faded_old = source.with_object(i, opacity=0.5)
    partial = replace(faded_old, objects=faded_old.objects + (replace(obj, shape=new, opacity=0.5),))
    results = {"correct": correct, "partial": partial, "over_edit": _over(rng, correct, i),
               "wrong": source.with_object(i, shape=wrong)}
    return WorldEdit("replace", f"replace the {obj.shape} with {article(new)} {new}", source, results,
                     obj.shape, new)


def _background(rng: np.random.Generator, source: Scene) -> WorldEdit:
    hidden = {o.colour for o in source.objects}
    choices = [b for b in BACKGROUNDS if b != source.background
               and all(c in visible_colours(b) for c in hidden)]
    new = _other(rng, choices)
    wrong = _other(rng, choices, new)
    seed = int(rng.integers(2**31))
    correct = replace(source, background=new, texture_seed=seed)
    over = correct
    colours = visible_colours(new)
    for k, obj in enumerate(correct.objects):
        over = over.with_object(k, colour=_other(rng, colours, obj.colour))
    results = {"correct": correct, "partial": replace(source, blend=(new, seed, 0.5)), "over_edit": over,
               "wrong": replace(source, background=wrong, texture_seed=seed)}
    where = BACKGROUND_WORDS[new].split(" ", 1)[1]  # "grass", "the sky", ...
    return WorldEdit("background", f"change the background to {where}", source, results, None, None)


_MAKERS = {"recolour": _recolour, "resize": _resize, "move": _move, "add": _add, "remove": _remove,
           "replace": _replace, "background": _background}


def make_edit(rng: np.random.Generator, kind: str, *, side: int | None = None) -> WorldEdit:
    """A random source scene and a ``kind`` edit of it with all five constructed results."""
    if kind not in _MAKERS:
        raise ValueError(f"unknown edit kind {kind!r}; the world's kinds: {', '.join(EDIT_KINDS)}")
    for _ in range(1000):
        source = random_scene(rng, min_objects=2 if kind == "remove" else 1)
        if side is not None:
            source = replace(source, side=side)
        try:
            edit = _MAKERS[kind](rng, source)
        except _NoEdit:
            continue
        results = {**edit.results, "unchanged": source}
        return replace(edit, results={role: results[role] for role in RATINGS})
    raise RuntimeError(f"no scene allowed a {kind} edit in 1000 draws")  # pragma: no cover - never seen
