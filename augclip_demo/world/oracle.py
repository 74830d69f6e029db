"""A perfect encoder of the world: embeddings that know exactly what is where, for telling a metric's
behaviour apart from its model's.

A scene's embedding is the (unit) sum of one axis per fact true of it: each object's (shape, colour),
(shape, size) and (shape, position), and the background; a half-coloured object counts half for each
colour, a half-faded one at its opacity, a blended background at its weight. An attribute phrase's
embedding is the axis of the one fact it names. ``gap`` puts images and texts apart as a CLIP's two
modalities are (each gets its own extra axis, so a phrase and the image it is true of have cosine
``1 - gap**2`` at best). Whatever a metric does wrong on these embeddings, no model is to blame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .concepts import BACKGROUND_PHRASES, CONCEPTS, POSITION_WORDS, article
from .scenes import Scene

#: Every fact the oracle has an axis for: (concept, shape, value); the background's shape is None.
_FACTS: tuple[tuple[str, str | None, str], ...] = tuple(
    [(c, s, v) for c in ("colour", "size", "position") for s in CONCEPTS["shape"] for v in CONCEPTS[c]]
    + [("background", None, b) for b in CONCEPTS["background"]])


def _phrases_of_facts() -> dict[str, tuple[str, str | None, str]]:
    """Every attribute phrase the world writes (world.scenes' wordings) -> the fact it names."""
    named: dict[str, tuple[str, str | None, str]] = {}
    for shape in CONCEPTS["shape"]:
        for colour in CONCEPTS["colour"]:
            named[f"{article(colour)} {colour} {shape}"] = ("colour", shape, colour)
            named[f"the {shape} is {colour}"] = ("colour", shape, colour)
        for size in CONCEPTS["size"]:
            named[f"{article(size)} {size} {shape}"] = ("size", shape, size)
        for position in CONCEPTS["position"]:
            named[f"the {shape} is {POSITION_WORDS[position]}"] = ("position", shape, position)
    for background in CONCEPTS["background"]:
        named[BACKGROUND_PHRASES[background]] = ("background", None, background)
    return named


@dataclass(frozen=True)
class OracleEncoder:
    """Embeddings of world scenes and world phrases that are right by construction (module docstring)."""

    gap: float = 0.8
    _axis: dict = field(default_factory=lambda: {fact: i for i, fact in enumerate(_FACTS)}, repr=False)
    _phrases: dict = field(default_factory=_phrases_of_facts, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.gap < 1.0:
            raise ValueError(f"gap must be in [0, 1), got {self.gap}")

    @property
    def dim(self) -> int:
        return len(_FACTS) + 2  # the facts, then the image axis and the text axis

    def _place(self, facts: np.ndarray, modality: int) -> np.ndarray:
        out = np.zeros(self.dim)
        out[: len(_FACTS)] = np.sqrt(1.0 - self.gap**2) * facts / np.linalg.norm(facts)
        out[len(_FACTS) + modality] = self.gap
        return out

    def encode_scene(self, scene: Scene) -> np.ndarray:
        """The unit embedding of ``scene`` (what is true of it, weighted as drawn)."""
        facts = np.zeros(len(_FACTS))
        for obj in scene.objects:
            colours = ((obj.colour, 0.5), (obj.half_colour, 0.5)) if obj.half_colour else ((obj.colour, 1.0),)
            for colour, share in colours:
                facts[self._axis[("colour", obj.shape, colour)]] += share * obj.opacity
            if obj.size:
                facts[self._axis[("size", obj.shape, obj.size)]] += obj.opacity
            if obj.position:
                facts[self._axis[("position", obj.shape, obj.position)]] += obj.opacity
        if scene.blend is not None:
            other, _, weight = scene.blend
            facts[self._axis[("background", None, scene.background)]] += 1.0 - weight
            facts[self._axis[("background", None, other)]] += weight
        else:
            facts[self._axis[("background", None, scene.background)]] += 1.0
        return self._place(facts, 0)

    def encode_phrases(self, phrases: list[str]) -> np.ndarray:
        """``(len(phrases), dim)`` unit embeddings of world attribute phrases; any other text is refused."""
        rows = []
        for phrase in phrases:
            if phrase not in self._phrases:
                raise ValueError(f"{phrase!r} is not an attribute phrase of the world; the oracle knows only "
                                 "the world's own phrases (world.scene_phrases)")
            facts = np.zeros(len(_FACTS))
            facts[self._axis[self._phrases[phrase]]] = 1.0
            rows.append(self._place(facts, 1))
        return np.array(rows).reshape(len(rows), self.dim)
