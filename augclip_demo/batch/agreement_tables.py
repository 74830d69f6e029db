"""``agreement``: which metric agrees with the human judgments of each set in batch results.

Reads results as ``protocol`` does (:func:`~augclip_demo.batch.protocol_tables.read_protocol_items`: items
grouped by dataset, their ``human`` field and, for human-vote sets, ``meta.vote_kind``), computes the figures
of :mod:`augclip_demo.metrics.human_agreement` for every metric the results hold, and renders one table per
set and one across sets as Markdown, JSON or a self-contained HTML page with a bar plot.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..choices import DEFAULT_AGREEMENT_SEED, DEFAULT_BOOTSTRAP, DEFAULT_LEVEL
from ..errors import InputError
from ..metrics.agreement import Figure, ProtocolItem
from ..metrics.human_agreement import FIGURES, Judged, SetAgreement, evaluate_set, ranked
from ..metrics.suite import METRICS
from ..report import UNTRAINED_WARNING
from .protocol_tables import metric_label, read_chosen_metrics

_ACROSS = "all sets"
FIGURE_LABELS: dict[str, str] = {"pairwise": "pairwise acc. (ties out)", "pairwise_ties": "pairwise acc. with ties",
                                 "s2afc": "s2AFC", "spearman": "Spearman rho", "kendall": "Kendall tau"}
_PRIMARY = ("pairwise", "spearman", "s2afc")
NO_JUDGMENTS_IN_SET = "no human judgments in this set: nothing to agree with"


@dataclass
class AgreementReport:
    """Per set (and across sets) every metric's agreement figures, with what the sets' human data hold."""

    sets: dict[str, SetAgreement]
    votes: dict[str, dict[str, int]]  # per set: how many items of each vote kind (win, tie, both_bad, ...)
    metrics: list[str]
    n_boot: int
    seed: int
    level: float
    tolerance: float | None
    untrained: bool
    models: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def primary(self, name: str) -> str | None:
        """The figure the set's metrics are ranked by: pairwise accuracy, else Spearman, else s2AFC."""
        for figure in _PRIMARY:
            if any(figure in m.figures for m in self.sets[name].metrics.values()):
                return figure
        return None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "settings": {"bootstrap": self.n_boot, "seed": self.seed, "level": self.level,
                         "tie_tolerance": "calibrated" if self.tolerance is None else self.tolerance},
            "results": self.sources, "models": self.models, "untrained": self.untrained, "metrics": self.metrics,
            "sets": {name: {"n_items": s.n_items, "n_pairs": s.n_pairs, "n_human_ties": s.n_human_ties,
                            "votes": self.votes.get(name, {}), "ranked_by": self.primary(name),
                            "metrics": {key: m.to_dict() for key, m in s.metrics.items()},
                            "paired_test": s.test.to_dict() if s.test else None}
                     for name, s in self.sets.items()}}
        if self.untrained:
            data["warning"] = UNTRAINED_WARNING
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)

    # -------------------------------------------------------------- Markdown
    def markdown(self) -> str:
        lines = [f"> **{UNTRAINED_WARNING}**", ""] if self.untrained else []
        lines += [self.settings_line(), ""]
        for name, result in self.sets.items():
            lines += [f"## {name}" if name != _ACROSS else f"## {_ACROSS} (pooled)", "", self._counts(name), ""]
            headers, rows = self.table(name)
            if not rows:
                lines += [f"{NO_JUDGMENTS_IN_SET}", ""]
                continue
            lines.append("| " + " | ".join(headers) + " |")
            lines.append("|" + " --- |" * len(headers))
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
            if result.test is not None:
                lines += [_test_line(result), ""]
        if len(self.sets) > 2 or (len(self.sets) == 2 and _ACROSS not in self.sets):
            lines += self._across()
        return "\n".join(lines).rstrip() + "\n"

    def settings_line(self) -> str:
        """The bootstrap and tie settings the figures were computed with, in words."""
        tolerance = "calibrated per metric" if self.tolerance is None else f"{self.tolerance:g}"
        return (f"Bootstrap {self.n_boot} resamples of items, seed {self.seed}, {self.level:.0%} intervals in "
                f"brackets; tie tolerance of the pairwise accuracy with ties: {tolerance}.")

    def table(self, name: str) -> tuple[list[str], list[list[str]]]:
        """Set ``name``'s table as every rendering shows it: the headers (metric, then each figure some metric
        has) and one row per metric, best first under the set's ranking figure; no rows when the set has no
        human judgments. A cell is ``value [low, high] n=N`` (n/a: the figure does not apply to the metric)."""
        result = self.sets[name]
        present = [f for f in FIGURES if any(f in m.figures for m in result.metrics.values())]
        if not present:
            return ["metric"], []
        order = ranked(result.metrics, self.primary(name) or present[0])
        order += [key for key in result.metrics if key not in order]
        rows = []
        for key in order:
            metric = result.metrics[key]
            rows.append([_label(key)] + [_cell(metric.figures.get(f)) + (
                f" (tol {metric.tolerance:.3g})" if f == "pairwise_ties" and metric.tolerance is not None
                and f in metric.figures else "") for f in present])
        return ["metric", *(FIGURE_LABELS[f] for f in present)], rows

    def counts(self, name: str) -> str:
        """What set ``name``'s human data hold: items, pairs, human ties and the votes by kind."""
        return self._counts(name)

    def test_line(self, name: str) -> str | None:
        """The paired test of the set's two best metrics, in words (None: fewer than two metrics to compare)."""
        result = self.sets[name]
        return _test_line(result) if result.test is not None else None

    def _counts(self, name: str) -> str:
        result = self.sets[name]
        votes = self.votes.get(name, {})
        kinds = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(votes.items()))
        return (f"{result.n_items} items, {result.n_pairs} pairs of edits with human scores, {result.n_human_ties} of "
                f"them human ties (kept: they count in the accuracy with ties, left out of the one without)"
                + (f"; votes: {kinds}" if kinds else ""))

    def _across(self) -> list[str]:
        names = [n for n in self.sets if n != _ACROSS]
        lines = ["## Across sets", "", "Each set's own ranking figure (pairwise accuracy, else Spearman, else s2AFC)."
                 + (f" `{_ACROSS}` pools every item." if _ACROSS in self.sets else ""), ""]
        columns = [(n, self.primary(n)) for n in names + ([_ACROSS] if _ACROSS in self.sets else [])]
        columns = [(n, f) for n, f in columns if f is not None]
        lines.append("| metric | " + " | ".join(f"{n}: {FIGURE_LABELS[f]}" for n, f in columns) + " |")
        lines.append("| --- |" + " --- |" * len(columns))
        for key in self.metrics:
            cells = [_cell(self.sets[n].metrics[key].figures.get(f)) if key in self.sets[n].metrics else "n/a"
                     for n, f in columns]
            lines.append(f"| {_label(key)} | " + " | ".join(cells) + " |")
        return lines + [""]

    # -------------------------------------------------------------- HTML
    def html(self) -> str:
        body = []
        if self.untrained:
            body.append(f"<p class='warn'>{html.escape(UNTRAINED_WARNING)}</p>")
        for name, result in self.sets.items():
            figure = self.primary(name)
            body.append(f"<h2>{html.escape(name)}</h2><p>{html.escape(self._counts(name))}</p>")
            if figure is not None:
                body.append(_bar_svg(result, figure, self.level))
            body.append(_markdown_table_html(self, name))
            if result.test is not None:
                body.append(f"<p>{html.escape(_test_line(result))}</p>")
        style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
                 "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:first-child{text-align:left}"
                 ".warn{color:#a00;font-weight:bold}")
        return ("<!doctype html><html><head><meta charset='utf-8'><title>Agreement with human judgments</title>"
                f"<style>{style}</style></head><body><h1>Which metric agrees with people</h1>"
                f"<p>{html.escape(self.settings_line())}</p>"
                + "".join(body) + "</body></html>\n")


