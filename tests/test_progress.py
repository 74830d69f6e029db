"""Progress that moves and a timing line that is true: what the app and the CLI show while a click runs."""

from __future__ import annotations

import io

import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.cli.common import terminal_progress
from augclip_demo.config import Settings
from augclip_demo.pipeline import Evaluator
from augclip_demo.ui.evaluate.views import timing_line
from tests.support import draw_scene

SOURCE = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
TARGET = "a red ball on green grass"


class Recorder:
    def __init__(self):
        self.calls: list[tuple[float, str]] = []

    def __call__(self, fraction: float, message: str) -> None:
        self.calls.append((fraction, message))

    @property
    def fractions(self) -> list[float]:
        return [f for f, _ in self.calls]

    def messages(self, word: str) -> list[str]:
        return [m for _, m in self.calls if word in m]


@pytest.mark.slow
def test_evaluate_reports_each_step_and_times_the_extraction_it_ran(tiny_encoder, tmp_path):
    evaluator = Evaluator(encoder=tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path))
    seen = Recorder()
    edits = [draw_scene(), draw_scene(background="green")]
    report = evaluator.evaluate(SOURCE, edits, TARGET, attributes="clip-vocab", progress=seen)
    assert seen.fractions == sorted(seen.fractions) and seen.fractions[0] >= 0.0 and seen.fractions[-1] <= 1.0
    # the provider's own steps come through, between "extracting attributes" and the encoding
    assert seen.messages("extracting attributes") and seen.messages("clip-vocab")
    assert seen.messages("encoding 3 images") and seen.messages("texts") and seen.messages("scoring")
    # the timing covers the extraction the provider timed itself (its own clock, in the provenance)
    extraction = report.attributes.provenance.seconds
    assert extraction > 0 and report.timings["attributes"] >= extraction
    assert "attributes given" not in timing_line(report)
    assert f"attributes {report.timings['attributes']:.2f} s" in timing_line(report)


@pytest.mark.slow
def test_given_attributes_are_not_timed_as_an_extraction(tiny_encoder):
    evaluator = Evaluator(encoder=tiny_encoder)
    report = evaluator.evaluate(SOURCE, draw_scene(), TARGET, attributes=Attributes(["red ball"], ["green grass"]))
    line = timing_line(report)
    assert line.startswith("time: ") and "attributes given (not extracted)" in line and "attributes 0.00" not in line


@pytest.mark.slow
def test_explanations_report_every_stage(tiny_encoder):
    from augclip_demo.explain import explain_report

    evaluator = Evaluator(encoder=tiny_encoder)
    report = evaluator.evaluate(SOURCE, [draw_scene(), draw_scene(background="green")], TARGET, "a red ball",
                                attributes=Attributes(["red ball", "white background"], ["green grass"]))
    seen = Recorder()
    explain_report(report, tiny_encoder, progress=seen, umap=False)
    assert seen.fractions == sorted(seen.fractions) and seen.fractions[-1] <= 1.0
    assert seen.messages("relevancy maps:") and seen.messages("figures of E1") and seen.messages("figures of E2")
    assert seen.messages("exact hyperplane view") and seen.messages("attribute rankings")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_progress_rewrites_one_line_with_the_elapsed_time():
    terminal = FakeTerminal()
    report = terminal_progress(terminal)
    report(0.25, "clip-vocab: encoding the vocabulary, phrases 256 of 1024")
    text = terminal.getvalue()
    assert text.startswith("\r[") and " s]  25%  clip-vocab: encoding the vocabulary" in text and "\n" not in text
    report(1.0, "done")
    assert terminal.getvalue().endswith("\r")
    assert terminal_progress(io.StringIO()) is None  # a pipe or a log file gets no status line
