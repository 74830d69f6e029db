"""BPM and HATIE with the shapes world's own masks (``object_masks``), with random CLIP weights.

With random weights no semantic measure means anything, so these tests assert only what the construction and
the measures' definitions force: the over-edit is the correct edit plus changes of the background and of
another object, so wherever those changes fall outside BPM's regions, S_preserve (1 - RMSE of the pixels
outside the regions) must be lower for it, while the region rules, which see only the edited object's masks
(the same in both edits), must tie. HATIE's Background Consistency compares the images with the edited objects
hidden, so the over-edit's changed background must lower it; for a background change, Object Consistency
compares the objects the over-edit recoloured. The values must be the same through the batch runner, Python and
the ``bpm`` command.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.manifest import load_manifest
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.bpm import BPMOptions, bpm_score_many
from augclip_demo.bpm.models import BPMModels
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.inference.grounding import get_detector
from augclip_demo.inference.segmenter import get_segmenter
from augclip_demo.pipeline import load_object_masks
from augclip_demo.world.world_sets import write_world
from tests.support import TINY

# a 14-item world (two of each kind), BPM of 70 edits, HATIE of 60: several seconds on 2 shared cores
pytestmark = pytest.mark.slow

ITEMS, SEED = 14, 7


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return write_world(tmp_path_factory.mktemp("world"), ITEMS, seed=SEED)


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")


def _mask(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L")) >= 128


def _unload_region_models(settings: Settings) -> None:
    """The process-wide detector and segmenter unloaded, so a check after a run sees whether the run loaded them."""
    get_detector(settings).unload()
    get_segmenter(settings).unload()
    assert not get_detector(settings).is_loaded and not get_segmenter(settings).is_loaded


@pytest.fixture(scope="module")
def bpm_runs(world, settings, tiny_encoder):
    """BPM of every item through the batch runner and through Python, by item id and role."""
    out = world.parent / "bpm.jsonl"
    _unload_region_models(settings)  # another test in this process may have loaded them
    summary = run_batch(world, out, options=BatchOptions(metrics="l2,bpm", bpm=BPMOptions(regions="masks")),
                        settings=settings, encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed) == (ITEMS, 0)
    records = {r["id"]: {e["name"]: e for e in r["edits"]} for r in iter_results(out)}
    direct = {}
    models = BPMModels(None, None, tiny_encoder)
    for item in load_manifest(world):
        size = Image.open(item.source_path).size
        # some backgrounds ("night") make the rules parser refuse the instruction as a global edit
        if any(records[item.id][e.name]["metrics"]["bpm"] is None for e in item.edits):
            assert item.instruction.startswith("change the background to")
            assert all("refused" in records[item.id][e.name]["unavailable"]["bpm"] for e in item.edits)
            continue
        results = bpm_score_many(item.source_path, [e.resolved for e in item.edits], item.instruction,
                                 models=models, options=BPMOptions(regions="masks"),
                                 object_masks=load_object_masks(item.object_mask_paths, size, len(item.edits)),
                                 names=[e.name for e in item.edits])
        direct[item.id] = (item, {r.edit_name: r for r in results})
    return records, direct


def test_no_region_model_is_loaded_with_the_worlds_masks(bpm_runs, settings):
    assert not get_detector(settings).is_loaded and not get_segmenter(settings).is_loaded


def test_batch_and_python_give_the_same_bpm(bpm_runs):
    records, direct = bpm_runs
    for item_id, (_, results) in direct.items():
        for role, result in results.items():
            record = records[item_id][role]
            assert record["metrics"]["bpm"] == pytest.approx(result.bpm, abs=1e-9)
            for key in ("s_preserve", "s_modify", "s_size", "s_position"):
                assert record["bpm"][key] == pytest.approx(result.to_dict()[key], abs=1e-9), (item_id, role, key)
            assert record["bpm"]["region_source"] == "given masks"


def test_preservation_ranks_the_correct_edit_above_the_over_edit(bpm_runs, world):
    _, direct = bpm_runs
    outside = 0
    for item_id, (item, results) in direct.items():
        correct, over = results["correct"], results["over_edit"]
        roles = item.meta["world"]["roles"]
        changed = _mask(world.parent / item.meta["world"]["changed_masks"][roles.index("over_edit")])
        if not (changed & over.preserved_mask).any():
            continue  # the over-edit changed nothing outside BPM's regions: S_preserve cannot see it
        outside += 1
        assert correct.s_preserve > over.s_preserve, item_id
        # the region rules see only the edited object, whose masks the two edits share
        if np.array_equal(correct.edit.mask, over.edit.mask) and np.array_equal(correct.origin.mask, over.origin.mask):
            assert (correct.s_size, correct.s_position) == (over.s_size, over.s_position), item_id
    # every over-edit changes the background, which lies outside the edited object's regions
    assert outside == len(direct) >= ITEMS - 2


def test_the_bpm_command_gives_the_same_numbers(bpm_runs, world, capsys):
    _, direct = bpm_runs
    item, results = direct["recolour-0000"]
    paths = item.object_mask_paths
    flags = [f"{name}={path}" for name, path in paths["source"].items()]
    for number, named in enumerate(paths["edits"], start=1):
        flags += [f"{number}:{name}={path}" for name, path in (named or {}).items()]
    argv = ["bpm", "--source", str(item.source_path), "--edited", *[str(e.resolved) for e in item.edits],
            "--instruction", item.instruction, "--regions", "masks", "--clip-model", TINY, "--device", "cpu", "--json"]
    for flag in flags:
        argv += ["--object-mask", flag]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    for edit, spec in zip(payload["edits"], item.edits):
        want = results[spec.name]
        assert edit["bpm"] == pytest.approx(want.bpm, abs=1e-9) and edit["region_source"] == "given masks"
        assert edit["regions"]["origin"]["mask_area"] == int(want.origin.mask.sum())


def test_evaluate_gives_the_same_numbers(bpm_runs):
    from augclip_demo import Attributes, evaluate

    _, direct = bpm_runs
    item, results = direct["recolour-0000"]
    report = evaluate(item.source_path, [e.resolved for e in item.edits], item.target_text,
                      attributes=Attributes(item.attributes.source, item.attributes.target),
                      instruction=item.instruction, clip_model=TINY, device="cpu", bpm_regions="masks",
                      object_masks=item.object_mask_paths)
    for edit, spec in zip(report.edits, item.edits):
        assert edit.metrics["bpm"] == pytest.approx(results[spec.name].bpm, abs=1e-9)
        assert edit.bpm["region_source"] == "given masks"


def test_hatie_consistency_ranks_the_over_edit_below_the_correct_edit(world, settings, tiny_encoder):
    out = world.parent / "hatie.jsonl"
    _unload_region_models(settings)
    summary = run_batch(world, out, options=BatchOptions(metrics="hatie_bf,hatie_oc,hatie_bc", hatie_features=None),
                        settings=settings, encoder=tiny_encoder)
    assert summary.n_failed == 0
    assert not get_detector(settings).is_loaded and not get_segmenter(settings).is_loaded
    checked = {"hatie_bc": 0, "hatie_oc": 0}
    for record in iter_results(out):
        by_role = {e["name"]: e["metrics"] for e in record["edits"]}
        correct, over = by_role["correct"], by_role["over_edit"]
        kind = record["meta"]["world"]["kind"]
        if correct["hatie_bc"] is not None:
            checked["hatie_bc"] += 1
            assert correct["hatie_bc"] > over["hatie_bc"], record["id"]
        if kind == "background":  # the over-edit recoloured every object
            checked["hatie_oc"] += 1
            assert correct["hatie_oc"] > over["hatie_oc"], record["id"]
        for edit in record["edits"]:
            if kind != "move":  # not a HATIE type: unscored, with that reason
                assert any(note.startswith("regions from the given masks") for note in edit["hatie"]["notes"])
    # BC for add, remove, replace, resize and recolour (attribute); OC for the background changes
    assert checked == {"hatie_bc": 10, "hatie_oc": 2}


def test_bpm_s_regions_are_the_objects_the_world_drew(bpm_runs, world):
    """With given masks, BPM's origin region is the edited object's own mask in the source, and its edit region
    that object's mask in the correct edit, pixel for pixel (read here from the mask files the world wrote)."""
    _, direct = bpm_runs
    checked = 0
    for item_id, (item, results) in direct.items():
        kind, edited = item.meta["world"]["kind"], item.meta["world"]["edited"]
        if kind not in ("recolour", "resize", "move"):
            continue  # the object is in both images only for these kinds
        roles = item.meta["world"]["roles"]
        correct = results["correct"]
        assert np.array_equal(correct.origin.mask, _mask(world.parent / item.meta["hatie"]["masks"][edited])), item_id
        edit_mask = world.parent / "images" / item_id / "masks" / "correct" / f"{edited}.png"
        assert edit_mask.is_file() and roles.count("correct") == 1
        assert np.array_equal(correct.edit.mask, _mask(edit_mask)), item_id
        checked += 1
    assert checked == 6

