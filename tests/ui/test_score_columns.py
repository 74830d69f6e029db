"""What the app shows of the metrics follows the metric table's rows: the score table's columns (every primary
metric, each reference metric some edit has a value for, in table order), the verdict's n/a reasons, the Help
tab's descriptions and the judge table's columns. Reports are built by hand: no model runs."""

from __future__ import annotations

import html
import re

import pandas as pd

from augclip_demo.attributes import Attributes
from augclip_demo.metrics.suite import METRIC_TABLE, METRICS
from augclip_demo.report import EditResult, Report
from augclip_demo.ui.evaluate import views
from augclip_demo.ui.help import help_markdown

PRIMARY = [metric for metric in METRIC_TABLE if metric.primary]
REFERENCE = [metric for metric in METRIC_TABLE if metric.reference]
NEITHER = [metric for metric in METRIC_TABLE if not metric.primary and not metric.reference]  # variants, HATIE


def _report(*per_edit: dict, unavailable: dict[str, str] | None = None, judge: dict | None = None) -> Report:
    edits = [EditResult(index=i, name=f"bench_{i}_out.png", image_sha256="0" * 64, metrics=dict(metrics),
                        unavailable=dict(unavailable or {}), judge=judge) for i, metrics in enumerate(per_edit)]
    return Report(source_name="source.png", source_sha256="0" * 64, target_text="a blue ball", source_text=None,
                  attributes=Attributes(["a red ball"], ["a blue ball"]), model={}, untrained=False, options={},
                  edits=edits, timings={})


def _header(metric) -> str:
    return metric.label + ("" if metric.higher_is_better else " (lower is better)")


def test_the_table_shows_each_primary_metric_and_a_reference_metric_only_where_an_edit_has_a_value():
    valued, empty = REFERENCE[0], REFERENCE[-1]
    first = {metric.key: 0.5 for metric in PRIMARY + NEITHER} | {valued.key: 0.25, empty.key: None}
    second = first | {valued.key: None}  # one edit with a value is enough
    frame = views.score_frame(_report(first, second))
    want = [_header(metric) for metric in METRIC_TABLE if metric.primary or metric is valued]
    assert list(frame.columns) == ["#", "edit", *want]
    # the same facts by hand: AugCLIP first, L2's direction said, the reference column before BPM's, no variant,
    # no HATIE criterion and no reference column without a value
    assert want[0] == "AugCLIP" and "L2 (lower is better)" in want
    assert want.index(_header(valued)) < want.index("BPM")
    assert not {_header(metric) for metric in NEITHER} & set(frame.columns) and _header(empty) not in frame.columns
    assert frame[_header(valued)].tolist()[0] == 0.25 and pd.isna(frame[_header(valued)].tolist()[1])
    # the CLI, the CSV and the app read one rule: Report.metric_keys
    assert [METRICS[key] for key in _report(first, second).metric_keys()] == [
        metric for metric in METRIC_TABLE if metric.primary or metric is valued]


def test_a_report_with_every_value_fits_the_tables_column_types():
    everything = {metric.key: 1.0 for metric in PRIMARY + REFERENCE}
    frame = views.score_frame(_report(everything))
    assert len(frame.columns) == 2 + len(PRIMARY) + len(REFERENCE) == len(views.SCORE_DATATYPES)


def test_the_verdict_gives_the_reasons_of_the_shown_metrics_only():
    hidden = NEITHER[-1]
    reasons = {"clip_dir": "no source text given", REFERENCE[0].key: "no ground truth given",
               hidden.key: "needs a set"}
    report = _report({"augclip": 0.4, "clip_dir": None, REFERENCE[0].key: None, hidden.key: None},
                     unavailable=reasons)
    text = views.verdict_text(report)
    assert "n/a: no source text given" in text  # a primary metric's reason
    assert "no ground truth given" not in text and "needs a set" not in text  # a hidden column says nothing
    assert "no source text given" in views.verdict_markdown(report)


def test_the_help_tab_describes_each_primary_metric_from_its_row_and_names_the_reference_metrics():
    text = help_markdown()
    for metric in PRIMARY:
        direction = "higher" if metric.higher_is_better else "lower"
        assert f"* **{metric.label}** ({direction} is better): {metric.description}\n" in text
    section = text.split("### What the scores mean", 1)[1].split("###", 1)[0]
    assert all(metric.label in section for metric in REFERENCE)
    assert not any(f"**{metric.label}**" in text for metric in NEITHER)


def test_the_judge_table_has_a_column_per_judge_row_and_its_descriptions():
    judged = [metric for metric in METRIC_TABLE if metric.basis == "judge"]
    judge = {"sc": {"mean": 6.0, "std": 0.5, "rationales": ["kept the ball"]}, "pq": {"mean": 7.0},
             "overall": {"mean": 6.5}, "settings": {"model": "m", "prompt_version": "v", "temperature": 1.0,
                                                    "samples": 2}}
    page = views.judge_html(_report({"augclip": 0.3}, judge=judge))
    headers = re.findall(r"<th>([^<]*)</th>", page)
    assert headers == ["#", "edit", *(html.escape(metric.label) for metric in judged)]
    assert all(html.escape(metric.description) in page for metric in judged)
    titles = [html.unescape(title) for title in re.findall(r'title="([^"]*)"', page)]
    assert "kept the ball" in titles and METRICS["judge_overall"].description in titles  # no rationale of its own
    assert "6.00 &plusmn; 0.50" in page and ">7.00<" in page
