"""A scripted chat server answer for the ``openai`` attribute provider's three requests (App. C.2 / C.3 flow)."""

from __future__ import annotations

from augclip_demo.attributes.prompts import PARSE_INPUT_LABEL
from tests.support.chat_server import Recorded

CAPTION = "The image shows a red ball on a white floor. The ball is round and shiny."
SOURCE_ANSWER = "['A ball is red', 'A ball is round', 'A ball is shiny', 'A floor is white']"
TARGET_ANSWER = '["Grass is green", "Ball is on grass", "Grass is short"]'


def step_of(request: Recorded) -> str:
    """Which of the three requests this is, judged from its content."""
    if request.image_urls():
        return "caption"
    text = "\n".join(request.texts())
    return "source" if PARSE_INPUT_LABEL in text else "target"


def paper_flow(request: Recorded) -> str:
    return {"caption": CAPTION, "source": SOURCE_ANSWER, "target": TARGET_ANSWER}[step_of(request)]
