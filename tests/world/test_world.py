"""The shapes world: scenes draw what they say, each constructed edit changes what its role says and
nothing else, and a written set is a valid manifest whose judgments follow the construction."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.manifest import validate_manifest
from augclip_demo.cli import main
from augclip_demo.world import (
    COLOURS,
    EDIT_KINDS,
    RATINGS,
    caption,
    draw_scene,
    make_edit,
    random_scene,
    write_world,
)
from augclip_demo.world.scenes import SceneObject, scene_phrases


def _pixels(scene) -> np.ndarray:
    return np.asarray(draw_scene(scene).image).astype(int)


def _changed(a, b) -> np.ndarray:
    return np.any(_pixels(a) != _pixels(b), axis=-1)


def test_an_object_is_drawn_in_its_colour_inside_its_mask_and_nowhere_else():
    rng = np.random.default_rng(11)
    for _ in range(20):
        scene = random_scene(rng)
        drawn = draw_scene(scene)
        pixels = np.asarray(drawn.image).astype(int)
        for obj, mask in zip(scene.objects, drawn.masks):
            core = ~_grown(~mask, 1)
            assert core.sum() > 20, caption(scene)
            assert np.abs(pixels[core] - np.array(COLOURS[obj.colour])).max() <= 1
        empty = replace(scene, objects=())
        # away from the objects' edges (antialiased) the background is the empty scene's
        far = ~_grown(np.any(np.stack(drawn.masks), axis=0))
        assert np.array_equal(pixels[far], _pixels(empty)[far])


def test_a_scene_is_drawn_the_same_every_time_and_its_words_name_every_object():
    scene = random_scene(np.random.default_rng(5), min_objects=3)
    assert np.array_equal(_pixels(scene), _pixels(scene))
    text, phrases = caption(scene), scene_phrases(scene)
    for obj in scene.objects:
        assert f"{obj.colour} {obj.shape}" in text
        assert f"the {obj.shape} is {obj.colour}" in phrases
    assert len({o.shape for o in scene.objects}) == len(scene.objects) == 3


@pytest.mark.parametrize("kind", EDIT_KINDS)
def test_each_role_changes_what_it_is_built_to_change(kind):
    for seed in range(6):
        edit = make_edit(np.random.default_rng([99, seed]), kind)
        r = edit.results
        assert set(r) == set(RATINGS)
        assert not _changed(edit.source, r["unchanged"]).any()
        correct = _changed(edit.source, r["correct"])
        assert correct.any(), edit.instruction
        for role in ("partial", "over_edit", "wrong"):
            assert _changed(r["correct"], r[role]).any(), (role, edit.instruction)
        # the over-edit changes the picture far beyond the instruction's region
        assert _changed(edit.source, r["over_edit"]).sum() > correct.sum() + 0.1 * correct.size or kind == "background"
        if kind == "background":  # every object recoloured on top of the new background
            assert all(a.colour != b.colour for a, b in zip(r["correct"].objects, r["over_edit"].objects))
        else:  # a partial edit stays where the correct edit or the source's objects are (a half move: between)
            partial = _changed(edit.source, r["partial"])
            allowed = _grown(correct | np.any(np.stack(draw_scene(edit.source).masks), axis=0))
            if kind == "move":
                rows, cols = np.nonzero(correct)
                allowed[rows.min():rows.max() + 1, cols.min():cols.max() + 1] = True
            assert partial.any() and not (partial & ~allowed).any()


def _grown(mask: np.ndarray, by: int = 3) -> np.ndarray:
    """``mask`` dilated by a square of ``by`` pixels each way."""
    rows = np.any(np.stack([np.roll(mask, s, 0) for s in range(-by, by + 1)]), axis=0)
    return np.any(np.stack([np.roll(rows, s, 1) for s in range(-by, by + 1)]), axis=0)


def test_a_recolour_paints_the_named_object_in_the_named_colour():
    for seed in range(10):
        edit = make_edit(np.random.default_rng([7, seed]), "recolour")
        shape, colour = edit.instruction.split()[2], edit.instruction.split()[3]
        index = edit.source.find(shape)
        drawn = draw_scene(edit.results["correct"])
        mask = drawn.masks[index]
        assert np.abs(np.median(np.asarray(drawn.image)[mask], axis=0) - COLOURS[colour]).max() <= 1
        wrong = edit.results["wrong"].objects[index].colour
        assert wrong not in (colour, edit.source.objects[index].colour)


def test_two_objects_never_overlap():
    rng = np.random.default_rng(3)
    for _ in range(200):
        masks = draw_scene(random_scene(rng, min_objects=3)).masks
        assert np.sum(np.stack(masks), axis=0).max() <= 1


def test_a_written_set_is_a_valid_manifest_with_judgments_by_construction(tmp_path):
    manifest = write_world(tmp_path / "w", 14, seed=4)
    assert validate_manifest(manifest).items == 14
    items = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert [i["meta"]["world"]["kind"] for i in items] == list(EDIT_KINDS) * 2
    for item in items:
        names = [e["name"] for e in item["edits"]]
        assert sorted(names) == sorted(RATINGS)
        assert names[item["human"]["preferred"]] == "correct"
        assert item["human"]["scores"] == [RATINGS[n] for n in names]
        root = manifest.parent
        source = np.asarray(Image.open(root / item["source"]))
        unchanged = np.asarray(Image.open(root / item["edits"][names.index("unchanged")]["path"]))
        assert np.array_equal(source, unchanged)
        mask = np.asarray(Image.open(root / item["edit_mask"])) > 127
        correct = np.asarray(Image.open(root / item["edits"][names.index("correct")]["path"]))
        assert np.array_equal(mask, np.any(correct != source, axis=-1))
        for shape, path in item["meta"]["hatie"]["masks"].items():
            assert shape in item["source_text"] and (np.asarray(Image.open(root / path)) > 127).any()
    orders = {tuple(e["name"] for e in i["edits"]) for i in items}
    assert len(orders) > 5  # the edits are listed in a different order per item


def test_item_k_is_the_same_whatever_the_set_size(tmp_path):
    small = write_world(tmp_path / "a", 3, seed=8).read_text().splitlines()
    large = write_world(tmp_path / "b", 9, seed=8).read_text().splitlines()
    assert small == large[:3]
    other = write_world(tmp_path / "c", 3, seed=9).read_text().splitlines()
    assert other != small


def test_the_world_command_writes_a_set_and_refuses_bad_arguments(tmp_path, capsys):
    assert main(["world", str(tmp_path / "w"), "--items", "3", "--kinds", "move", "add"]) == 0
    assert "3 item(s)" in capsys.readouterr().out
    kinds = [json.loads(line)["meta"]["world"]["kind"] for line in (tmp_path / "w" / "manifest.jsonl").open()]
    assert kinds == ["move", "add", "move"]
    # the folder of an earlier set is written again (a redrawn set, not a refusal): the earlier items' folders go,
    # a folder that is not an item's stays
    (tmp_path / "w" / "images" / "notes").mkdir()
    assert main(["world", str(tmp_path / "w"), "--items", "2", "--kinds", "add"]) == 0
    assert len((tmp_path / "w" / "manifest.jsonl").read_text().splitlines()) == 2
    assert sorted(p.name for p in (tmp_path / "w" / "images").iterdir()) == ["add-0000", "add-0001", "notes"]
    assert main(["world", str(tmp_path / "x"), "--items", "0"]) == 2
    assert "--items must be between 1 and" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["world", str(tmp_path / "file")]) == 2
    assert f"OUT {tmp_path / 'file'}: is a file; give a folder" in capsys.readouterr().err


def test_an_object_with_half_a_colour_is_split_at_its_centre():
    obj = SceneObject("box", "red", "large", 0.17, "centre", (0.5, 0.5), half_colour="blue")
    scene = replace(random_scene(np.random.default_rng(0)), objects=(obj,))
    drawn = draw_scene(scene)
    pixels, mask = np.asarray(drawn.image).astype(int), drawn.masks[0]
    cols = np.nonzero(mask.any(axis=0))[0]
    left, right = mask.copy(), mask.copy()
    left[:, cols.mean().astype(int) - 2:] = False
    right[:, :cols.mean().astype(int) + 2] = False
    assert np.abs(np.median(pixels[left], 0) - COLOURS["red"]).max() <= 1
    assert np.abs(np.median(pixels[right], 0) - COLOURS["blue"]).max() <= 1


def test_a_changed_target_list_holds_only_what_the_edit_brings(tmp_path):
    """`--target-attributes changed`: each target list is the phrases of the correct edit's scene that the
    source lacks (a removal, which brings none, keeps the target scene's phrases)."""
    assert main(["world", str(tmp_path / "w"), "--items", "7", "--target-attributes", "changed"]) == 0
    scene_style = write_world(tmp_path / "s", 7)
    for changed, whole in zip((tmp_path / "w" / "manifest.jsonl").read_text().splitlines(),
                              scene_style.read_text().splitlines()):
        changed, whole = json.loads(changed), json.loads(whole)
        source, target = whole["attributes"]["source"], whole["attributes"]["target"]
        assert changed["attributes"]["source"] == source
        assert changed["meta"]["world"]["target_attributes"] == "changed"
        brought = [p for p in target if p not in source]
        assert changed["attributes"]["target"] == (brought or target), changed["meta"]["world"]["kind"]
        assert (not brought) == (changed["meta"]["world"]["kind"] == "remove")
