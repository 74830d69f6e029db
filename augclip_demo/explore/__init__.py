"""Explore: batch results opened in place (DuckDB), sliced, ranked, compared with the humans, shared.

No Gradio here: :mod:`augclip_demo.ui.explore.wiring` is the page, ``augclip-demo explore`` starts it.
"""

from .agreement_matrix import (
           Agreement,
           SetsAgreement,
           agreement,
           human_sets,
           metric_correlations,
           protocol_items,
)
from .disagreements import HUMAN, Disagreement, disagreements
from .items import GridPage, GridRow, ItemView, exact, grid_page, item_record, thumbnail_data_uri
from .leaderboard import Leaderboard, leaderboard
from .slices import Slice, make_slice, slice_from_json
from .store import OpenedFile, ResultsStore, RunInfo, open_results

__all__ = ["HUMAN", "Agreement", "Disagreement", "GridPage", "GridRow", "ItemView", "Leaderboard", "OpenedFile",
           "ResultsStore", "RunInfo", "SetsAgreement", "Slice", "agreement", "disagreements", "exact", "grid_page",
           "human_sets", "item_record", "leaderboard", "make_slice", "metric_correlations", "open_results", "protocol_items", "slice_from_json",
           "thumbnail_data_uri"]
