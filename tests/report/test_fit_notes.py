"""A degenerate AugCLIP fit (v = 0, no better than one class for all) is named in the report, verdict and page."""

from __future__ import annotations

import numpy as np

from augclip_demo.attributes import Attributes
from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.report import DEGENERATE_FIT, AugCLIPDetails, EditResult, Report


def _report(v_norm: float, accuracy: float, samples: list[str], score: float, clip_i: float) -> Report:
    details = AugCLIPDetails(c=0.0, v_norm=v_norm, w_norm=1.0, b=0.0, source_distance=0.1, edit_distance=0.2,
                             ideal_distance=0.1, fit_accuracy=accuracy, classifier="svm", C=1.0, weighting=True,
                             include_images=True, fit_samples=samples, alpha=[0.5] * len(samples),
                             sample_weight=[0.5] * len(samples))
    edit = EditResult(index=0, name="a.png", image_sha256="0" * 64, metrics={"augclip": score, "clip_i": clip_i},
                      augclip=details)
    return Report(source_name="s.png", source_sha256="0" * 64, target_text="t", source_text=None,
                  attributes=Attributes(["x"], ["y", "z"]), model={}, untrained=True, options={}, edits=[edit],
                  timings={})


def test_a_fit_that_answers_one_class_is_degenerate_and_augclip_then_equals_clip_i():
    # Found by search: C = 1e-4 makes this weighted SVM put every sample on the target side (3 of 5 right).
    rng = np.random.default_rng(17)
    src, edit = rng.normal(size=8), rng.normal(size=8)
    fit = augclip_score(src, edit, rng.normal(size=(1, 8)), rng.normal(size=(2, 8)), C=1e-4)
    assert np.linalg.norm(fit.v) == 0 and fit.fit_accuracy == 0.6
    cos = float(src @ edit / np.linalg.norm(src) / np.linalg.norm(edit))  # CLIP-I from its definition
    assert abs(fit.score - cos) < 1e-12  # the ideal edit is the source: AugCLIP says nothing more than CLIP-I
    samples = ["[source image]", "S: x", "[edited image]", "T: y", "T: z"]
    report = _report(0.0, fit.fit_accuracy, samples, fit.score, cos)
    (note,) = report.fit_notes()
    assert note.startswith(DEGENERATE_FIT) and "E1" in note and "0.60" in note
    assert f"({DEGENERATE_FIT}: AugCLIP = CLIP-I)" in report.verdict()
    assert note in report.to_dict()["notes"]
    from augclip_demo.ui.evaluate.views import verdict_markdown

    assert DEGENERATE_FIT in verdict_markdown(report)


def test_a_working_fit_with_the_source_on_the_target_side_is_not_called_degenerate():
    samples = ["[source image]", "S: x", "[edited image]", "T: y", "T: z"]
    report = _report(0.0, 0.8, samples, 0.9, 0.9)
    (note,) = report.fit_notes()
    assert not note.startswith(DEGENERATE_FIT) and "target side" in note
    assert DEGENERATE_FIT not in report.verdict()
    assert _report(0.3, 0.6, samples, 0.7, 0.9).fit_notes() == []  # v != 0: a real ideal edit
