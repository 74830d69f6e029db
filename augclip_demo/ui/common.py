"""What every room of the page shares: the settings a request runs with, and the one-cell table that stands
where a table has no rows yet."""

from __future__ import annotations

import pandas as pd

from ..config import Settings
from ..errors import InputError
from ..inference.specs import shown_spec
from . import first_contact


def offered_clip_model(spec: str | None, choices: list[str]) -> str | None:
    """``spec`` when the page offers it (``None`` for empty: the server's default), else a clear error.

    Gradio already refuses a value outside a dropdown's choices; this repeats the check where the
    model is chosen, so no code path lets a client load a model the server did not offer.
    """
    spec = (spec or "").strip()
    if spec and spec not in choices:
        raise InputError(f"CLIP model {shown_spec(spec)} is not offered by this server; choose one of "
                         f"{', '.join(choices)}")
    return spec or None


def page_settings(base: Settings, clip_choices: list[str], clip_model: str | None) -> Settings:
    """The settings of a request: the page's, with the picked CLIP model (only an offered one), and every
    model random in the untrained demo."""
    return first_contact.demo_settings(base.replace(clip_model=offered_clip_model(clip_model, clip_choices)))


def empty_table(message: str) -> pd.DataFrame:
    """A one-cell table that says what to do to fill it (a table without rows would show Gradio's placeholder
    headers "1 2 3")."""
    return pd.DataFrame({"": [message]})


def text_safe(text: str) -> str:
    """``text`` for a Markdown component that is also an API answer: no tag can open (``<`` and ``&`` escaped),
    and what reads as text stays text (``->`` is not turned into ``-&gt;``, quotes stay quotes)."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


#: The page's tables draw their text in the theme's monospace font: about this many pixels a character
#: (bold headers included), and this much more per cell (padding and the column's menu button).
_CHAR_PX, _CELL_PX, _WIDEST_PX = 9, 40, 480


def fitted_widths(frame: pd.DataFrame) -> list[str]:
    """``column_widths`` for a page's table whose headers carry names (an edit's file name): each column as
    wide as its header's longest word and its longest cell, at most a readable width (a longer cell wraps).
    Gradio sizes columns by their cells only, and a narrow column's header then breaks inside a word
    ("excessive ly_preser ved")."""
    widths = []
    for column in frame.columns:
        header = max((len(word) for word in str(column).split()), default=0)
        longest = max([header, *(len(str(cell)) for cell in frame[column])])
        widths.append(f"{min(_WIDEST_PX, _CELL_PX + _CHAR_PX * longest)}px")
    return widths
