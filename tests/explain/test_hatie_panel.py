"""HATIE's panel pieces on a hand-made result: bars (IQ needs a set), component rows, mask overlays."""

from __future__ import annotations

import numpy as np
from PIL import Image

from augclip_demo.explain.hatie_panel import (
    component_rows,
    criterion_bars,
    hatie_figure,
    mask_views,
    share_figure,
    share_lines,
)
from augclip_demo.hatie import HatieResult
from augclip_demo.hatie import criteria as H
from augclip_demo.instructions import EditType


def _result() -> HatieResult:
    options = H.HatieOptions()
    bc = H.background_consistency("replace", {"plain": H.Similarities(1.0, 1.0, 1.0, 1.0)}, options)
    of = H.object_fidelity("replace", options, target=H.ObjectEvidence(True, 0.5, 0.6))
    scores = H.combine("replace", {"background_consistency": bc, "object_fidelity": of}, options)
    mask = np.zeros((8, 8), dtype=bool)
    mask[2:4, 2:4] = True
    white = Image.new("RGB", (8, 8), "white")
    return HatieResult(EditType("replace", "given", "given", "chosen"), scores, masks={"object (source)": mask},
                       edit_name="e1", source_image=white, edit_image=white)


def test_bars_rows_and_masks() -> None:
    result = _result()
    bars = dict((label, (value, why)) for label, value, why in criterion_bars(result))
    assert bars["Image Quality"] == (None, "needs a set")
    assert bars["Background Consistency"][0] == 1.0
    assert bars["Background Fidelity"][0] is None
    rows = component_rows(result)
    top = "(criterion, in the total)"
    of_rows = [r for r in rows if r["criterion"] == "Object Fidelity" and r["component"] != top]
    assert abs(sum(r["weight"] for r in of_rows) - 1.0) < 1e-12
    # VQA off: CLIP 0.01 and detector 0.92 renormalised; shares = value x weight / their sum
    clip, det = 0.01 / 0.93 * 0.6, 0.92 / 0.93 * 0.5
    shares = {r["component"]: r["share"] for r in of_rows}
    assert abs(shares["clip_object"] - clip / (clip + det)) < 1e-12
    assert abs(shares["detector_confidence"] - det / (clip + det)) < 1e-12
    # the criterion rows: weight in the edit's total (OF 0.2 and BC 0.3 renormalised) and share of it
    crit = {r["criterion"]: r for r in rows if r["component"] == top}
    of, bc = clip + det, 1.0
    assert abs(crit["Object Fidelity"]["weight in criterion"] - 0.2 / 0.5) < 1e-12
    assert abs(crit["Background Consistency"]["share"] - 0.3 * bc / (0.2 * of + 0.3 * bc)) < 1e-12
    assert share_figure(result).axes and share_lines(result)[0].startswith("Object Fidelity")
    (image, caption), = mask_views(result)
    pixels = np.asarray(image)
    assert caption == "e1: object (source)" and tuple(pixels[0, 0]) == (255, 255, 255)
    assert tuple(pixels[2, 2]) != (255, 255, 255)
    assert hatie_figure(result).axes
