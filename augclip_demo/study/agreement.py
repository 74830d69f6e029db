"""Live statistics of a study: how raters agree, and how each metric agrees with them.

Only a rater's first answer on a unit counts (attention-check repeats measure the rater's own
consistency). For a pair, the raters' verdict is the majority of their first answers ("a" vs "b";
ties count for neither; an even split gives no verdict, and the pair is left out of s2AFC). The
metric figures come from :func:`augclip_demo.metrics.agreement.evaluate_metric`, the function
``protocol`` uses, on items built from the verdicts exactly as the exported manifest states them
(one item per judged pair, ``human.preferred``; or one item per source, ``human.scores`` = mean
rating), so ``batch`` + ``protocol`` on the export give the same numbers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..batch.protocol_tables import read_protocol_items
from ..batch.results import iter_results
from ..errors import InputError
from ..metrics.agreement import (
    DEFAULT_LEVEL,
    DEFAULT_SEED,
    Figure,
    MetricProtocols,
    ProtocolEdit,
    ProtocolItem,
    evaluate_metric,
    mean_figure,
    spearman,
)
from ..metrics.raters import (
    BradleyTerryFit,
    PairAgreement,
    fit_bradley_terry,
    krippendorff_alpha,
    percent_agreement,
)
from ..metrics.suite import METRICS
from ..report import UNTRAINED_WARNING
from .design import Unit
from .store import StudyData

_LIVE_BOOTSTRAP = 200  # resamples in the live view (the CLI's --bootstrap sets more)


@dataclass
class InterRater:
    question: str
    level: str
    alpha: float | None
    percent: PairAgreement
    judged_units: int  # units with at least one first answer


@dataclass
class Consistency:
    rater: str
    repeats: int
    same: int

    @property
    def share(self) -> float | None:
        return self.same / self.repeats if self.repeats else None


@dataclass
class RaterRow:
    """One rater at a glance: answers, agreement with the other raters, speed (to spot careless raters)."""

    rater: str
    answered: int  # first answers to the question
    with_others: float | None  # 2AFC: share matching the others' majority; ratings: mean |rating - others' mean|
    compared: int  # units where the others gave a verdict
    median_seconds: float | None


@dataclass
class MetricRanking:
    """A metric's per-model means and ranks beside the humans', and the rank correlation between them."""

    metric: str
    means: dict[str, float]
    ranks: dict[str, float]
    spearman_with_humans: float | None


@dataclass
class StudyAgreement:
    study: str
    kind: str
    question: str
    judgments: int
    raters_answering: int
    units: int
    units_complete: int  # units with at least per_unit first answers
    inter: list[InterRater] = field(default_factory=list)
    consistency: list[Consistency] = field(default_factory=list)
    raters: list[RaterRow] = field(default_factory=list)
    metrics: dict[str, MetricProtocols] = field(default_factory=dict)
    human_acc_both: Figure | None = None
    metric_acc_both: dict[str, Figure] = field(default_factory=dict)
    ranking: BradleyTerryFit | None = None
    human_means: dict[str, Figure] = field(default_factory=dict)  # ratings: per-model mean rating
    metric_rankings: list[MetricRanking] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- answers
def first_answers(data: StudyData, question: str) -> dict[Unit, dict[str, str]]:
    """unit -> {rater: first answer} for one question (repeats left out)."""
    out: dict[Unit, dict[str, str]] = defaultdict(dict)
    for j in data.judgments:
        if j.question == question and not j.is_repeat:
            out[Unit(j.item_id, j.edit_a, j.edit_b)].setdefault(j.rater, j.answer)
    return dict(out)


def pair_verdict(answers: Sequence[str]) -> int | None:
    """0 when more raters chose edit a than b, 1 for the reverse, None on an even split (ties count for neither)."""
    a, b = sum(x == "a" for x in answers), sum(x == "b" for x in answers)
    return 0 if a > b else 1 if b > a else None


def mean_ratings(data: StudyData, question: str) -> dict[str, list[float | None]]:
    """item id -> mean first-answer rating of each edit (None where nobody rated it)."""
    sums: dict[tuple[str, int], list[float]] = defaultdict(list)
    for unit, answers in first_answers(data, question).items():
        sums[(unit.item_id, unit.edit_a)].extend(float(v) for v in answers.values())
    out: dict[str, list[float | None]] = {}
    for item_id, edits in data.edits.items():
        values = [sums.get((item_id, i)) for i in range(len(edits))]
        if any(values):
            out[item_id] = [sum(v) / len(v) if v else None for v in values]
    return out


def consistency(data: StudyData, question: str) -> list[Consistency]:
    """Per rater: how often the repeat of a pair got the same answer as the first time (same edit or tie)."""
    first: dict[tuple[str, Unit], str] = {}
    repeats: dict[str, list[bool]] = {rater: [] for rater in data.raters}
    for j in data.judgments:
        if j.question != question:
            continue
        key = (j.rater, Unit(j.item_id, j.edit_a, j.edit_b))
        if not j.is_repeat:
            first.setdefault(key, j.answer)
        elif key in first:
            repeats.setdefault(j.rater, []).append(first[key] == j.answer)
    return [Consistency(rater, len(flags), sum(flags)) for rater, flags in repeats.items() if flags]


def _rater_rows(data: StudyData, question: str) -> list[RaterRow]:
    """Per rater: first answers, agreement with the others on the same units, median seconds per task."""
    answers = first_answers(data, question)
    seconds: dict[str, list[float]] = defaultdict(list)
    for j in data.judgments:
        if j.question == question and j.elapsed_ms is not None:
            seconds[j.rater].append(j.elapsed_ms / 1000.0)
    rows = []
    for rater in data.raters:
        scores = []
        for by_rater in answers.values():
            if rater not in by_rater:
                continue
            others = [v for r, v in by_rater.items() if r != rater]
            if data.study.kind == "2afc":
                verdict = pair_verdict(others)
                if verdict is not None and by_rater[rater] != "tie":
                    scores.append(float((by_rater[rater] == "a") == (verdict == 0)))
            elif others:
                scores.append(abs(float(by_rater[rater]) - sum(map(float, others)) / len(others)))
        answered = sum(rater in v for v in answers.values())
        times = sorted(seconds.get(rater, []))
        median = (times[len(times) // 2] + times[(len(times) - 1) // 2]) / 2 if times else None
        if answered:
            rows.append(RaterRow(rater, answered, sum(scores) / len(scores) if scores else None, len(scores), median))
    return rows


def _inter_rater(data: StudyData) -> list[InterRater]:
    level = "nominal" if data.study.kind == "2afc" else "ordinal"
    out = []
    for question in data.study.questions:
        answers = first_answers(data, question)
        units = [list(v.values()) if level == "nominal" else [int(x) for x in v.values()] for v in answers.values()]
        out.append(InterRater(question, level, krippendorff_alpha(units, level), percent_agreement(units), len(units)))
    return out


# ---------------------------------------------------------------------------------------------- metric values
def metric_values(data: StudyData, results: Sequence[str | Path]) -> tuple[dict[str, ProtocolItem], list[str]]:
    """The results' items (metric values per edit) whose edits and source are the study's (content hashes),
    and notes (left-out items; first, when the results came from random weights, the untrained warning)."""
    _, grouped, _, _, untrained = read_protocol_items(list(results))
    by_id: dict[str, ProtocolItem] = {}
    for items in grouped.values():
        for item in items:
            if item.id in by_id:
                raise InputError(f"item {item.id!r} appears in more than one dataset of the results; give the "
                                 "results of this study's manifest only")
            by_id[item.id] = item
    hashes: dict[str, list[str | None]] = {}
    for path in results:
        for record in iter_results(Path(path)):
            if record.get("status") == "ok":
                hashes[str(record["id"])] = [e.get("sha256") for e in record.get("edits", [])]
    notes: list[str] = [f"{UNTRAINED_WARNING} (the metric values)"] if untrained else []
    kept = {}
    for item_id, item in by_id.items():
        if item_id not in data.edits:
            continue
        expected = [e["sha256"] for e in data.edits[item_id]]
        found = hashes.get(item_id, [])
        if len(found) != len(expected) or any(f is not None and f != e for f, e in zip(found, expected)):
            notes.append(f"item {item_id!r}: the results score other images than the study shows (content hashes "
                         "differ); left out")
            continue
        kept[item_id] = item
    missing = [item_id for item_id in data.edits if item_id not in kept]
    if missing:
        notes.append(f"{len(missing)} of the study's items have no metric values in the results "
                     f"(first: {', '.join(missing[:3])})")
    return kept, notes


def _verdict_items(data: StudyData, question: str, values: dict[str, ProtocolItem],
                  only_scored: bool = False) -> list[ProtocolItem]:
    """The protocol items the study's verdicts make: one per judged pair (2AFC) or per rated source
    (``only_scored``: only those of items with metric values)."""
    items = []
    if data.study.kind == "2afc":
        answered = first_answers(data, question)
        for unit in data.units:  # the study's order, as the export writes them (the bootstrap draws by position)
            if unit not in answered:
                continue
            answers = answered[unit]
            scored = values.get(unit.item_id)
            if only_scored and scored is None:
                continue
            edits = [_edit(data, scored, unit.item_id, i) for i in (unit.edit_a, unit.edit_b)]  # type: ignore[arg-type]
            items.append(ProtocolItem(pair_id(unit), edits, preferred=pair_verdict(list(answers.values()))))
    else:
        for item_id, scores in mean_ratings(data, question).items():
            scored = values.get(item_id)
            if only_scored and scored is None:
                continue
            edits = [_edit(data, scored, item_id, i) for i in range(len(scores))]
            items.append(ProtocolItem(item_id, edits, scores=scores))
    return items


def pair_id(unit: Unit) -> str:
    return f"{unit.item_id}:pair-{unit.edit_a}-{unit.edit_b}"


def _edit(data: StudyData, scored: ProtocolItem | None, item_id: str, index: int) -> ProtocolEdit:
    edit = data.edits[item_id][index]
    metrics = dict(scored.edits[index].metrics) if scored is not None else {}
    return ProtocolEdit(edit["name"], edit["role"], metrics)


# ---------------------------------------------------------------------------------------------- the report
def study_agreement(data: StudyData, results: Sequence[str | Path] = (), *, question: str = "overall",
                    metrics: Sequence[str] | None = None, n_boot: int = _LIVE_BOOTSTRAP, seed: int = DEFAULT_SEED,
                    level: float = DEFAULT_LEVEL) -> StudyAgreement:
    """Everything the operator sees: rater agreement, and with ``results`` each metric's agreement and ranking."""
    if question not in data.study.questions:
        raise InputError(f"study {data.study.name!r} asks {', '.join(data.study.questions)}; not {question!r}")
    answers = first_answers(data, question)
    report = StudyAgreement(
        data.study.name, data.study.kind, question, judgments=len(data.judgments),
        raters_answering=len({j.rater for j in data.judgments}), units=len(data.units),
        units_complete=sum(len(v) >= data.study.per_unit for v in answers.values()),
        inter=_inter_rater(data), consistency=consistency(data, question), raters=_rater_rows(data, question))
    boot = {"n_boot": n_boot, "seed": seed, "level": level}
    if data.study.kind == "2afc":
        report.ranking = fit_bradley_terry(_comparisons(data, answers), **boot)
    else:
        report.human_means = _mean_rating_by_model(data, question, boot)
    values, notes = metric_values(data, results) if results else ({}, [])
    report.notes.extend(notes)
    if not values:
        return report
    items = _verdict_items(data, question, values, only_scored=True)
    keys = list(metrics) if metrics else _metric_keys(items)
    for key in keys:
        higher = METRICS[key].higher_is_better if key in METRICS else True
        report.metrics[key] = evaluate_metric(items, key, higher, **boot)
    _acc_both(report, data, answers, values, keys, boot)
    _metric_rankings(report, data, values, keys)
    return report


