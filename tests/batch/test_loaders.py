"""Benchmark layouts -> manifests (TEdBench, MagicBrush, CSV) and ground-truth-test triplets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.loaders import load_csv_pairs, load_magicbrush, load_tedbench
from augclip_demo.batch.manifest import load_manifest
from augclip_demo.batch.triplets import build_triplets, excessively_preserved, safe_filename
from augclip_demo.cli import main
from augclip_demo.errors import InputError, ManifestError
from tests.support import draw_scene


def save(path: Path, color: str = "white") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    draw_scene((64, 64), color, [("ellipse", (10, 10, 40, 40), "red")]).save(path)
    return path


@pytest.fixture()
def tedbench(tmp_path: Path) -> Path:
    root = tmp_path / "tedbench"
    (root / "input_list.json").parent.mkdir(parents=True)
    (root / "input_list.json").write_text(json.dumps([
        {"img_name": "cat.jpeg", "target_text": "A photo of a cat wearing a hat."},
        {"img_name": "cat.jpeg", "target_text": "A photo of a tree. Taken in autumn."},
        {"img_name": "bird.png", "target_text": "A bird looking backwards."},
        {"img_name": "missing.png", "target_text": "Nothing."},
    ]))
    for name in ("cat.jpeg", "bird.png"):
        save(root / "originals" / name)
    # Imagic's release: underscores and no final period; another method keeps spaces
    save(root / "imagic" / "cat.jpeg-A_photo_of_a_cat_wearing_a_hat.png", "green")
    save(root / "imagic" / "cat.jpeg-A_photo_of_a_tree._Taken_in_autumn.png", "orange")
    save(root / "imagic" / "bird.png-A_bird_looking_backwards.png", "blue")
    save(root / "sdedit" / "cat.jpeg-A photo of a cat wearing a hat.png", "grey")
    save(root / "sdedit" / "dog.png-Unrelated.png", "grey")
    return root


def test_tedbench_layout(tedbench):
    result = load_tedbench(tedbench, gt_method="imagic")
    items = load_manifest(result.manifest)
    assert result.manifest == tedbench / "manifest.jsonl" and result.n_items == 3 and result.n_edits == 4
    assert [i.id for i in items] == ["cat-a_photo_of_a_cat_wearing_a_hat", "cat-a_photo_of_a_tree_taken_in_autumn",
                                     "bird-a_bird_looking_backwards"]
    first = items[0]
    assert first.source == "originals/cat.jpeg" and first.target_text == "A photo of a cat wearing a hat."
    assert [(e.name, e.role, e.path) for e in first.edits] == [
        ("imagic", "gt", "imagic/cat.jpeg-A_photo_of_a_cat_wearing_a_hat.png"),
        ("sdedit", "candidate", "sdedit/cat.jpeg-A photo of a cat wearing a hat.png")]
    assert first.dataset == "tedbench"
    warnings = "\n".join(result.warnings)
    assert "dog.png-Unrelated.png: matches no original" in warnings and "missing.png not found" in warnings
    assert "sdedit: no output for bird.png" in warnings
    only = load_tedbench(tedbench, tedbench / "imagic-only.jsonl", methods=["imagic"])
    assert only.n_edits == 3
    with pytest.raises(InputError, match="not one of the method folders"):
        load_tedbench(tedbench, gt_method="nope")
    with pytest.raises(InputError, match="outside the manifest's folder"):
        load_tedbench(tedbench, tedbench / "imagic" / "m.jsonl")  # the originals would be outside


@pytest.fixture()
def magicbrush(tmp_path: Path) -> Path:
    root = tmp_path / "magicbrush" / "test"
    for name in ("139-input.png", "139-output1.png", "139-output2.png", "139-mask1.png", "30-input.png",
                 "30-output1.png"):
        save(root / "images" / name.split("-")[0] / name)
    (root / "edit_sessions.json").write_text(json.dumps({
        "139": [{"input": "139-input.png", "mask": "139-mask1.png", "output": "139-output1.png",
                 "instruction": "put a hat on the dog"},
                {"input": "139-output1.png", "mask": "139-mask2.png", "output": "139-output2.png",
                 "instruction": "make the hat red"}],
        "30": [{"input": "30-input.png", "mask": "30-mask1.png", "output": "30-output1.png",
                "instruction": "add snow"}],
    }))
    (root / "global_descriptions.json").write_text(json.dumps({
        "139": {"139-input.png": "a dog on grass", "139-output1.png": "a dog wearing a hat on grass",
                "139-output2.png": "a dog wearing a red hat on grass"}}))
    method = root / "results" / "ip2p"
    save(method / "139" / "139_1.png", "purple")
    save(method / "139" / "139_inde_2.png", "purple")
    return root


def test_magicbrush_layout(magicbrush):
    result = load_magicbrush(magicbrush, method_dir=magicbrush / "results" / "ip2p")
    items = {i.id: i for i in load_manifest(result.manifest)}
    assert list(items) == ["139-t1", "139-t2", "30-t1"]
    t2 = items["139-t2"]
    assert t2.source == "images/139/139-output1.png" and t2.instruction == "make the hat red"
    assert t2.target_text == "a dog wearing a red hat on grass" and t2.source_text == "a dog wearing a hat on grass"
    assert [(e.name, e.role, e.path) for e in t2.edits] == [
        ("magicbrush", "gt", "images/139/139-output2.png"), ("ip2p", "candidate", "results/ip2p/139/139_inde_2.png")]
    assert items["30-t1"].target_text == "add snow" and items["30-t1"].source_text is None  # no caption: instruction
    assert any("ip2p: no" in w for w in result.warnings)
    first = load_magicbrush(magicbrush, magicbrush / "first.jsonl", first_turn_only=True)
    assert first.n_items == 2
    with pytest.raises(InputError, match="edit_sessions.json"):
        load_magicbrush(magicbrush / "images")


def test_magicbrush_json_split_gives_the_reference_metrics(magicbrush, tiny_encoder):
    """The annotated output is each turn's ground truth, so l1_gt / l2_gt are computed, and equal the mean
    absolute / squared difference of the method's output and the annotated output (same size: no resize)."""
    from augclip_demo.batch.results import iter_results
    from augclip_demo.batch.runner import BatchOptions, run_batch
    from augclip_demo.config import Settings

    result = load_magicbrush(magicbrush, method_dir=magicbrush / "results" / "ip2p")
    items = load_manifest(result.manifest)
    assert [i.ground_truth for i in items] == ["images/139/139-output1.png", "images/139/139-output2.png",
                                               "images/30/30-output1.png"]
    out = magicbrush / "results.jsonl"
    run_batch(result.manifest, out, options=BatchOptions(metrics="l1_gt,l2_gt"), encoder=tiny_encoder,
              settings=Settings.from_env(clip_model="random:tiny", device="cpu"))
    records = {r["id"]: r for r in iter_results(out)}
    for item in items:
        for spec, edit in zip(item.edits, records[item.id]["edits"]):
            diff = (np.asarray(Image.open(spec.resolved).convert("RGB"), float)
                    - np.asarray(Image.open(item.ground_truth_path).convert("RGB"), float)) / 255
            assert edit["metrics"]["l1_gt"] == pytest.approx(np.abs(diff).mean(), abs=1e-9)
            assert edit["metrics"]["l2_gt"] == pytest.approx((diff ** 2).mean(), abs=1e-9)
    assert records["139-t2"]["edits"][1]["metrics"]["l1_gt"] > 0.1  # the purple output is far from the truth