def _label(key: str) -> str:
    return metric_label(key)


def _cell(figure: Figure | None) -> str:
    if figure is None or figure.value is None:
        return "n/a"
    text = f"{figure.value:.3f}"
    if figure.ci is not None:
        text += f" [{figure.ci[0]:.2f}, {figure.ci[1]:.2f}]"
    elif figure.ci_note:
        text += " [no CI]"
    return text + f" n={figure.n}"


def _test_line(result: SetAgreement) -> str:
    test = result.test
    assert test is not None
    if test.ci is None:
        return (f"{_label(test.first)} vs {_label(test.second)} ({FIGURE_LABELS[test.figure]}): difference "
                f"{test.difference:+.3f}, no paired bootstrap (no resamples)")
    return (f"Best two by {FIGURE_LABELS[test.figure]}: {_label(test.first)} - {_label(test.second)} = "
            f"{test.difference:+.3f} [{test.ci[0]:+.3f}, {test.ci[1]:+.3f}], paired bootstrap p = {test.p_value:.3g} "
            f"({test.resamples} resamples)")


def _markdown_table_html(report: AgreementReport, name: str) -> str:
    headers, rows = report.table(name)
    if not rows:
        return f"<p>{html.escape(NO_JUDGMENTS_IN_SET)}</p>"
    parts = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>"]
    parts += ["<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows]
    return "".join(parts) + "</table>"


def _bar_svg(result: SetAgreement, figure: str, level: float) -> str:
    """Horizontal bars of ``figure`` per metric, best first, with the interval as a whisker (inline SVG)."""
    order = ranked(result.metrics, figure)
    if not order:
        return ""
    low = min(0.0, *(min(result.metrics[k].figures[figure].ci or (0.0, 0.0)) for k in order))
    left, width, row = 170, 420, 22
    height = row * len(order) + 30

    def x(value: float) -> float:
        return left + (value - low) / (1.0 - low) * width

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{left + width + 60}' height='{height}' role='img' "
             f"aria-label='{html.escape(FIGURE_LABELS[figure])} per metric'>"]
    for i, key in enumerate(order):
        fig = result.metrics[key].figures[figure]
        y = 10 + i * row
        parts.append(f"<text x='{left - 6}' y='{y + 14}' text-anchor='end' font-size='12'>{html.escape(_label(key))}</text>")
        parts.append(f"<rect x='{x(min(0.0, fig.value)):.1f}' y='{y + 3}' width='{abs(x(fig.value) - x(0.0)):.1f}' "
                     f"height='{row - 8}' fill='#4a7ebb'><title>{fig.value:.3f}</title></rect>")
        if fig.ci is not None:
            a, b = x(fig.ci[0]), x(fig.ci[1])
            mid = y + row / 2
            parts.append(f"<line x1='{a:.1f}' x2='{b:.1f}' y1='{mid}' y2='{mid}' stroke='black'/>"
                         f"<line x1='{a:.1f}' x2='{a:.1f}' y1='{mid - 4}' y2='{mid + 4}' stroke='black'/>"
                         f"<line x1='{b:.1f}' x2='{b:.1f}' y1='{mid - 4}' y2='{mid + 4}' stroke='black'/>")
        parts.append(f"<text x='{x(max(fig.value, fig.ci[1] if fig.ci else fig.value)) + 4:.1f}' y='{y + 14}' "
                     f"font-size='11'>{fig.value:.3f}</text>")
    axis = height - 14
    parts.append(f"<line x1='{x(low)}' x2='{x(1.0)}' y1='{axis}' y2='{axis}' stroke='#888'/>")
    for tick in (low, 0.5, 1.0) if low < 0 else (0.0, 0.5, 1.0):
        parts.append(f"<text x='{x(tick):.1f}' y='{height - 2}' font-size='10' text-anchor='middle'>{tick:g}</text>")
    parts.append("</svg>")
    caption = f"bars: {FIGURE_LABELS[figure]}, best first; whiskers: {level:.0%} bootstrap intervals"
    return f"<figure>{''.join(parts)}<figcaption>{html.escape(caption)}</figcaption></figure>"