def _metric_keys(items: list[ProtocolItem]) -> list[str]:
    keys: dict[str, None] = {}
    for item in items:
        for edit in item.edits:
            keys.update(dict.fromkeys(edit.metrics))
    return list(keys)


def _comparisons(data: StudyData, answers: dict[Unit, dict[str, str]]) -> list[tuple[str, str, str, float]]:
    out = []
    for unit, by_rater in answers.items():
        edits = data.edits[unit.item_id]
        first, second = edits[unit.edit_a]["name"], edits[unit.edit_b]["name"]  # type: ignore[index]
        for answer in by_rater.values():
            out.append((unit.item_id, first, second, {"a": 1.0, "b": 0.0, "tie": 0.5}[answer]))
    return out


def _mean_rating_by_model(data: StudyData, question: str, boot: dict) -> dict[str, Figure]:
    by_model: dict[str, list[float]] = defaultdict(list)
    for item_id, scores in mean_ratings(data, question).items():
        for edit, score in zip(data.edits[item_id], scores):
            if score is not None:
                by_model[edit["name"]].append(score)
    return {name: mean_figure(values, **boot) for name, values in sorted(by_model.items())}


def _acc_both(report: StudyAgreement, data: StudyData, answers: dict[Unit, dict[str, str]],
              values: dict[str, ProtocolItem], keys: list[str], boot: dict) -> None:
    """Raters' AccBoth (the gt edit preferred to both ep and em) beside each metric's, on the same triplets."""
    if data.study.kind != "2afc":
        return
    verdicts = {unit: pair_verdict(list(v.values())) for unit, v in answers.items()}
    human, triplets = [], []
    for item_id, edits in data.edits.items():
        roles = {e["role"]: i for i, e in enumerate(edits)}
        if item_id not in values or not {"gt", "ep", "em"} <= set(roles) or len(edits) != 3:
            continue
        wins = []
        for other in (roles["ep"], roles["em"]):
            a, b = sorted((roles["gt"], other))
            verdict = verdicts.get(Unit(item_id, a, b))
            wins.append(None if verdict is None else (verdict == 0) == (a == roles["gt"]))
        if None in wins:
            continue
        human.append(float(all(wins)))
        triplets.append(ProtocolItem(item_id, [_edit(data, values[item_id], item_id, i) for i in range(3)]))
    if not human:
        return
    report.human_acc_both = mean_figure(human, **boot)
    for key in keys:
        higher = METRICS[key].higher_is_better if key in METRICS else True
        figure = evaluate_metric(triplets, key, higher, **boot).acc_both
        if figure is not None:
            report.metric_acc_both[key] = figure


