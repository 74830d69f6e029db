"""The built-in phrase vocabulary of the ``clip-vocab`` provider.

Our own templates over common object classes (the 80 COCO classes plus scene nouns), colours,
sizes, materials, textures, states, actions, poses, appearance, backgrounds, seasons and weather,
styles, lighting and viewpoint, each rendered as a short phrase ("a red car", "a dog is sitting").
Short phrases on purpose: the paper finds short attributes (under five words) work best (Table 8).

The list is deterministic; :data:`_VOCABULARY_VERSION` and the digest of the phrases key the
on-disk embedding cache, so editing a template invalidates old embeddings automatically.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

_VOCABULARY_VERSION = "v1"

_COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "pair of skis", "snowboard", "ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "table", "toilet", "television", "laptop", "computer mouse", "remote control",
    "keyboard", "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
    "pair of scissors", "teddy bear", "hair dryer", "toothbrush",
)
_SCENE_NOUNS = (
    "tree", "flower", "house", "building", "mountain", "road", "river", "lake", "beach", "cloud", "sky", "sun",
    "moon", "hat", "shirt", "dress", "jacket", "pair of glasses", "shoe", "face", "wall", "window", "door",
    "fence", "rock", "field", "bridge", "lamp", "car tire", "leaf",
)
_OBJECTS = _COCO_CLASSES + _SCENE_NOUNS
_ANIMALS = ("bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe")
_PEOPLE = ("person", "man", "woman", "child")
_FOODS = ("banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake")
_ARTIFACTS = (
    "bicycle", "car", "motorcycle", "bus", "truck", "boat", "bench", "backpack", "umbrella", "handbag",
    "suitcase", "bottle", "cup", "bowl", "chair", "couch", "bed", "table", "television", "laptop", "book",
    "clock", "vase", "teddy bear", "house", "building", "bridge", "fence", "door", "window", "lamp", "hat",
    "shoe", "jacket", "dress", "wall", "spoon", "knife", "kite", "skateboard",
)
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray",
          "golden", "silver")
_SIZES = ("small", "large")
MATERIALS = ("wooden", "metal", "glass", "plastic", "stone", "leather", "paper", "ceramic", "marble",
             "knitted", "golden", "rusty")
_TEXTURES = ("striped", "spotted", "checkered", "furry", "fluffy", "smooth", "rough", "shiny", "matte",
            "wrinkled", "scaly", "wet", "dusty", "transparent", "floral", "glittering", "woven", "cracked",
            "polka-dot", "camouflage")
_ANIMAL_TEXTURES = ("striped", "spotted", "furry", "fluffy", "wet", "shaved")
_OBJECT_STATES = ("broken", "old", "new", "dirty", "clean", "burning", "melting", "frozen", "empty", "tilted")
_FOOD_STATES = ("sliced", "half-eaten", "rotten", "cooked", "fresh")
_ANIMAL_ACTIONS = ("is sitting", "is standing", "is lying down", "is running", "is walking", "is jumping",
                  "is sleeping", "is eating", "is swimming", "is looking at the camera")
_EXTRA_ANIMAL_ACTIONS = ("a bird is flying", "a dog is barking", "a cat is playing", "a horse is galloping",
                        "a dog is wagging its tail", "a cat is stretching")
_PERSON_ACTIONS = (
    "is sitting", "is standing", "is walking", "is running", "is jumping", "is dancing", "is smiling",
    "is laughing", "is crying", "is sleeping", "is lying down", "is waving", "is raising their arms",
    "is crossing their arms", "is holding a phone", "is reading a book", "is riding a bicycle",
    "is riding a horse", "is eating", "is drinking", "is looking at the camera", "is looking away",
    "is kneeling", "is squatting", "is climbing", "is swimming", "is skiing", "is surfing", "is skateboarding",
    "is playing tennis",
)
_APPEARANCE = (
    "blond hair", "black hair", "brown hair", "gray hair", "red hair", "curly hair", "straight hair",
    "long hair", "short hair", "a beard", "a mustache", "glasses", "sunglasses", "a hat", "makeup",
    "red lipstick", "bangs", "a bald head", "a ponytail", "earrings", "a necklace", "a tattoo", "freckles",
    "wrinkles", "a smile", "an open mouth", "closed eyes", "a tie",
)
_SUBJECTS = ("a man", "a woman", "a child", "a baby", "an old man", "an old woman", "a young man",
            "a young woman", "a teenager", "a smiling person", "a group of people", "a crowd")
_CLOTHING = ("shirt", "t-shirt", "dress", "jacket", "coat", "hat", "scarf", "suit", "sweater", "skirt",
            "pair of jeans", "uniform")
_BACKGROUNDS = (
    "a beach", "a forest", "a city street", "a desert", "a mountain", "a snowy mountain", "a grassy field",
    "a kitchen", "a living room", "a bedroom", "an office", "a park", "a garden", "a farm", "a lake",
    "a river", "the ocean", "a waterfall", "a stadium", "a classroom", "a restaurant", "a night sky",
    "a starry sky", "a sunset sky", "a blue sky", "a cloudy sky", "a brick wall", "a white wall",
    "a wooden floor", "a road", "a parking lot", "a market", "a library", "a jungle", "a castle",
    "a village", "a field of flowers", "outer space",
)
_SCENE_PHRASES = ("an indoor scene", "an outdoor scene", "a plain white background", "a black background",
                 "a blurry background", "a studio background", "a colorful background", "an underwater scene")
_SEASONS_WEATHER = (
    "a winter scene", "a snowy landscape", "covered in snow", "an autumn scene", "autumn leaves",
    "a spring scene", "blooming flowers", "a summer scene", "a sunny day", "a rainy day", "a foggy day",
    "a stormy sky", "at night", "at sunset", "at sunrise", "at dusk", "in daylight", "under moonlight",
    "a lightning storm", "frost", "ice", "puddles of water", "a rainbow", "falling snow", "heavy rain",
)
_STYLES = (
    "a photograph", "a realistic photo", "a painting", "an oil painting", "a watercolor painting",
    "a pencil sketch", "a charcoal drawing", "an ink drawing", "a cartoon", "an anime drawing",
    "a comic book illustration", "a 3D render", "a low poly render", "pixel art", "a mosaic",
    "a stained glass window", "a sculpture", "a clay figure", "a black and white photo", "a sepia photo",
    "a vintage photo", "a pop art poster", "an impressionist painting", "a Van Gogh style painting",
    "a cubist painting", "a ukiyo-e print", "graffiti", "a child's drawing", "a neon sign",
    "a cyberpunk scene", "a fantasy illustration", "a minimalist design", "digital art", "a line drawing",
    "an embroidery",
)
_LIGHTING_VIEW = (
    "bright lighting", "dim lighting", "dramatic lighting", "soft lighting", "backlighting", "warm colors",
    "cool colors", "vivid colors", "pastel colors", "muted colors", "monochrome colors", "high contrast",
    "low contrast", "a blurry photo", "a sharp photo", "a close-up", "a wide shot", "an aerial view",
    "a top-down view", "a side view", "a front view",
)


def _article(noun_phrase: str) -> str:
    return "an" if noun_phrase[:1].lower() in "aeiou" else "a"


def _a(noun_phrase: str) -> str:
    return f"{_article(noun_phrase)} {noun_phrase}"


@dataclass(frozen=True)
class Vocabulary:
    """Phrases with their category; ``digest`` identifies the exact list."""

    phrases: tuple[str, ...]
    categories: tuple[str, ...]
    version: str

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.phrases).encode("utf-8")).hexdigest()

    def __len__(self) -> int:
        return len(self.phrases)


def _generate() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    out += [(_a(o), "object") for o in _OBJECTS]
    out += [(_a(f"{c} {o}"), "color") for c in COLORS for o in _OBJECTS]
    out += [(_a(f"{s} {o}"), "size") for s in _SIZES for o in _OBJECTS]
    out += [(_a(f"{m} {o}"), "material") for m in MATERIALS for o in _ARTIFACTS]
    out += [(_a(f"{t} texture"), "texture") for t in _TEXTURES]
    out += [(_a(f"{t} {a}"), "texture") for t in _ANIMAL_TEXTURES for a in _ANIMALS]
    out += [(_a(f"{s} {o}"), "state") for s in _OBJECT_STATES for o in _ARTIFACTS]
    out += [(_a(f"{s} {f}"), "state") for s in _FOOD_STATES for f in _FOODS]
    out += [(f"{_a(a)} {act}", "action") for a in _ANIMALS for act in _ANIMAL_ACTIONS]
    out += [(p, "action") for p in _EXTRA_ANIMAL_ACTIONS]
    out += [(f"{_a(p)} {act}", "pose") for p in _PEOPLE for act in _PERSON_ACTIONS]
    out += [(f"a person with {x}", "appearance") for x in _APPEARANCE]
    out += [(s, "appearance") for s in _SUBJECTS]
    out += [(f"a person wearing {_a(f'{c} {item}')}", "appearance") for c in COLORS for item in _CLOTHING]
    out += [(f"{b} in the background", "background") for b in _BACKGROUNDS]
    out += [(p, "background") for p in _SCENE_PHRASES]
    out += [(p, "season") for p in _SEASONS_WEATHER]
    out += [(p, "style") for p in _STYLES]
    out += [(p, "lighting") for p in _LIGHTING_VIEW]
    return out


@lru_cache(maxsize=1)
def default_vocabulary() -> Vocabulary:
    """The built-in vocabulary (about 3,300 phrases), duplicates removed, order fixed."""
    seen: set[str] = set()
    phrases, categories = [], []
    for phrase, category in _generate():
        key = phrase.lower()
        if key not in seen:
            seen.add(key)
            phrases.append(phrase)
            categories.append(category)
    return Vocabulary(tuple(phrases), tuple(categories), _VOCABULARY_VERSION)


def make_vocabulary(phrases: list[str] | tuple[str, ...], version: str = "custom") -> Vocabulary:
    """A user-supplied vocabulary (one category, ``custom``), e.g. domain terms for a benchmark."""
    cleaned = tuple(dict.fromkeys(p.strip() for p in phrases if p and p.strip()))
    return Vocabulary(cleaned, tuple("custom" for _ in cleaned), version)
