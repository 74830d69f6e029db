"""Explanations: why a metric prefers an edit (arrays, dataclasses and matplotlib figures; no UI).

* :mod:`.relevancy`: gradient-weighted attention relevancy (Chefer et al. 2021) of open_clip ViTs,
  for CLIP-T (t = E(T_trg)), CLIPdir (App. D.5, a signed difference of two maps) and AugCLIP
  (t = E(I_src) + v, the estimated ideal edit).
* :mod:`.hyperplane`: the exact hyperplane view (signed distance x first principal component) and
  the illustrative UMAP view (App. A.3, Fig. 8).
* :mod:`.rankings`: Eq. 11 / 12 attribute rankings (App. A.4, Fig. 9-10) and the alpha weights.
* :mod:`.figures`: the matplotlib figures (object API, headless).
* :mod:`.regions`: BPM's regions (masks, boxes, preserved region) for the app's BPM panel.
* :mod:`.interactive`: the hyperplane views as Plotly specifications (hover, toggles, zoom) for the app.
* :mod:`.grid_pictures`: the comparison grid's pictures (maps, BPM regions) for the HTML report.
* :func:`explain_report`: all of it for a :class:`~augclip_demo.report.Report` in one call
  (:func:`complete_relevancy` adds the maps of edits it was told to leave for later).
"""

from .explanations import (
    EditExplanation,
    ExplainOptions,
    ReportExplanations,
    complete_relevancy,
    explain_report,
)
from .grid_pictures import comparison_grid
from .hyperplane import (
    ExactPanel,
    ExactView,
    UmapView,
    exact_coordinates,
    exact_view,
    umap_coordinates,
    umap_view,
    warm_up_umap,
)
from .rankings import EditRankings, RankingChart, edit_rankings
from .relevancy import (
    ClipDirRelevancy,
    RelevancyMap,
    augclip_relevancy,
    clip_dir_relevancy,
    clip_t_relevancy,
    modification_relevancy,
    relevancy,
    relevancy_batch,
    supports_relevancy,
)

__all__ = [
    "ClipDirRelevancy",
    "EditExplanation",
    "EditRankings",
    "ExactPanel",
    "ExactView",
    "ExplainOptions",
    "RankingChart",
    "RelevancyMap",
    "ReportExplanations",
    "UmapView",
    "augclip_relevancy",
    "clip_dir_relevancy",
    "clip_t_relevancy",
    "comparison_grid",
    "complete_relevancy",
    "edit_rankings",
    "exact_coordinates",
    "exact_view",
    "explain_report",
    "modification_relevancy",
    "relevancy",
    "relevancy_batch",
    "supports_relevancy",
    "umap_coordinates",
    "umap_view",
    "warm_up_umap",
]
