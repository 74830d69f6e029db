"""The world's concepts and the words for them: one table per concept, read by the scenes, the edits,
the captions and attribute phrases, the trained model's zero-shot check and the docs."""

from __future__ import annotations

#: Named colours and the RGB each is drawn with (far enough apart that a name never fits two of them).
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (215, 35, 35),
    "orange": (245, 140, 25),
    "yellow": (245, 220, 40),
    "green": (40, 165, 60),
    "blue": (40, 80, 220),
    "purple": (135, 50, 175),
    "pink": (245, 135, 195),
    "white": (250, 250, 250),
    "black": (20, 20, 20),
}
#: Object shapes, by the noun the captions use.
SHAPES: tuple[str, ...] = ("ball", "box", "star", "ring", "triangle", "cross")
#: Size names and each one's radius as a fraction of the image side (radius of the shape's outer circle).
SIZES: dict[str, float] = {"small": 0.085, "medium": 0.125, "large": 0.17}
#: Position names and each one's centre as fractions of the image side (x, y; y grows downwards).
POSITIONS: dict[str, tuple[float, float]] = {
    "left": (0.21, 0.5),
    "right": (0.79, 0.5),
    "top": (0.5, 0.21),
    "bottom": (0.5, 0.79),
    "centre": (0.5, 0.5),
}
#: How each position reads after an object's name ("the ball is on the left").
POSITION_WORDS: dict[str, str] = {
    "left": "on the left",
    "right": "on the right",
    "top": "at the top",
    "bottom": "at the bottom",
    "centre": "in the centre",
}
#: Background textures, by name.
BACKGROUNDS: tuple[str, ...] = ("grass", "sky", "sand", "night", "snow")
#: How each background reads as an attribute phrase and in a caption ("..., on grass").
BACKGROUND_PHRASES: dict[str, str] = {
    "grass": "a background of green grass",
    "sky": "a background of blue sky",
    "sand": "a sandy background",
    "night": "a dark night background",
    "snow": "a snowy background",
}
BACKGROUND_WORDS: dict[str, str] = {
    "grass": "on grass",
    "sky": "against the sky",
    "sand": "on sand",
    "night": "at night",
    "snow": "on snow",
}
#: Colours never drawn on a background (too close to its own colour to be seen as an object).
HIDDEN_COLOURS: dict[str, frozenset[str]] = {
    "grass": frozenset({"green"}),
    "sky": frozenset({"blue", "white"}),
    "sand": frozenset({"yellow", "orange"}),
    "night": frozenset({"black"}),
    "snow": frozenset({"white"}),
}
#: The concepts the trained model is checked on, each with the names a zero-shot prompt chooses among.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "colour": tuple(COLOURS),
    "shape": SHAPES,
    "size": tuple(SIZES),
    "position": tuple(POSITIONS),
    "background": BACKGROUNDS,
}


def article(word: str) -> str:
    """'a' or 'an' before ``word``."""
    return "an" if word[:1] in "aeiou" else "a"
