"""HATIE in batch runs (the regions stage) and its per-model table, calibration and CLI, with the tiny
random CLIP, GroundingDINO and SAM. Batch values are checked against hatie_score_many run directly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, BatchRunner
from augclip_demo.bpm.models import get_bpm_models
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.hatie import HatieModels, hatie_score_many
from augclip_demo.hatie.criteria import NEEDS_A_SET, edit_total, total_weights
from augclip_demo.hatie.tables import calibrated_sets, hatie_edits, hatie_table, resolve_weights
from tests.support import TINY, draw_scene

pytestmark = pytest.mark.slow  # builds the tiny GroundingDINO and SAM

SCENES = {
    "src.png": [("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")],
    "blue.png": [("ellipse", (20, 20, 60, 60), "blue"), ("rectangle", (70, 40, 110, 80), "green")],
    "left.png": [("ellipse", (0, 20, 40, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")],
    "gray.png": [("ellipse", (20, 20, 60, 60), "gray"), ("rectangle", (70, 40, 110, 80), "gray")],
}


def _edits(a: str, b: str) -> list[dict]:
    return [{"path": f"img/{a}", "name": "model-a"}, {"path": f"img/{b}", "name": "model-b"}]


ITEMS = [
    {"id": "recolor", "source": "img/src.png", "target_text": "a blue ball", "instruction": "make the ball blue",
     "edits": _edits("blue.png", "left.png"), "human": {"scores": [4.0, 1.0]}},
    {"id": "style", "source": "img/left.png", "target_text": "a gray scale photo",
     "instruction": "convert the photo to gray scale", "edits": _edits("gray.png", "src.png"),
     "human": {"scores": [5.0, 2.0]}},
    {"id": "given", "source": "img/src.png", "target_text": "a blue ball", "instruction": "make the ball blue",
     "edit_type": "Object Replacement", "edits": _edits("left.png", "blue.png"), "human": {"preferred": 1}},
    {"id": "moved", "source": "img/src.png", "target_text": "a ball on the left",
     "instruction": "move the ball to the left", "edits": _edits("left.png", "blue.png"),
     "human": {"scores": [3.0, 2.5]}},
]
METRICS = "clip_i,hatie,hatie_of,hatie_bf,hatie_oc,hatie_bc,hatie_iq"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")


@pytest.fixture(scope="module")
def run(tmp_path_factory, settings, tiny_encoder):
    root = tmp_path_factory.mktemp("hatie-batch")
    (root / "img").mkdir()
    for name, shapes in SCENES.items():
        draw_scene((120, 90), shapes=shapes).save(root / "img" / name)
    (root / "manifest.jsonl").write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    out = root / "results.jsonl"
    summary = BatchRunner(root / "manifest.jsonl", out, options=BatchOptions(metrics=METRICS, hatie_features=None),
                          settings=settings,
                          encoder=tiny_encoder, show_progress=False).run()
    return root, out, summary, {r["id"]: r for r in iter_results(out)}


def test_batch_values_equal_direct_hatie(run, settings, tiny_encoder):
    root, _, summary, records = run
    assert (summary.n_ok, summary.n_failed) == (4, 0)
    bpm = get_bpm_models(settings, encoder=tiny_encoder)
    models = HatieModels(bpm.detector, bpm.segmenter, bpm.encoder)
    for item in ITEMS[:3]:
        direct = hatie_score_many(root / item["source"], [root / e["path"] for e in item["edits"]],
                                  item["instruction"], models, edit_type=item.get("edit_type"),
                                  target_text=item["target_text"])
        for edit, want in zip(records[item["id"]]["edits"], direct):
            for key, criterion in (("hatie_of", "object_fidelity"), ("hatie_bf", "background_fidelity"),
                                   ("hatie_oc", "object_consistency"), ("hatie_bc", "background_consistency")):
                got, expected = edit["metrics"][key], want.value(criterion)
                assert (got is None) == (expected is None), (item["id"], key)
                if got is not None:
                    assert got == pytest.approx(expected, abs=1e-9)
            assert edit["metrics"]["hatie"] == pytest.approx(want.scores.total, abs=1e-9)
            assert edit["metrics"]["hatie_iq"] is None and edit["unavailable"]["hatie_iq"] == NEEDS_A_SET
            assert edit["hatie"]["untrained"] is True
    assert records["style"]["edits"][0]["hatie"]["edit_type"]["edit_type"] == "style"
    assert records["given"]["edits"][0]["hatie"]["edit_type"]["confidence"] == "given"
    assert records["recolor"]["edits"][0]["unavailable"]["hatie_bf"] == ("HATIE does not score Background "
                                                                          "Fidelity for attribute edits (App. C.1)")
    moved = records["moved"]["edits"][0]
    assert moved["metrics"]["hatie"] is None and "not a HATIE edit type" in moved["unavailable"]["hatie"]


def test_per_model_table_and_correlations(run):
    _, out, _, _ = run
    edits = hatie_edits(iter_results(out), out)
    table = hatie_table(edits)
    assert [r.model for r in table.rows] and {r.model for r in table.rows} == {"model-a", "model-b"}
    w = total_weights("published")
    for row in table.rows:
        mine = [e for e in edits if e.model == row.model]
        for criterion, mean in row.means.items():
            values = [e.criteria[criterion] for e in mine if e.criteria[criterion] is not None]
            assert mean == (pytest.approx(float(np.mean(values))) if values else None)
        inner = sum(w[c] * row.means[c] for c in w if row.means[c] is not None)
        assert row.total == pytest.approx(inner / sum(w[c] for c in w if row.means[c] is not None))
    totals = [r.total for r in table.rows]
    assert totals == sorted(totals, reverse=True)
    rated = [e for e in edits if e.rating is not None]
    assert table.correlations["hatie"]["n"] == len([e for e in rated if edit_total(e.criteria, w) is not None])
    assert "Image Quality not computed" in table.format()


def test_calibrate_saves_weights_used_by_name(run, settings):
    _, out, _, _ = run
    assert main(["hatie", "calibrate", str(out), "--name", "mine", "--step", "0.1", "--folds", "2"]) == 0
    saved = calibrated_sets(settings)
    assert set(saved["mine"]) == {"object_fidelity", "background_fidelity", "object_consistency",
                                  "background_consistency"}
    assert sum(saved["mine"].values()) == pytest.approx(1.0)
    assert resolve_weights("mine", Settings.from_env()) == saved["mine"]  # the library reads no environment itself
    edits = hatie_edits(iter_results(out), out)
    assert hatie_table(edits, weights="mine", settings=Settings.from_env()).weight_name == "mine"
    assert main(["hatie", "table", str(out), "--weights", "nope"]) == 2
    assert main(["hatie", "calibrate", str(out), "--name", "../escape"]) == 2


def test_table_with_image_quality_from_fid(run):
    root, out, _, _ = run
    json_path = root / "table.json"
    assert main(["hatie", "table", str(out), "--manifest", str(root / "manifest.jsonl"),
                 "--hatie-fid", "random:inception-v3-compat", "--json", str(json_path)]) == 0
    data = json.loads(json_path.read_text())
    for row in data["models"]:
        assert row["fid"] is not None and 0.0 <= row["image_quality"] <= 1.0
        assert row["image_quality_se"] is not None and row["total_se"] is not None
    assert any("untrained" in note for note in data["notes"])


def test_cli_batch_takes_hatie_options(run, tmp_path):
    root, _, _, _ = run
    out = tmp_path / "cli.jsonl"
    code = main(["batch", str(root / "manifest.jsonl"), "--out", str(out), "--metrics", "hatie_bc",
                 "--clip-model", TINY, "--gdino-model", "random:tiny", "--sam-model", "random:tiny", "--device", "cpu",
                 "--hatie-dino", "random:tiny-v2", "--hatie-lpips", "random:alex", "--hatie-clip", "random:tiny",
                 "--hatie-bc", "paper",
                 "--no-progress"])
    assert code == 0
    record = next(r for r in iter_results(out) if r["id"] == "recolor")
    bc = record["edits"][0]["hatie"]["criteria"]["background_consistency"]
    names = {c["name"] for c in bc["components"]}
    assert {"lpips", "dino", "l2"} <= names and "clip" not in names
    assert record["run"]["bpm"]["hatie"]["options"]["bc_clip"] is False


def test_protocol_report_treats_hatie_columns_as_metrics(run):
    from augclip_demo.batch.protocol_tables import compute_protocols

    _, out, _, _ = run
    report = compute_protocols(out, n_boot=0)
    assert {"hatie", "hatie_of", "hatie_bc", "hatie_iq"} <= set(report.metrics)
    assert "HATIE" in report.format(with_ci=False)


def _fid_by_gram(a: np.ndarray, b: np.ndarray) -> float:
    """FID from two feature sets without a matrix square root: with S1 = A A^T and S2 = B B^T (centred rows
    over sqrt(n - 1)), tr sqrt(S1 S2) is the sum of the singular values of A^T B."""
    ca, cb = (a - a.mean(0)) / np.sqrt(len(a) - 1), (b - b.mean(0)) / np.sqrt(len(b) - 1)
    cross = np.linalg.svd(ca @ cb.T, compute_uv=False).sum()
    return float(((a.mean(0) - b.mean(0)) ** 2).sum() + (ca ** 2).sum() + (cb ** 2).sum() - 2 * cross)


def test_protocol_report_has_hatie_image_quality_and_totals(run, settings, tmp_path):
    from PIL import Image

    from augclip_demo.batch.protocol_tables import compute_protocols
    from augclip_demo.hatie.criteria import CRITERIA, PUBLISHED_TOTAL
    from augclip_demo.inference.fid import get_fid_network

    root, out, _, records = run
    report = compute_protocols(out, n_boot=0, manifests=[root / "manifest.jsonl"],
                               hatie_fid="random:inception-v3-compat", settings=settings)
    table = report.hatie[str(out)]
    network = get_fid_network("random:inception-v3-compat", settings)
    assert network.untrained and any("untrained" in note for note in table.notes)
    for row in table.rows:
        # the sources once each (the published code's folder of originals), the edits all
        pairs = [(r["source"], e) for r in records.values() for e in r["edits"]
                 if e["name"] == row.model and isinstance(e.get("hatie"), dict)]
        feats = [network.features([Image.open(root / p).convert("RGB") for p in paths])
                 for paths in (list(dict.fromkeys(s for s, _ in pairs)), [e["path"] for _, e in pairs])]
        fid = _fid_by_gram(*feats)
        assert row.fid == pytest.approx(fid, rel=1e-6, abs=1e-6)
        assert row.iq == pytest.approx(1.0 - np.tanh(fid / 25.0), abs=1e-9)
        crits = [e["hatie"].get("criteria") or {} for _, e in pairs]
        means = {c: [k[c]["value"] for k in crits if (k.get(c) or {}).get("value") is not None] for c in CRITERIA}
        present = {c: float(np.mean(v)) for c, v in means.items() if v}
        inner = sum(present[c] * PUBLISHED_TOTAL[c] for c in present) / sum(PUBLISHED_TOTAL[c] for c in present)
        assert row.total == pytest.approx(0.8 * inner + 0.2 * row.iq, abs=1e-9)
    text = report.format(with_ci=False)
    assert "HATIE per model" in text and f"{table.rows[0].iq:.4f}" in text
    # the CLI: the same figures in the saved JSON, and `hatie table --manifest` agrees
    json_path, table_path = tmp_path / "p.json", tmp_path / "t.json"
    assert main(["protocol", str(out), "--manifest", str(root / "manifest.jsonl"), "--hatie-fid",
                 "random:inception-v3-compat", "--bootstrap", "0", "--json", str(json_path),
                 "--csv", str(tmp_path / "p.csv")]) == 0
    assert main(["hatie", "table", str(out), "--manifest", str(root / "manifest.jsonl"),
                 "--hatie-fid", "random:inception-v3-compat", "--json", str(table_path)]) == 0
    saved = json.loads(json_path.read_text())["hatie"]["tables"][str(out)]["models"]
    # the whole table, IQ's resampled error and the total's error with it included
    assert saved == json.loads(table_path.read_text())["models"]
    assert all(m["image_quality_se"] is not None and m["total_se"] is not None for m in saved)
    assert {m["model"]: m["image_quality"] for m in saved} == {r.model: r.iq for r in table.rows}


def test_protocol_report_without_manifest_says_what_iq_needs(run, capsys):
    from augclip_demo.batch.protocol_tables import HATIE_IQ_NEEDS, compute_protocols

    _, out, _, _ = run
    report = compute_protocols(out, n_boot=0)
    assert report.hatie_notes == [HATIE_IQ_NEEDS] and "--manifest" in HATIE_IQ_NEEDS
    assert all(row.iq is None and row.fid is None for row in report.hatie[str(out)].rows)
    assert f"note: {HATIE_IQ_NEEDS}" in report.format(with_ci=False)
    assert report.to_dict()["hatie"]["notes"] == [HATIE_IQ_NEEDS]
    with pytest.raises(Exception, match="one --manifest"):
        compute_protocols([out], n_boot=0, manifests=["a.jsonl", "b.jsonl"])


def test_protocol_report_correlates_each_hatie_criterion_with_humans(run):
    from scipy import stats

    from augclip_demo.batch.protocol_tables import compute_protocols

    _, out, _, records = run
    report = compute_protocols(out, n_boot=0)
    ds = next(iter(report.datasets.values()))
    checked = 0
    for key in ("hatie", "hatie_of", "hatie_bf", "hatie_oc", "hatie_bc"):
        pairs = [(e["metrics"][key], h) for r in records.values() if "scores" in r.get("human", {})
                 for e, h in zip(r["edits"], r["human"]["scores"]) if e["metrics"].get(key) is not None]
        mp = ds.metrics[key]
        if len(pairs) < 3 or len({x for x, _ in pairs}) < 2:
            continue
        x, y = np.array(pairs).T
        assert mp.pearson.value == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-9)
        assert mp.spearman.value == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-9)
        assert mp.pearson.n == len(pairs)
        checked += 1
    assert checked >= 2
    text = report.format(with_ci=False)
    assert "Correlation with human scores, Pearson r" in text and "HATIE OF" in text


@pytest.mark.parametrize("clip", ["random:tiny", ""])
def test_hatie_networks_sent_to_another_process_keep_their_clip(clip, tmp_path):
    """A Ray actor rebuilds HATIE's networks from their specs: HATIE's own CLIP (or "" = the run's) survives."""
    import pickle

    from augclip_demo.batch.item_steps import HatieFeatureSpecs
    from augclip_demo.hatie.networks import HatieFeatures

    settings = Settings.from_env({}, clip_model=TINY, device="cpu", cache_dir=tmp_path, hatie_clip="ViT-B-32/openai")
    sent = pickle.loads(pickle.dumps(HatieFeatureSpecs.of(
        HatieFeatures(settings, dino="random:tiny-v2", lpips="random:alex", clip=clip))))
    rebuilt = sent.build(settings)
    assert rebuilt.clip_spec == clip and (rebuilt.clip_network is None) == (clip == "")
