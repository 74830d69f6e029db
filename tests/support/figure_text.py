"""Measure a matplotlib figure's text: every visible text box in pixels, and the pairs that overlap."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text


@dataclass
class TextBox:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: TextBox, tolerance: float = 0.5) -> bool:
        return (min(self.x1, other.x1) - max(self.x0, other.x0) > tolerance
                and min(self.y1, other.y1) - max(self.y0, other.y0) > tolerance)


def _texts(fig: Figure) -> list[Text]:
    """The texts matplotlib draws: figure and subfigure texts, axes titles, texts and annotations, legends,
    and, for axes that are switched on, the axis labels and the tick labels inside the view."""
    texts: list[Text] = []
    for container in [fig, *fig.subfigs, *(s for sub in fig.subfigs for s in sub.subfigs)]:
        texts += list(container.texts)
        for title in ("_suptitle", "_supxlabel", "_supylabel"):
            if getattr(container, title, None) is not None:
                texts.append(getattr(container, title))
        texts += [t for legend in container.legends for t in (*legend.get_texts(), legend.get_title())]
    for ax in fig.get_axes():
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            texts += [*legend.get_texts(), legend.get_title()]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                if not axis.get_visible():
                    continue
                texts += [axis.label, axis.offsetText]
                for tick in axis._update_ticks():  # the ticks inside the view: the ones drawn
                    texts += [label for label in (tick.label1, tick.label2) if label.get_visible()]
    return list({id(t): t for t in texts}.values())


def text_boxes(fig: Figure) -> list[TextBox]:
    """Every drawn, non-empty text of ``fig`` with its box in pixels."""
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out exactly as savefig does
    renderer = canvas.get_renderer()
    boxes = []
    for artist in _texts(fig):
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        box = Text.get_window_extent(artist, renderer)  # the text itself (an annotation's leader line aside)
        if box.width <= 0 or box.height <= 0:
            continue
        boxes.append(TextBox(artist.get_text(), box.x0, box.y0, box.x1, box.y1))
    return boxes


def overlapping_pairs(boxes: list[TextBox], tolerance: float = 0.5) -> list[tuple[str, str]]:
    return [(a.text, b.text) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b, tolerance)]


def outside_figure(fig: Figure, boxes: list[TextBox]) -> list[str]:
    """Texts that stick out of the figure (cut off in the PNG)."""
    width, height = fig.bbox.width, fig.bbox.height
    return [b.text for b in boxes if b.x0 < -1 or b.y0 < -1 or b.x1 > width + 1 or b.y1 > height + 1]
