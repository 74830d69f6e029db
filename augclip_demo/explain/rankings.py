"""Attribute ranking charts (App. A.4, Fig. 9-10, Eq. 11-12) and the alpha weights (Eq. 4-6).

Built from the serialisable part of a :class:`Report` (``EditResult.source_changes``,
``target_changes`` and ``augclip`` details), so they also work for a report loaded from JSON.

* Source attributes, Eq. 11: delta_i = cs(E(I_src)+v, s_i) - cs(E(I_src), s_i), ranked by |delta|
  as the paper ranks them ("magnitude of change"): the top ones are what the ideal edit should
  change, the bottom ones what it keeps.
* Target attributes, Eq. 12: the same delta for t_i; the top ones are what the edit needs most.
* Alpha (Eq. 6) of every fit sample, per set, sorted by value: how much each sample weighs in the fit.

Long lists show the ``top_k`` first and ``bottom_k`` last entries, with the number left out between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover

    from ..report import EditResult, Report

_SOURCE_CAPTION = ("Eq. 11: change of cs(., s_i) from the source E(I_src) to the ideal edit E(I_src)+v, ranked by "
                  "magnitude (App. A.4, Fig. 9). Top: what the ideal edit should change; bottom: what it keeps.")
_TARGET_CAPTION = ("Eq. 12: change of cs(., t_i) from the source to the ideal edit, ranked by magnitude (Fig. 10). "
                  "Top: what the edit needs most; bottom: peripheral target attributes.")
_ALPHA_CAPTION = ("Eq. 6: alpha = Importance (similarity to the rest of its own set) + Collision (minus the mean "
                 "similarity to the other set). Samples with higher alpha weigh more in the hyperplane fit "
                 "(weights = max(alpha, 1e-3) rescaled to mean 1).")


@dataclass
class RankedItem:
    text: str
    value: float
    rank: int  # 1-based position in the full sorted list


@dataclass
class RankingChart:
    """One sorted bar chart: the shown items (top block, then bottom block) and how many were left out."""

    kind: str  # "source_changes" | "target_changes" | "alpha_source" | "alpha_target"
    title: str
    xlabel: str
    items: list[RankedItem]
    omitted: int
    total: int
    caption: str
    untrained: bool = False

    @property
    def split_after(self) -> int | None:
        """Index in ``items`` after which the left-out entries belong (None when nothing is left out)."""
        if not self.omitted:
            return None
        return next(i for i, item in enumerate(self.items) if i + 1 < len(self.items)
                    and self.items[i + 1].rank - item.rank > 1)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "total": self.total, "omitted": self.omitted,
                "items": [{"rank": i.rank, "text": i.text, "value": i.value} for i in self.items]}


@dataclass
class EditRankings:
    edit_index: int
    edit_name: str
    source: RankingChart
    target: RankingChart
    alpha_source: RankingChart | None
    alpha_target: RankingChart | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"edit": self.edit_index + 1, "name": self.edit_name,
                               "source_changes": self.source.to_dict(), "target_changes": self.target.to_dict()}
        if self.alpha_source is not None and self.alpha_target is not None:
            out["alpha"] = {"source_set": self.alpha_source.to_dict(), "target_set": self.alpha_target.to_dict()}
        return out


def top_bottom(values: list[tuple[str, float]], top_k: int, bottom_k: int) -> tuple[list[RankedItem], int]:
    """Already-sorted ``(text, value)`` pairs -> the first ``top_k`` and last ``bottom_k`` items, and the count between."""
    if top_k < 1 or bottom_k < 0:
        raise InputError(f"top_k must be >= 1 and bottom_k >= 0, got {top_k} and {bottom_k}")
    ranked = [RankedItem(text, float(value), rank) for rank, (text, value) in enumerate(values, start=1)]
    if len(ranked) <= top_k + bottom_k:
        return ranked, 0
    shown = ranked[:top_k] + (ranked[-bottom_k:] if bottom_k else [])
    return shown, len(ranked) - len(shown)


def edit_rankings(report: Report, edit_index: int, *, top_k: int = 8, bottom_k: int | None = None) -> EditRankings:
    """The ranking charts of one edit (0-based ``edit_index``)."""
    if not 0 <= edit_index < len(report.edits):
        raise InputError(f"edit index {edit_index} is out of range: the report has {len(report.edits)} edit(s)")
    bottom_k = top_k if bottom_k is None else bottom_k
    edit: EditResult = report.edits[edit_index]
    untrained = bool(report.untrained)
    name = report.edit_names()[edit_index].label  # "E2 ours": the one naming rule of every view
    # Eq. 11-12 rank by magnitude; the report's lists are already in that order, sort again to be safe.
    source = sorted(((c.text, c.delta) for c in edit.source_changes), key=lambda t: abs(t[1]), reverse=True)
    target = sorted(((c.text, c.delta) for c in edit.target_changes), key=lambda t: abs(t[1]), reverse=True)
    src_items, src_omitted = top_bottom(source, top_k, bottom_k)
    tgt_items, tgt_omitted = top_bottom(target, top_k, bottom_k)
    xlabel = "delta = cs(ideal, a) - cs(source, a)"
    charts = EditRankings(
        edit_index=edit_index,
        edit_name=edit.name,
        source=RankingChart("source_changes", f"Source attributes under the ideal edit, {name}", xlabel,
                            src_items, src_omitted, len(source), _SOURCE_CAPTION, untrained),
        target=RankingChart("target_changes", f"Target attributes under the ideal edit, {name}", xlabel,
                            tgt_items, tgt_omitted, len(target), _TARGET_CAPTION, untrained),
        alpha_source=None,
        alpha_target=None,
    )
    details = edit.augclip
    if details is None or not details.alpha:
        charts.notes.append("no AugCLIP fit details in this report: alpha chart unavailable")
        return charts
    src_alpha: list[tuple[str, float]] = []
    tgt_alpha: list[tuple[str, float]] = []
    for sample, alpha in zip(details.fit_samples, details.alpha):
        if sample == "[source image]" or sample.startswith("S: "):
            src_alpha.append((sample[3:] if sample.startswith("S: ") else sample, alpha))
        else:
            tgt_alpha.append((sample[3:] if sample.startswith("T: ") else sample, alpha))
    src_alpha.sort(key=lambda t: t[1], reverse=True)
    tgt_alpha.sort(key=lambda t: t[1], reverse=True)
    a_items, a_omitted = top_bottom(src_alpha, top_k, bottom_k)
    b_items, b_omitted = top_bottom(tgt_alpha, top_k, bottom_k)
    charts.alpha_source = RankingChart("alpha_source", f"Source set, {name}", "alpha (Eq. 6)", a_items, a_omitted,
                                       len(src_alpha), _ALPHA_CAPTION, untrained)
    charts.alpha_target = RankingChart("alpha_target", f"Target set, {name}", "alpha (Eq. 6)", b_items, b_omitted,
                                       len(tgt_alpha), _ALPHA_CAPTION, untrained)
    return charts