def _metric_rankings(report: StudyAgreement, data: StudyData, values: dict[str, ProtocolItem],
                     keys: list[str]) -> None:
    """Each metric's per-model mean over the study's edits (each edit once, every role: in a study the ep / em
    images are models people judged too) and its rank, beside the humans' ranking."""
    from scipy.stats import rankdata

    human = (dict(zip(report.ranking.names, report.ranking.scores)) if report.ranking is not None
             else {name: f.value for name, f in report.human_means.items() if f.value is not None})
    for key in keys:
        sums: dict[str, list[float]] = defaultdict(list)
        for item_id, item in values.items():
            for edit, scored in zip(data.edits[item_id], item.edits):
                value = scored.metrics.get(key)
                if value is not None and edit["name"] in human:
                    sums[edit["name"]].append(float(value))
        if len(sums) < 2:
            continue
        means = {name: sum(v) / len(v) for name, v in sums.items()}
        higher = METRICS[key].higher_is_better if key in METRICS else True
        names = list(means)
        oriented = [means[n] if higher else -means[n] for n in names]
        ranks = dict(zip(names, (float(r) for r in rankdata([-v for v in oriented]))))
        rho = spearman(oriented, [human[n] for n in names])
        report.metric_rankings.append(MetricRanking(key, means, ranks, rho))