def test_csv_pairs(tmp_path):
    for name in ("s1.png", "s2.png", "a.png", "b.png", "c.png"):
        save(tmp_path / "pics" / name)
    (tmp_path / "attrs.json").write_text(json.dumps({"source_attributes": ["a"], "target_attributes": ["b"]}))
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_text(
        "id,source,edit,target_text,source_text,name,role,human_score,preferred,attributes\n"
        "one,pics/s1.png,pics/a.png,a red ball,a ball,modelA,,4,1,attrs.json\n"
        "one,pics/s1.png,pics/b.png,a red ball,a ball,modelB,,2,,attrs.json\n"
        "two,pics/s2.png,pics/c.png,a cat,,modelA,gt,,,\n")
    result = load_csv_pairs(csv_path, dataset="mine")
    items = load_manifest(result.manifest)
    assert result.manifest == tmp_path / "pairs.jsonl"
    one, two = items
    assert [e.name for e in one.edits] == ["modelA", "modelB"] and one.human.preferred == 0
    assert one.human.scores == (4.0, 2.0) and one.attributes.source == ["a"] and one.dataset == "mine"
    assert two.edits[0].role == "gt" and two.human is None and two.source_text is None
    bad = tmp_path / "bad.csv"
    bad.write_text("source,edit,target_text,colour\npics/s1.png,pics/a.png,x,red\n")
    with pytest.raises(InputError, match="unknown column"):
        load_csv_pairs(bad)
    bad.write_text("id,source,edit,target_text,preferred\n"
                   "x,pics/s1.png,pics/a.png,one,1\nx,pics/s2.png,pics/b.png,two,1\n")
    with pytest.raises(InputError, match="disagree on source.*more than one row marked preferred"):
        load_csv_pairs(bad)
    bad.write_text("source,edit,target_text\npics/s1.png,pics/nothing.png,x\n")
    with pytest.raises(ManifestError, match="file not found"):
        load_csv_pairs(bad)


def test_loader_cli(tedbench, capsys):
    assert main(["manifest", "tedbench", str(tedbench), "--gt-method", "imagic"]) == 0
    out = capsys.readouterr().out
    assert "3 item(s), 4 edited image(s)" in out and "warning:" in out


