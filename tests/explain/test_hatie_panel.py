"""HATIE's panel pieces on a hand-made result: bars (IQ needs a set), component rows, mask overlays."""

from __future__ import annotations

import numpy as np
from PIL import Image

from augclip_demo.explain.hatie_panel import component_rows, criterion_bars, hatie_figure, mask_views
from augclip_demo.hatie import HatieResult
from augclip_demo.instructions import EditType
from augclip_demo.metrics import hatie as H


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
    of_rows = [r for r in rows if r["criterion"] == "Object Fidelity" and r["component"] != "(criterion)"]
    assert sum(r["weight"] for r in of_rows) == 1.0 or abs(sum(r["weight"] for r in of_rows) - 1.0) < 1e-12
    (image, caption), = mask_views(result)
    pixels = np.asarray(image)
    assert caption == "e1: object (source)" and tuple(pixels[0, 0]) == (255, 255, 255)
    assert tuple(pixels[2, 2]) != (255, 255, 255)
    assert hatie_figure(result).axes
