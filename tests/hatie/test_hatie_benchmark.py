"""HATIE's own benchmark layout (query pickle, original images, mask pickle, PREFIX_{query id} outputs) into a
manifest, scored with the benchmark's source masks, and the per-model / per-type table of the published code."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from augclip_demo.batch.benchmarks.hatie_bench import load_benchmark_pickle
from augclip_demo.batch.results import iter_results
from augclip_demo.cli import main
from augclip_demo.errors import InputError
from tests.support import TINY, draw_scene

pytestmark = pytest.mark.slow  # builds the tiny GroundingDINO and SAM

SIZE = (512, 512)
BALL, BOX = (60, 200, 180, 320), (300, 220, 420, 340)  # x0, y0, x1, y1


def _mask(box: tuple[int, int, int, int]) -> np.ndarray:
    m = np.zeros((SIZE[1], SIZE[0]), dtype=bool)
    x0, y0, x1, y1 = box
    m[y0:y1, x0:x1] = True
    return m


def _layout(root: Path) -> dict[str, Path]:
    """The benchmark's files for one original image with four queries and two models' outputs."""
    (root / "originals").mkdir()
    draw_scene(SIZE, shapes=[("ellipse", BALL, "red"), ("rectangle", BOX, "green")]).save(root / "originals" / "2370.jpg")
    queries = {"2370": [
        {"type": "attr_chg", "id": 11, "target": [7, "sports ball"], "after": "blue",
         "original_caption": "a red ball and a green box", "target_caption": "a blue ball and a green box",
         "instruction": "change the color of the sports ball to blue"},
        {"type": "obj_remove", "id": 12, "target": [8, "suitcase"], "original_caption": "a ball and a box",
         "target_caption": "a ball", "instruction": "remove the suitcase"},
        {"type": "style_chg", "id": 13, "target": "watercolor painting", "original_caption": "a ball and a box",
         "target_caption": "a watercolor painting of a ball and a box", "instruction": "make it a watercolor painting"},
        {"type": "bg_chg", "id": 14, "target": "beach", "editable_objs": ["sports ball", "suitcase"],
         "original_caption": "a ball and a box", "target_caption": "a ball and a box on a beach",
         "instruction": "change the background to a beach"},
    ]}
    with open(root / "queries_w_remove.pkl", "wb") as f:
        pickle.dump(queries, f)
    masks = [{"image": "2370", "editable_objs": {
        7: {"mask": _mask(BALL), "bbox": list(BALL)}, 8: {"mask": _mask(BOX), "bbox": list(BOX)}}}]
    with open(root / "editable_objs_mask.pkl", "wb") as f:
        pickle.dump(masks, f)
    for model, colour in (("alpha", "blue"), ("beta", "purple")):
        (root / model).mkdir()
        for qid in (11, 12, 13, 14):
            shapes = [("ellipse", BALL, colour)] + ([] if qid == 12 else [("rectangle", BOX, "green")])
            draw_scene(SIZE, shapes=shapes).save(root / model / f"{model}_{qid}.png")
    return {"queries": root / "queries_w_remove.pkl", "masks": root / "editable_objs_mask.pkl"}


@pytest.fixture(scope="module")
def scored(tmp_path_factory, tiny_encoder):
    from augclip_demo.batch.options import BatchOptions
    from augclip_demo.batch.runner import BatchRunner
    from augclip_demo.config import Settings

    root = tmp_path_factory.mktemp("hatie-bench")
    files = _layout(root)
    manifest = root / "manifest.jsonl"  # in the folder that holds the originals and the outputs
    assert main(["manifest", "hatie", str(files["queries"]), "--originals", str(root / "originals"), "--masks",
                 str(files["masks"]), "--outputs", f"alpha={root / 'alpha'}:alpha", f"beta={root / 'beta'}:beta",
                 "--out", str(manifest)]) == 0
    settings = Settings.from_env(clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")
    out = root / "results.jsonl"
    BatchRunner(manifest, out, options=BatchOptions(metrics="hatie,hatie_of,hatie_bf,hatie_oc,hatie_bc",
                                                    hatie_features=None),
                settings=settings, encoder=tiny_encoder, show_progress=False).run()
    return root, manifest, out


def test_manifest_carries_each_query_and_the_benchmarks_masks(scored):
    root, manifest, _ = scored
    items = {json.loads(line)["id"]: json.loads(line) for line in manifest.read_text().splitlines()}
    assert set(items) == {"q11", "q12", "q13", "q14"}
    attr = items["q11"]
    assert attr["edit_type"] == "attribute" and attr["instruction"] == "change the color of the sports ball to blue"
    assert attr["target_text"] == "a blue ball and a green box" and attr["source_text"] == "a red ball and a green box"
    assert [e["name"] for e in attr["edits"]] == ["alpha", "beta"]
    hatie = attr["meta"]["hatie"]
    assert hatie["target"] == "sports ball" and hatie["after"] == "blue" and hatie["query_id"] == "11"
    from PIL import Image

    written = np.asarray(Image.open(manifest.parent / hatie["masks"]["sports ball"])) > 127
    assert np.array_equal(written, _mask(BALL))
    bg = items["q14"]["meta"]["hatie"]
    assert bg["foreground"] == ["sports ball", "suitcase"] and set(bg["masks"]) == {"sports ball", "suitcase"}
    assert items["q13"]["meta"]["hatie"]["target_text"] == "watercolor painting"


def test_scoring_uses_the_benchmarks_source_masks(scored):
    _, _, out = scored
    records = {r["id"]: r for r in iter_results(out)}
    for edit in records["q11"]["edits"]:
        det = edit["hatie"]["detections"]["object (source)"]
        x0, y0, x1, y1 = BALL
        assert det == {"found": True, "score": 1.0, "box": [x0, y0, x1, y1]}  # the benchmark's mask, not a detection
    style = records["q13"]["edits"][0]["hatie"]
    assert style["texts"]["style"] == "watercolor painting"
    names = {c["name"] for c in style["criteria"]["background_consistency"]["components"]}
    assert {"l2.edges", "l2.degradation", "l2.downscaled", "clip.edges"} <= names
    assert records["q14"]["edits"][0]["hatie"]["texts"]["background"] == "beach"


def test_table_per_model_and_per_type_in_the_published_aggregation(scored, capsys):
    _, _, out = scored
    json_path = out.parent / "table.json"
    assert main(["hatie", "table", str(out), "--json", str(json_path)]) == 0
    printed = capsys.readouterr().out
    assert "HATIE total per edit type" in printed
    data = json.loads(json_path.read_text())
    records = list(iter_results(out))
    weights = {"object_fidelity": 0.4, "background_fidelity": 0.2, "object_consistency": 0.1,
               "background_consistency": 0.3}  # the published per-type table's weights
    for row in data["models"]:
        edits = [(r["edits"][i]["hatie"]) for r in records for i, e in enumerate(r["edits"]) if e["name"] == row["model"]]
        for t, type_row in row["types"].items():
            mine = [h for h in edits if h["edit_type"]["edit_type"] == t]
            means = {}
            for c in weights:
                values = [h["criteria"][c]["value"] for h in mine if c in h["criteria"]
                          and h["criteria"][c]["value"] is not None]
                if values:
                    means[c] = float(np.mean(values))
            expected = sum(means[c] * weights[c] for c in means) / sum(weights[c] for c in means)
            assert type_row["total"] == pytest.approx(expected, abs=1e-12)
        assert set(row["types"]) == {"attribute", "remove", "style", "background"}


def test_bootstrap_error_is_the_standard_error_of_the_mean():
    from augclip_demo.hatie.tables import bootstrap_se

    values = list(np.random.default_rng(7).random(40))
    se = bootstrap_se(values, np.random.default_rng(0))
    analytic = np.std(values, ddof=0) / math.sqrt(len(values))  # the bootstrap's own limit
    assert se == pytest.approx(analytic, rel=0.05)


def test_restricted_unpickler_refuses_anything_but_plain_values_and_arrays(tmp_path):
    fine = tmp_path / "fine.pkl"
    with open(fine, "wb") as f:
        pickle.dump({"a": [1, 2.5, "x", None, (True,)], "m": np.zeros((2, 3), bool), "n": np.int64(4)}, f)
    loaded = load_benchmark_pickle(fine, "query file")
    assert loaded["m"].shape == (2, 3) and loaded["n"] == 4

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    bad = tmp_path / "bad.pkl"
    bad.write_bytes(pickle.dumps({"q": Payload()}))
    with pytest.raises(InputError, match="refused to load pathlib"):
        load_benchmark_pickle(bad, "query file")
    assert not marker.exists()
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    with pytest.raises(InputError, match="not a readable pickle"):
        load_benchmark_pickle(tmp_path / "junk.pkl", "mask file")