# ---------------------------------------------------------------------------------------------- computing
def _judged_items(items: list[ProtocolItem], keys: list[str]) -> list[Judged]:
    """Protocol items as the statistics read them: every metric oriented so that higher is better."""
    out = []
    for item in items:
        values: dict[str, list[float | None]] = {}
        for key in keys:
            sign = 1.0 if (METRICS[key].higher_is_better if key in METRICS else True) else -1.0
            row = []
            for edit in item.edits:
                value = edit.metrics.get(key)
                row.append(sign * float(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
                           and value == value else None)
            values[key] = row
        scores = list(item.scores) if item.scores is not None else None
        out.append(Judged(values, scores, item.preferred, votes=item.vote is not None))
    return out


def compute_agreement(paths: list[str | Path], *, metrics: list[str] | None = None,
                      n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_AGREEMENT_SEED,
                      level: float = DEFAULT_LEVEL, tolerance: float | None = None) -> AgreementReport:
    """Agreement figures of every metric in the results (or ``metrics``) against each set's human judgments."""
    if not paths:
        raise InputError("give at least one results file")
    check_settings(n_boot, level, tolerance)
    _, grouped, keys, models, untrained = read_chosen_metrics(list(paths), metrics)
    if not has_judgments(grouped):
        raise InputError("the results hold no human judgments (no item has `human`): run `batch` on a manifest of a "
                         "human set (e.g. `manifest parquet --preset genai-bench`) or add `human` to the manifest")
    return agreement_report(grouped, keys, n_boot=n_boot, seed=seed, level=level, tolerance=tolerance,
                            untrained=untrained, models=models, sources=[str(p) for p in paths])


def check_settings(n_boot: int, level: float, tolerance: float | None) -> None:
    """Refuse bootstrap settings the statistics cannot use, with the reason."""
    if not 0 < level < 1:
        raise InputError(f"the confidence level must be between 0 and 1, got {level}")
    if n_boot < 0:
        raise InputError(f"the number of bootstrap resamples must be >= 0, got {n_boot}")
    if tolerance is not None and not tolerance >= 0:
        raise InputError(f"the tie tolerance must be a number >= 0, got {tolerance}")


def has_judgments(grouped: Mapping[str, list[ProtocolItem]]) -> bool:
    """Whether any item has a human judgment (scores or a choice)."""
    return any(item.scores is not None or item.preferred is not None for items in grouped.values() for item in items)


def agreement_report(grouped: Mapping[str, list[ProtocolItem]], keys: list[str], *,
                     n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_AGREEMENT_SEED,
                     level: float = DEFAULT_LEVEL, tolerance: float | None = None, untrained: bool = False,
                     models: list[str] | None = None, sources: list[str] | None = None) -> AgreementReport:
    """The figures of ``keys`` on items grouped by set (in the sets' order; each set's items in file order): one
    table per set and, with several sets, ``all sets`` pooled (resampled within each set). The one computation
    behind ``augclip-demo agreement`` and the Explore tab's per-set table."""
    check_settings(n_boot, level, tolerance)
    sets: dict[str, SetAgreement] = {}
    votes: dict[str, dict[str, int]] = {}
    settings = {"n_boot": n_boot, "seed": seed, "level": level, "tolerance": tolerance}
    everything: list[Judged] = []
    strata: list[int] = []
    for number, (name, items) in enumerate(grouped.items()):
        judged = _judged_items(items, keys)
        everything += judged
        strata += [number] * len(judged)
        sets[name] = evaluate_set(judged, keys, **settings)
        votes[name] = dict(Counter(item.vote for item in items if item.vote))
    if len(sets) > 1:
        sets[_ACROSS] = evaluate_set(everything, keys, **settings, strata=strata)
        votes[_ACROSS] = {k: sum(v.get(k, 0) for v in votes.values()) for k in {k for v in votes.values() for k in v}}
    return AgreementReport(sets, votes, list(keys), n_boot, seed, level, tolerance, untrained, list(models or []),
                           list(sources or []))
