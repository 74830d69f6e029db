"""A study's agreement report as tables (headers, rows) for the operator tab and as text for the CLI."""

from __future__ import annotations

from ..batch.protocol_tables import _cell as figure_cell
from ..batch.protocol_tables import _render, metric_label
from ..metrics.agreement import Figure
from ..report import UNTRAINED_WARNING
from .agreement import StudyAgreement

Table = tuple[str, list[str], list[list[str]]]  # title, headers, rows


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def report_tables(report: StudyAgreement) -> list[Table]:
    tables: list[Table] = [("Agreement between raters (first answers)",
                            ["question", "Krippendorff's alpha", "level", "percent agreement", "agreeing / pairs",
                             "units judged"],
                            [[r.question, _share(r.alpha), r.level, _share(r.percent.value),
                              f"{r.percent.agreeing_pairs} / {r.percent.pairs}", str(r.judged_units)]
                             for r in report.inter])]
    if report.raters:
        repeats = {c.rater: c for c in report.consistency}
        other = "agrees with the others' majority" if report.kind == "2afc" else "mean |rating - others' mean|"
        tables.append((f"Raters ({report.question})",
                       ["rater", "answered", other, "units compared", "same answer on repeats", "median s per task"],
                       [[r.rater, str(r.answered), _share(r.with_others), str(r.compared),
                         f"{repeats[r.rater].same} / {repeats[r.rater].repeats}" if r.rater in repeats else "n/a",
                         "n/a" if r.median_seconds is None else f"{r.median_seconds:.1f}"] for r in report.raters]))
    if report.metrics:
        tables.append(_metric_table(report))
    ranking = _ranking_table(report)
    if ranking is not None:
        tables.append(ranking)
    return tables


def _metric_table(report: StudyAgreement) -> Table:
    if report.kind == "2afc":
        headers = ["metric", "s2AFC", "AccBoth (metric)", "model rank rho (protocol)"]
        rows = []
        for key, mp in report.metrics.items():
            rows.append([metric_label(key), figure_cell(mp.s2afc, True),
                         figure_cell(report.metric_acc_both.get(key), True), figure_cell(mp.model_spearman, True)])
        title = f"Metrics vs the raters' verdicts ({report.question})"
        if report.human_acc_both is not None:
            title += f"; raters' AccBoth {figure_cell(report.human_acc_both, True)}"
        return title, headers, rows
    headers = ["metric", "Pearson r", "Spearman rho", "Kendall tau", "pair alignment", "model rank rho (protocol)"]
    rows = [[metric_label(key), figure_cell(mp.pearson, True), figure_cell(mp.spearman, True),
             figure_cell(mp.kendall, True), figure_cell(mp.pair_alignment, True), figure_cell(mp.model_spearman, True)]
            for key, mp in report.metrics.items()]
    return f"Metrics vs the mean ratings ({report.question})", headers, rows


def _ranking_table(report: StudyAgreement) -> Table | None:
    if report.ranking is not None and len(report.ranking.names) >= 2:
        fit = report.ranking
        human = {n: (Figure(s, ci, int(c)), r) for n, s, ci, c, r in zip(fit.names, fit.scores, fit.ci,
                                                                            fit.comparisons, fit.rank())}
        human_label = "Bradley-Terry score [95% CI] (comparisons)"
    elif report.human_means:
        from scipy.stats import rankdata

        names = list(report.human_means)
        ranks = rankdata([-(report.human_means[n].value or 0.0) for n in names])
        human = {n: (report.human_means[n], float(r)) for n, r in zip(names, ranks)}
        human_label = "mean rating [95% CI] (edits)"
    else:
        return None
    headers = ["model", human_label, "human rank"] + [f"{metric_label(m.metric)} mean (rank)"
                                                       for m in report.metric_rankings]
    rows = []
    for name, (figure, rank) in sorted(human.items(), key=lambda kv: kv[1][1]):
        row = [name, f"{figure_cell(figure, True)} ({figure.n})", f"{rank:g}"]
        for m in report.metric_rankings:
            row.append(f"{m.means[name]:.4f} (#{m.ranks[name]:g})" if name in m.means else "n/a")
        rows.append(row)
    if report.metric_rankings:
        rows.append(["Spearman rho with the human ranking", "", ""] + [_share(m.spearman_with_humans)
                                                                       for m in report.metric_rankings])
    return "Per-model ranking: raters and metrics", headers, rows


def format_report(report: StudyAgreement) -> str:
    lines = [f"study {report.study} ({report.kind}): {report.judgments} judgments (one per question answered) from "
             f"{report.raters_answering} "
             f"rater(s); {report.units_complete} of {report.units} units have their judgments"]
    if any(note.startswith(UNTRAINED_WARNING) for note in report.notes):
        lines.insert(0, f"!! {UNTRAINED_WARNING.upper()} !!")
    blocks = ["\n".join(lines)]
    blocks += [_render(title, headers, rows) for title, headers, rows in report_tables(report)]
    if report.notes:
        blocks.append("notes:\n" + "\n".join(f"- {note}" for note in report.notes))
    return "\n\n".join(blocks)
