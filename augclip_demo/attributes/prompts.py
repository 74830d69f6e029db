"""The requests sent to a multimodal chat model to extract attributes (AugCLIP App. C.2 / C.3).

We follow the paper's procedure (what is asked, in which order, in which answer format) and write
every request and every in-context example ourselves:

* Source attributes (App. C.2), two requests. (1) The source image goes to the model with a request
  for a detailed caption of what is visible, in plain words, without opinions. (2) The caption is
  broken down into a Python list of short visual attributes, shown how by one worked example of our
  own (a bicycle against a brick wall).
* Target attributes (App. C.3), one request: the target text, with the source caption as context,
  asking which visual attributes the *edited* image must show to match the target text, as
  "SUBJECT is ATTRIBUTE" / "SUBJECT has ATTRIBUTE", near-duplicates merged, shown how by one worked
  example of our own (water turned into orange juice). The request asks for what the target text
  calls for only: attributes the edit leaves as they were belong to the source set, not here.

Two additions, both in the direction the paper's own results point: every item should be short and
about one visual aspect (its Table 8: short attributes work better than long ones), and the answer
should be the list alone (so parsing rarely needs its fallbacks).

Change :data:`PROMPT_VERSION` whenever a request changes: it is part of every cache key and of the
provenance saved with each attribute set, so answers to older wording are never mixed in.
"""

from __future__ import annotations

import json

PROMPT_VERSION = "augclip-c2c3-v2"

# ---------------------------------------------------------------- App. C.2, request 1: caption
CAPTION_PROMPT = (
    "Write a detailed caption for this picture. Mention only things a viewer can see (objects, "
    "colours, materials, shapes, positions, poses, lighting); skip guesses, feelings and judgements. "
    "Keep the sentences short and simple."
)

# ---------------------------------------------------------------- App. C.2, request 2: caption -> list
#: Worked example for breaking a caption into attributes (ours; same shape as the paper's).
SOURCE_EXAMPLE_CAPTION = (
    "A blue bicycle leans against an old brick wall on a quiet street. Its frame is thin and a little "
    "rusty, and a wicker basket hangs from the handlebars. Late afternoon sun throws a long shadow of "
    "the bicycle across the pavement."
)
SOURCE_EXAMPLE_ATTRIBUTES = [
    "A bicycle is blue",
    "A bicycle is leaning on a wall",
    "A bicycle has a thin frame",
    "A bicycle is slightly rusty",
    "A bicycle has a wicker basket",
    "A basket hangs from the handlebars",
    "A wall is made of brick",
    "A wall is old",
    "A street is quiet",
    "A shadow is long",
    "A pavement is lit by low sun",
]

_PARSE_INSTRUCTIONS = (
    "Your task: split a picture caption into separate visual attributes. Each attribute is one short "
    'sentence that names a thing and one visible property of it, such as "A bicycle is blue". Keep '
    "every attribute short and about a single visual aspect."
)

#: Label of the caption to split; it also tells the test chat server which request it is answering.
PARSE_INPUT_LABEL = "CAPTION TO SPLIT"


def caption_parse_prompt(caption: str) -> str:
    """Request 2 of App. C.2: a caption -> a Python list of its visual attributes."""
    return (
        f"{_PARSE_INSTRUCTIONS}\n\n"
        f"Worked example. Caption: {_quote(SOURCE_EXAMPLE_CAPTION)}\n"
        f"Attributes: {_pylist(SOURCE_EXAMPLE_ATTRIBUTES)}\n\n"
        "Now do the same for the caption below and reply with one Python list of strings and "
        "nothing else.\n"
        f"{PARSE_INPUT_LABEL}: {_quote(caption)}"
    )


# ---------------------------------------------------------------- App. C.3: target attributes
#: Worked example for target attributes (ours; same shape as the paper's): water made into juice.
_TARGET_EXAMPLE_SOURCE = "a glass of water"
_TARGET_EXAMPLE_CHANGE = "a glass of orange juice"
_TARGET_EXAMPLE_NAME = "Orange juice"
TARGET_EXAMPLE_ATTRIBUTES = [
    "Orange juice is orange",
    "Orange juice is opaque",
    "Orange juice has bits of pulp",
    "Orange juice has a thin layer of foam",
]

_TARGET_INSTRUCTIONS = (
    "Your task: list the visual attributes an edited picture must show. Each attribute is one short "
    "sentence about a single visible property. Do not repeat an attribute in other words: "
    '"A cup is small" and "A cup is little" say the same thing, so keep only one of them.'
)


def _target_question(target_text: str, source_caption: str | None = None, source_text: str | None = None) -> str:
    """The question about one edit, shaped like the worked example's question."""
    context = ""
    if source_caption:
        context += f"Caption of the picture before the edit: {_quote(source_caption)}\n"
    if source_text:
        context += f"Short description of the picture before the edit: {_quote(source_text)}\n"
    return (
        f"{context}"
        f"Edit request: {_quote(target_text)}.\n"
        "Which visual attributes must the edited picture have so that it matches the edit request? "
        "List only what the request calls for; leave out whatever the edit keeps as it was before. "
        'Write each one as "SUBJECT is ATTRIBUTE" or "SUBJECT has ATTRIBUTE", where SUBJECT is a '
        f'short name for the edited subject (the worked example uses "{_TARGET_EXAMPLE_NAME}").'
    )


def target_prompt(target_text: str, source_caption: str | None = None, source_text: str | None = None) -> str:
    """App. C.3: the target text (with the source caption as context) -> a Python list of attributes."""
    example_question = (
        f"Edit request: turn {_TARGET_EXAMPLE_SOURCE} into {_TARGET_EXAMPLE_CHANGE}. Which visual attributes "
        f'must the edited picture have? Write each one as "{_TARGET_EXAMPLE_NAME} is ATTRIBUTE" or '
        f'"{_TARGET_EXAMPLE_NAME} has ATTRIBUTE".'
    )
    return (
        f"{_TARGET_INSTRUCTIONS}\n\n"
        f"Worked example. {example_question}\n"
        f"Attributes: {_pylist(TARGET_EXAMPLE_ATTRIBUTES)}\n\n"
        f"Now answer for this edit.\n{_target_question(target_text, source_caption, source_text)}\n"
        "Reply with one Python list of strings and nothing else."
    )


def _pylist(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in items) + "]"


def _quote(text: str) -> str:
    return json.dumps(text.strip(), ensure_ascii=False)
