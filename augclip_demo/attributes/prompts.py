"""The MLLM prompts for attribute extraction (AugCLIP App. C.2 and C.3), in one place.

The structure and the in-context examples follow the paper; the wording is ours.

* Source attributes (App. C.2) take two requests. First the source image goes to the model with a
  request for an objective, detailed, easy caption (visual aspects only, no opinions). Then the
  caption is parsed into a Python list of short visual characteristics, guided by the paper's
  example (a caption of a dark dog in a grassy field and its parsed list).
* Target attributes (App. C.3) take one request: the target text plus the source caption for
  context, asking which visual attributes the edited image should have, answered as a Python list
  in the form "SUBJECT is/has ATTRIBUTE", near-duplicates merged, guided by the paper's example
  (turning a person into a standing posture).

Two additions to the paper's prompts, both in the direction its own results point: every item is
asked to be short and about one visual aspect (Table 8: short attributes beat long ones), and the
answer is asked to be the list only (so that parsing rarely has to fall back on heuristics).

Change :data:`PROMPT_VERSION` whenever a prompt changes: it is part of every cache key and of the
provenance saved with each attribute set.
"""

from __future__ import annotations

import json

PROMPT_VERSION = "augclip-c2c3-v1"

# ---------------------------------------------------------------- App. C.2, step 1: caption
CAPTION_PROMPT = (
    "Describe this image in detail. Describe only what can be seen: leave out opinions, "
    "interpretations and anything that is not visual. Use plain, easy, intuitive sentences."
)

# ---------------------------------------------------------------- App. C.2, step 2: parse the caption
#: The paper's in-context example for parsing a caption (App. C.2), in our words.
SOURCE_EXAMPLE_CAPTION = (
    "The image features a large, dark-colored dog standing in a grassy field. The dog appears to be "
    "alert and attentive, possibly observing its surroundings. The grass is lush and green, providing "
    "a natural backdrop for the dog."
)
SOURCE_EXAMPLE_ATTRIBUTES = [
    "A dog is large",
    "A dog is dark-colored",
    "A dog is standing",
    "A dog is standing on a grassy field",
    "A dog is alert",
    "A dog is attentive",
    "A dog is observing its surroundings",
    "A grass is lush",
    "A grass is green",
    "A grass is providing a natural backdrop",
]

PARSE_INSTRUCTIONS = (
    "You are a helpful text-generation assistant. You are given a detailed description of an image; "
    "your job is to break it down into specific visual attributes. Keep every attribute short and "
    "about one visual aspect."
)


def caption_parse_prompt(caption: str) -> str:
    """Step 2 of App. C.2: turn a caption into a Python list of visual characteristics."""
    return (
        f"{PARSE_INSTRUCTIONS}\n\n"
        f"EXAMPLE INPUT: {_quote(SOURCE_EXAMPLE_CAPTION)}\n\n"
        f"EXAMPLE OUTPUT: {_pylist(SOURCE_EXAMPLE_ATTRIBUTES)}\n\n"
        "Give me a Python list of the visual characteristics contained in the following sentences. "
        "Answer with the list only.\n"
        f"INPUT: {_quote(caption)}"
    )


# ---------------------------------------------------------------- App. C.3: target attributes
#: The paper's in-context example for target attributes (App. C.3): a person made to stand.
TARGET_EXAMPLE_SUBJECT = "a person"
TARGET_EXAMPLE_CHANGE = "a standing posture"
TARGET_EXAMPLE_NAME = "Standing person"
TARGET_EXAMPLE_ATTRIBUTES = [
    "Standing person has straight legs",
    "Standing person is upright",
    "Standing person is on their feet",
    "Standing person is tall",
]

TARGET_INSTRUCTIONS = (
    "You are a helpful text-generation assistant. You are given a detailed description of an image; "
    "your job is to break it down into specific visual attributes. When attributes with nearly the "
    'same meaning come up, keep only one of them: for example "A dog is large" and "A dog is big" '
    "mean the same, so use just one. Keep every attribute short and about one visual aspect."
)


def target_question(target_text: str, source_caption: str | None = None, source_text: str | None = None) -> str:
    """The question about one edit, shaped like the paper's example input."""
    context = ""
    if source_caption:
        context += f"The source image shows: {_quote(source_caption)}\n"
    if source_text:
        context += f"The source image is described as {_quote(source_text)}.\n"
    return (
        f"{context}"
        f"The image is edited according to the target text {_quote(target_text)}. In order to make the "
        "image match the target text, what visual attributes should the edited image have? Answer in "
        'the format of "SUBJECT is ATTRIBUTE" or "SUBJECT has ATTRIBUTE", where SUBJECT is a short '
        "name for the edited subject, the way the example uses \"Standing person\"."
    )


def target_prompt(target_text: str, source_caption: str | None = None, source_text: str | None = None) -> str:
    """App. C.3: the target text (with the source caption as context) -> a Python list of attributes."""
    example_question = (
        f"In order to make {TARGET_EXAMPLE_SUBJECT} into {TARGET_EXAMPLE_CHANGE}, what visual attributes "
        f'of the image should be changed? Answer in the format of "{TARGET_EXAMPLE_NAME} is ATTRIBUTE".'
    )
    return (
        f"{TARGET_INSTRUCTIONS}\n\n"
        f"EXAMPLE INPUT: {example_question}\n\n"
        f"EXAMPLE OUTPUT: {_pylist(TARGET_EXAMPLE_ATTRIBUTES)}\n\n"
        f"INPUT: {target_question(target_text, source_caption, source_text)}\n"
        "Answer with a Python list only."
    )


def _pylist(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in items) + "]"


def _quote(text: str) -> str:
    return json.dumps(text.strip(), ensure_ascii=False)