def test_tedbench_rerun_leaves_the_triplets_folders_out(tedbench, tmp_path_factory, capsys):
    """`triplets` writes <stem>_ep/ (and <stem>_em/) beside the manifest; rerunning the loader on the same folder
    takes them for no method, says so in a note, and warns about nothing more than the first run did."""
    first = load_tedbench(tedbench, gt_method="imagic")
    ids = [i.id for i in load_manifest(first.manifest)]
    em_dir = tmp_path_factory.mktemp("generated")  # outside the dataset: copied into manifest-triplets_em/
    for item_id in ids:
        save(em_dir / f"{item_id}.png", "black")
    build_triplets(first.manifest, em_dir=em_dir)
    assert (tedbench / "manifest-triplets_ep").is_dir() and (tedbench / "manifest-triplets_em").is_dir()
    again = load_tedbench(tedbench, gt_method="imagic")
    assert again.warnings == first.warnings and again.n_edits == first.n_edits == 4
    assert {e.name for i in load_manifest(again.manifest) for e in i.edits} == {"imagic", "sdedit"}
    assert again.notes == ["not method folders: manifest-triplets_em, manifest-triplets_ep (the `triplets` "
                           "command's ep / em images; --methods NAME ... includes a folder by name)"]
    assert main(["manifest", "tedbench", str(tedbench), "--gt-method", "imagic"]) == 0
    printed = capsys.readouterr().out
    assert "note: not method folders" in printed and "warning: not method" not in printed
    assert "manifest-triplets_ep/" not in printed  # no warning line per ep image


# ---------------------------------------------------------------------------------------------- triplets
def test_excessively_preserved_noise_is_small_reproducible_and_per_item():
    source = Image.fromarray(np.full((64, 64, 3), 128, dtype=np.uint8))
    a = excessively_preserved(source, sigma=0.02, seed=0, item_id="x")
    diff = (np.asarray(a, float) - 128) / 255
    assert abs(diff.std() - 0.02) < 0.002 and abs(diff.mean()) < 0.002  # N(0, 0.02^2) after 8-bit rounding
    assert np.array_equal(np.asarray(a), np.asarray(excessively_preserved(source, 0.02, 0, "x")))
    assert not np.array_equal(np.asarray(a), np.asarray(excessively_preserved(source, 0.02, 1, "x")))
    assert not np.array_equal(np.asarray(a), np.asarray(excessively_preserved(source, 0.02, 0, "y")))
    assert np.array_equal(np.asarray(excessively_preserved(source, 0.0)), np.asarray(source))


def test_build_triplets(tedbench, tmp_path_factory, tiny_encoder):
    manifest = load_tedbench(tedbench, gt_method="imagic").manifest
    ids = [i.id for i in load_manifest(manifest)]
    em_dir = tmp_path_factory.mktemp("generated")  # outside the dataset: copied in
    save(em_dir / f"{ids[0]}.png", "black")
    save(em_dir / f"{ids[1]}.jpg", "black")
    with pytest.raises(InputError, match=f"1 item\\(s\\) have no excessively modified \\(em\\) image: '{ids[2]}'"):
        build_triplets(manifest, em_dir=em_dir)
    result = build_triplets(manifest, em_dir=em_dir, sigma=0.03, seed=5, skip_missing=True)
    assert result.n_items == 2 and len(result.skipped) == 1
    items = load_manifest(result.manifest)
    assert [[e.role for e in i.edits] for i in items] == [["gt", "ep", "em"]] * 2
    first = items[0]
    assert first.edits[1].path == f"manifest-triplets_ep/{safe_filename(ids[0])}.png"
    assert first.edits[2].path == f"manifest-triplets_em/{safe_filename(ids[0])}.png"
    source = np.asarray(Image.open(tedbench / "originals" / "cat.jpeg").convert("RGB"), float)
    ep = np.asarray(Image.open(first.edits[1].resolved), float)
    assert 0.02 < ((ep - source) / 255).std() < 0.04
    assert first.meta["triplet"] == {"sigma": 0.03, "seed": 5, "source_manifest": str(manifest)}
    # the CLI builds the same files
    assert main(["triplets", str(manifest), "--em-dir", str(em_dir), "--skip-missing", "--sigma", "0.03", "--seed",
                 "5", "--out", str(tedbench / "cli.jsonl")]) == 0
    assert (tedbench / "cli_ep" / f"{safe_filename(ids[0])}.png").read_bytes() == first.edits[1].resolved.read_bytes()
    # and the triplets run through batch into the ground truth test
    from augclip_demo.batch.protocol_tables import compute_protocols
    from augclip_demo.batch.runner import BatchOptions, run_batch
    from augclip_demo.config import Settings

    out = tedbench / "triplet-results.jsonl"
    run_batch(result.manifest, out, options=BatchOptions(metrics="clip_i,l2"), encoder=tiny_encoder,
              settings=Settings.from_env(clip_model="random:tiny", device="cpu"))
    report = compute_protocols(out, n_boot=20)
    l2 = report.datasets["tedbench"].metrics["l2"]
    assert l2.acc_both.n == 2 and l2.wins["ep"].value == 1.0  # the noisy copy is always closest in pixels
