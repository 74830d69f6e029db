"""The HATIE tab's one event: :func:`wire` connects the button of :mod:`.layout` to :func:`.handlers.show_hatie`."""

from __future__ import annotations

from ..binding import bind
from .handlers import HatieContext, show_hatie


def wire(ctx: HatieContext) -> None:
    """The HATIE tab's button, which is also the /hatie endpoint."""
    ctx.tab.run_btn.click(bind(show_hatie, ctx), ctx.tab.run_inputs, ctx.tab.run_outputs, api_name="hatie")
