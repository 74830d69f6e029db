"""Benchmark loaders on constructed copies of each published layout (file names, keys, encodings as released).

Texts in the fixtures are made up for the tests; the structure (folder names, JSON keys, value types,
the run-length mask encoding, the prompt-list syntax, the Parquet image struct) is the benchmarks' own.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.benchmarks import (
    decode_pie_mask,
    load_celeba,
    load_dreambooth,
    load_editval,
    load_parquet,
    load_pie_bench,
)
from augclip_demo.batch.benchmarks.common import Unmatched
from augclip_demo.batch.manifest import load_manifest
from augclip_demo.cli import main
from augclip_demo.errors import InputError


def save(path: Path, color: str = "white", size: tuple[int, int] = (64, 64)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path)
    return path


def png_bytes(color: str, size: tuple[int, int] = (32, 32)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------- PIE-Bench
def reference_mask(pairs: list[int], side: int = 512, border: bool = True) -> np.ndarray:
    """PIE-Bench's mask from its definition, written out pixel by pixel."""
    flat = [0] * (side * side)
    for k in range(0, len(pairs), 2):
        start, length = pairs[k], pairs[k + 1]
        for j in range(min(length, side * side - start)):
            flat[start + j] = 1
    mask = np.array(flat, dtype=bool).reshape(side, side)
    if border:
        mask[0, :] = True
        mask[-1, :] = True
        mask[:, 0] = True
        mask[:, -1] = True
    return mask


def test_pie_mask_decoding_matches_the_definition():
    pairs = [5 * 512 + 100, 40, 300 * 512 + 7, 1000, 512 * 512 - 10, 50]  # the last run passes the end: cut there
    for border in (True, False):
        assert np.array_equal(decode_pie_mask(pairs, border=border), reference_mask(pairs, border=border))
    assert decode_pie_mask(pairs, border=False)[5, 100:140].all() and not decode_pie_mask(pairs, border=False)[5, 99]
    with pytest.raises(InputError, match="odd number"):
        decode_pie_mask([1, 2, 3])
    with pytest.raises(InputError, match="past the 512 x 512"):
        decode_pie_mask([512 * 512, 1])
    with pytest.raises(InputError, match="non-negative"):
        decode_pie_mask([-1, 4])


MASK_PAIRS = [200 * 512 + 150, 120, 201 * 512 + 150, 120]


@pytest.fixture()
def pie_bench(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    entries = {
        "000000000000": {"image_path": "0_random_140/000000000000.jpg",
                         "original_prompt": "a red kite over a field",
                         "editing_prompt": "a [green] kite over a field",
                         "editing_instruction": "Make the kite green", "editing_type_id": "0",
                         "blended_word": "kite kite", "mask": MASK_PAIRS},
        "111000000000": {"image_path": "1_change_object_80/1_artificial/1_animal/111000000000.jpg",
                         "original_prompt": "a painting of a [cat] on a sofa",
                         "editing_prompt": "a painting of a [fox] on a sofa",
                         "editing_instruction": "Turn the cat into a fox", "editing_type_id": "1",
                         "blended_word": "cat fox", "mask": [0, 512 * 10]},
        "222000000000": {"image_path": "2_add_object_80/1_artificial/1_animal/222000000000.jpg",
                         "original_prompt": "a bowl", "editing_prompt": "a bowl [with fruit]",
                         "editing_instruction": "Put fruit in the bowl", "editing_type_id": "2",
                         "blended_word": "bowl bowl", "mask": [1, 2, 3]},  # malformed: written without a mask
        "333000000000": {"image_path": "../../outside.jpg", "original_prompt": "x", "editing_prompt": "y",
                         "editing_instruction": "z", "editing_type_id": "3", "blended_word": "", "mask": []},
        "444000000000": {"image_path": "4_change_attribute_content_40/1_artificial/1_animal/444000000000.jpg",
                         "original_prompt": "a dog", "editing_prompt": "a [happy] dog",
                         "editing_instruction": "Make the dog happy", "editing_type_id": "4",
                         "blended_word": "dog dog", "mask": [0, 5]},
    }
    data.mkdir()
    (data / "mapping_file.json").write_text(json.dumps(entries))
    for entry in entries.values():
        if ".." not in entry["image_path"]:
            save(data / "annotation_images" / entry["image_path"], size=(512, 512))
    save(tmp_path / "outside.jpg")
    out = tmp_path / "output"
    for key in ("000000000000", "111000000000", "222000000000"):
        path = entries[key]["image_path"]
        save(out / "ddim+p2p" / "annotation_images" / path, "blue", (512, 512))
    # a method that saves source | edit side by side (1024 x 512): the evaluation keeps the right half
    side_by_side = Image.new("RGB", (1024, 512), "black")
    side_by_side.paste(Image.new("RGB", (512, 512), "yellow"), (512, 0))
    target = out / "instruct-pix2pix" / "annotation_images" / entries["000000000000"]["image_path"]
    target.parent.mkdir(parents=True)
    side_by_side.save(target)
    return tmp_path


def test_pie_bench_layout(pie_bench):
    manifest = pie_bench / "pie.jsonl"
    result = load_pie_bench(pie_bench / "data", manifest, methods=[pie_bench / "output" / "ddim+p2p",
                                                                    pie_bench / "output" / "instruct-pix2pix"])
    items = {item.id: item for item in load_manifest(result.manifest)}
    assert list(items) == ["000000000000", "111000000000", "222000000000"]
    first = items["000000000000"]
    assert first.source == "data/annotation_images/0_random_140/000000000000.jpg"
    assert first.target_text == "a green kite over a field" and first.source_text == "a red kite over a field"
    assert first.instruction == "Make the kite green" and first.edit_type is None
    assert first.meta["editing_type_id"] == "0" and first.meta["blended_word"] == "kite kite"
    assert [e.name for e in first.edits] == ["ddim+p2p", "instruct-pix2pix"]
    crop = np.asarray(Image.open(first.edits[1].resolved))
    assert crop.shape == (512, 512, 3)  # the right half (yellow, JPEG-coded), as the evaluation crops
    assert crop[..., 0].min() > 200 and crop[..., 2].max() < 60
    mask = np.asarray(Image.open(first.edit_mask_path)) >= 128
    assert np.array_equal(mask, reference_mask(MASK_PAIRS))
    assert items["111000000000"].edit_type == "replace" and items["111000000000"].target_text == \
        "a painting of a fox on a sofa"
    assert items["222000000000"].edit_mask is None  # odd run-length list: item kept, mask left out, reported
    report = "\n".join(result.warnings)
    assert "masks that do not decode (written without edit_mask): 1" in report
    assert "image paths refused (not used): 1" in report and "'..'" in report
    assert "instruct-pix2pix: no output: 3" in report
    assert "items with no output from any method (not written): 1 (444000000000)" in report
    assert len(result.warnings) <= 8  # a few lines, not one per entry
    only_type_1 = load_pie_bench(pie_bench / "data", pie_bench / "t1.jsonl", methods=[pie_bench / "output" /
                                                                                       "ddim+p2p"], edit_types=["1"])
    assert only_type_1.n_items == 1
    raw = load_pie_bench(pie_bench / "data", pie_bench / "raw.jsonl", methods=[pie_bench / "output" / "ddim+p2p"],
                         mask_border=False)
    raw_first = next(i for i in load_manifest(raw.manifest) if i.id == "000000000000")
    assert np.array_equal(np.asarray(Image.open(raw_first.edit_mask_path)) >= 128,
                          reference_mask(MASK_PAIRS, border=False))
    with pytest.raises(InputError, match="at least one method"):
        load_pie_bench(pie_bench / "data", manifest)


def test_pie_bench_cli_and_symlink_out_of_the_folder(pie_bench, capsys):
    outside = pie_bench.parent / "elsewhere.jpg"
    save(outside, size=(512, 512))
    link = pie_bench / "output" / "ddim+p2p" / "annotation_images" / "4_change_attribute_content_40" / \
        "1_artificial" / "1_animal" / "444000000000.jpg"
    link.parent.mkdir(parents=True)
    os.symlink(outside, link)
    assert main(["manifest", "pie-bench", str(pie_bench / "data"), "--out", str(pie_bench / "cli.jsonl"),
                 "--method-dir", f"p2p={pie_bench / 'output' / 'ddim+p2p'}"]) == 0
    printed = capsys.readouterr().out
    assert "3 item(s), 3 edited image(s)" in printed
    assert "warning: p2p: outputs refused or unreadable (not used): 1" in printed and "outside" in printed


# ---------------------------------------------------------------------------------------------- EditVal
@pytest.fixture()
def editval(tmp_path: Path) -> Path:
    root = tmp_path / "editval"
    root.mkdir()
    # object.json as released: leading blank lines, class -> COCO id -> edit type -> {"from": [...], "to": [...]}
    (root / "object.json").write_text("\n\n\n" + json.dumps({
        "bench": {"100166": {"object_addition": {"from": [""], "to": ["bag", "cup"]},
                             "positional_addition": {"from": [""], "to": ["bag below", "cup to right"]}}},
        "stop_sign": {"135113": {"color": {"from": [""], "to": ["blue"]},
                                 "position_replacement": {"from": ["right"], "to": ["left"]}}},
        "dog": {"11635": {"action": {"from": [""], "to": ["sit"]}}},
        "cup": {"999999": {"size": {"from": [""], "to": ["large"]}}},
    }, indent=4))
    for image_id in ("100166", "135113", "11635"):
        save(root / "coco" / f"{int(image_id):012d}.jpg")
    method = root / "edited" / "pix2pix"
    for path in ("object_addition/100166/bag.png", "object_addition/100166/cup.png",
                 "positional_addition/100166/bag below.png", "color/135113/blue.png",
                 "position_replacement/135113/left.png", "action/11635/sit.png"):
        save(method / path, "green")
    save(root / "edited" / "sine" / "object_addition" / "100166" / "bag.png", "red")
    return root


def test_editval_layout(editval):
    result = load_editval(editval, coco_dir=editval / "coco", methods=[editval / "edited" / "pix2pix",
                                                                      editval / "edited" / "sine"])
    items = {item.id: item for item in load_manifest(result.manifest)}
    assert sorted(items) == sorted(["100166-object_addition-bag", "100166-object_addition-cup",
                                    "100166-positional_addition-bag_below", "135113-color-blue",
                                    "135113-position_replacement-left", "11635-action-sit"])
    bag = items["100166-object_addition-bag"]
    assert bag.source == "coco/000000100166.jpg" and [e.name for e in bag.edits] == ["pix2pix", "sine"]
    assert bag.target_text == "a photo of a bench and a bag" and bag.instruction == "add a bag"
    assert bag.source_text == "a photo of a bench"
    assert bag.meta == {"benchmark": "editval", "edit_type": "object_addition", "class": "bench",
                        "image_id": "100166", "from": "", "to": "bag"}
    assert items["100166-positional_addition-bag_below"].target_text == "a photo of a bag below a bench"
    assert items["135113-color-blue"].target_text == "a photo of a blue stop sign"
    assert items["135113-position_replacement-left"].instruction == "move the stop sign to the left"
    assert items["11635-action-sit"].target_text == "a photo of a dog sitting"
    report = "\n".join(result.warnings)
    assert "COCO images missing (items not written): 1 (999999)" in report
    assert "pix2pix: no output: 1 (positional_addition/100166/cup to right.png)" in report
    assert "sine: no output: 6" in report
    split = load_editval(editval, editval / "split.jsonl", coco_dir=editval / "coco",
                         methods=[editval / "edited" / "pix2pix"], split_types=True)
    assert {i.dataset for i in load_manifest(split.manifest)} >= {"editval:color", "editval:action"}


def test_editval_refuses_values_that_leave_the_folder(editval):
    data = json.loads((editval / "object.json").read_text())
    data["bench"]["100166"]["object_addition"]["to"].append("../../../../secret")
    (editval / "object.json").write_text(json.dumps(data))
    save(editval / "secret.png")
    result = load_editval(editval, coco_dir=editval / "coco", methods=[editval / "edited" / "pix2pix"])
    assert "pix2pix output: paths refused: 1" in "\n".join(result.warnings)
    assert all("secret" not in e.path for i in load_manifest(result.manifest) for e in i.edits)


# ---------------------------------------------------------------------------------------------- DreamBooth
PROMPTS_AND_CLASSES = """Classes

subject_name,class
backpack,backpack
cat2,cat
bear_plushie,stuffed animal
../../outside,dog

Prompts

Object Prompts

prompt_list = [
'a {0} {1} on a red sofa'.format(unique_token, class_token),
'a {0} {1} under the rain'.format(unique_token, class_token),
'a tiny {0} {1}'.format(unique_token, class_token)
]

Live Subject Prompts

prompt_list = [
'a {0} {1} on a red sofa'.format(unique_token, class_token),
'a {0} {1} asleep in a basket'.format(unique_token, class_token)
]
"""


@pytest.fixture()
def dreambooth(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "prompts_and_classes.txt").write_text(PROMPTS_AND_CLASSES)
    for subject in ("backpack", "cat2"):
        save(root / subject / "01.jpg")
        save(root / subject / "00.jpg")
    gen = tmp_path / "dataset" / "generated" / "model-a"
    save(gen / "backpack" / "00.png")
    save(gen / "backpack" / "00_1.png")
    save(gen / "backpack" / "a_tiny_backpack.png")
    save(gen / "backpack" / "notes.png")  # matches no prompt
    save(gen / "cat2" / "a cat asleep in a basket-2.png")
    save(gen / "teapot" / "00.png")  # a subject not in the list
    save(gen / "05.png")  # a generated image outside any subject folder
    return root


def test_dreambooth_layout(dreambooth):
    result = load_dreambooth(dreambooth, methods=[dreambooth / "generated" / "model-a"])
    items = {item.id: item for item in load_manifest(result.manifest)}
    assert sorted(items) == ["backpack-00-a_backpack_on_a_red_sofa", "backpack-02-a_tiny_backpack",
                             "cat2-01-a_cat_asleep_in_a_basket"]
    sofa = items["backpack-00-a_backpack_on_a_red_sofa"]
    assert sofa.source == "backpack/00.jpg" and sofa.target_text == "a backpack on a red sofa"
    assert [e.path for e in sofa.edits] == ["generated/model-a/backpack/00.png", "generated/model-a/backpack/00_1.png"]
    cat = items["cat2-01-a_cat_asleep_in_a_basket"]
    assert cat.meta["live"] is True and cat.source_text == "a photo of a cat"  # live subjects take the live list
    report = "\n".join(result.warnings)
    assert "model-a: generated files that match no prompt (not used): 1 (backpack/notes.png)" in report
    assert "model-a: subject folders not in the class list (not used): 1 (teapot)" in report
    assert "model-a: images outside a subject folder (not used): 1 (05.png)" in report
    assert "subjects without photos (not used): 1 (bear_plushie)" in report
    assert "subject names refused (not used): 1" in report and "'..'" in report
    token = load_dreambooth(dreambooth, dreambooth / "token.jsonl", methods=[dreambooth / "generated" / "model-a"],
                            unique_token="sks")
    assert "a sks backpack on a red sofa" in {i.target_text for i in load_manifest(token.manifest)}


# ---------------------------------------------------------------------------------------------- CelebA-style
def test_celeba_layout(tmp_path):
    root = tmp_path / "celeba"
    for face in ("000001.jpg", "000002.jpg"):
        save(root / "faces" / face)
    (root / "attributes.txt").write_text("a photo of a smiling person\n# comment\na photo of a person with blond hair\n")
    save(root / "styleclip" / "a_photo_of_a_smiling_person" / "000001.png")
    save(root / "styleclip" / "2" / "000001.png")  # by line number
    save(root / "diffclip" / "000002-a_photo_of_a_smiling_person.png")  # flat
    result = load_celeba(root, methods=[root / "styleclip", root / "diffclip"])
    items = {i.id: i for i in load_manifest(result.manifest)}
    assert sorted(items) == ["000001-a_photo_of_a_person_with_blond_hair", "000001-a_photo_of_a_smiling_person",
                             "000002-a_photo_of_a_smiling_person"]
    assert items["000002-a_photo_of_a_smiling_person"].edits[0].name == "diffclip"
    assert items["000001-a_photo_of_a_smiling_person"].source_text == "a photo of a face"
    report = "\n".join(result.warnings)
    assert "(face, attribute) pairs with no output from any model (not written): 1" in report
    (root / "attrs.csv").write_text("name,target_text\nSmiling,a photo of a smiling person\n")
    save(root / "m" / "Smiling" / "000002.jpg")
    csv_result = load_celeba(root, root / "csv.jsonl", methods=[root / "m"], attributes="attrs.csv")
    assert [i.id for i in load_manifest(csv_result.manifest)] == ["000002-Smiling"]
    with pytest.raises(InputError, match="'..'"):
        load_celeba(root, methods=[root / "m"], attributes="../attrs.csv")


# ---------------------------------------------------------------------------------------------- Parquet
def image_struct(data: bytes | None = None, path: str | None = None) -> dict:
    return {"bytes": data, "path": path}


def write_shard(path: Path, rows: list[dict], image_columns: list[str], row_group_size: int = 2) -> Path:
    """A Parquet shard with the Hub's Image feature layout (struct<bytes: binary, path: string>)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = []
    for name, value in rows[0].items():
        if name in image_columns:
            fields.append(pa.field(name, image_type))
        elif isinstance(value, int):
            fields.append(pa.field(name, pa.int32()))
        else:
            fields.append(pa.field(name, pa.string()))
    table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def rgba_masked_image(size: tuple[int, int] = (32, 32)) -> bytes:
    """MagicBrush's mask_img: an RGBA masked image (the region marked by its transparency), not a
    binary mask (OSU-NLP-Group/MagicBrush issue #10); a larger resolution than the source is allowed."""
    image = Image.new("RGBA", size, (255, 255, 255, 255))
    image.paste((0, 0, 0, 0), (8, 8, 20, 20))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_parquet_magicbrush_preset(tmp_path):
    source, target, mask = png_bytes("white"), png_bytes("green"), rgba_masked_image((64, 64))
    rows = [{"img_id": "139", "turn_index": t, "source_img": image_struct(source),
             "mask_img": image_struct(mask), "instruction": f"step {t}", "target_img": image_struct(target)}
            for t in (1, 2)]
    rows.append({"img_id": "30", "turn_index": 1, "source_img": image_struct(b"not an image"),
                 "mask_img": image_struct(mask), "instruction": "x", "target_img": image_struct(target)})
    shard = write_shard(tmp_path / "data" / "dev-00000-of-00001.parquet", rows,
                        ["source_img", "mask_img", "target_img"])
    result = load_parquet([tmp_path / "data"], preset="magicbrush")
    items = load_manifest(result.manifest)
    assert [i.id for i in items] == ["139-1", "139-2"] and result.manifest == shard.parent / "manifest.jsonl"
    first = items[0]
    assert first.instruction == "step 1" and first.target_text == "step 1" and first.dataset == "magicbrush"
    assert first.edits[0].role == "gt" and first.ground_truth == first.edits[0].path
    # mask_img is a masked RGBA image, not a white = edit mask: the preset leaves it out (as MagicBrush's
    # evaluation and the JSON loader do) rather than read the white pixels of an image as the edit region
    assert first.edit_mask is None
    # each distinct image written once, under its content hash
    written = sorted(p for p in (shard.parent / "manifest_images").rglob("*") if p.is_file())
    assert len(written) == 2 and all(p.suffix == ".png" for p in written)
    import hashlib

    assert first.source_path.name == hashlib.sha256(source).hexdigest() + ".png"
    assert first.source_path.read_bytes() == source and items[1].source_path == first.source_path
    assert "source images unusable (row not written): 1" in "\n".join(result.warnings)


def test_parquet_emu_edit_hq_edit_and_paths(tmp_path):
    base = {"instruction": "make it snow", "task": "global", "split": "test", "hash": "h",
            "input_caption": "a street", "output_caption": "a snowy street"}
    rows = [{**base, "image": image_struct(png_bytes("white")), "idx": 1},
            {**base, "image": image_struct(png_bytes("grey")), "idx": 2}]
    write_shard(tmp_path / "emu" / "test-00000.parquet", rows, ["image"])
    outputs = tmp_path / "emu" / "my-model"
    save(outputs / "1.png")
    result = load_parquet([tmp_path / "emu" / "test-00000.parquet"], preset="emu-edit", methods=[outputs])
    (item,) = load_manifest(result.manifest)
    assert item.id == "1" and item.target_text == "a snowy street" and item.source_text == "a street"
    assert item.meta["edit_type"] == "global" and [e.name for e in item.edits] == ["my-model"]
    assert "rows with no edited image (not written): 1" in "\n".join(result.warnings)
    # HQ-Edit's columns; images given as paths (one leaves the folder: refused)
    save(tmp_path / "hq" / "imgs" / "in.png")
    save(tmp_path / "hq" / "imgs" / "out.png")
    hq_rows = [{"input": "a cup", "input_image": image_struct(path="imgs/in.png"), "edit": "make the cup red",
                "inverse_edit": "make the cup white", "output": "a red cup",
                "output_image": image_struct(path="imgs/out.png")},
               {"input": "a cup", "input_image": image_struct(path="../../etc/passwd"), "edit": "e",
                "inverse_edit": "f", "output": "g", "output_image": image_struct(path="imgs/out.png")}]
    write_shard(tmp_path / "hq" / "train.parquet", hq_rows, ["input_image", "output_image"])
    hq = load_parquet([tmp_path / "hq" / "train.parquet"], preset="hq-edit")
    (first,) = load_manifest(hq.manifest)
    assert first.id == "row1" and first.source == "imgs/in.png" and first.instruction == "make the cup red"
    assert "'..'" in "\n".join(hq.warnings)


def test_parquet_column_flags_and_streaming(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)

    def noise_png() -> bytes:  # ~120 kB that do not compress: the shard's bulk
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (200, 200, 3), dtype=np.uint8)).save(buffer, format="PNG")
        return buffer.getvalue()

    rows = [{"key": f"k{i}", "before": noise_png(), "after": noise_png(), "prompt": f"p{i}"} for i in range(60)]
    (tmp_path / "plain").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "plain" / "part.parquet", row_group_size=2)
    shard_bytes = sum(len(r["before"]) + len(r["after"]) for r in rows)
    held: list[int] = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        for batch in original(self, *args, **kwargs):
            held.append(pa.total_allocated_bytes())  # Arrow memory while the batch is in use
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    with pytest.raises(InputError, match="no source image column"):
        load_parquet([tmp_path / "plain"], columns={"ground_truth": "after"})
    baseline = pa.total_allocated_bytes()
    result = load_parquet([tmp_path / "plain"], columns={"id": "key", "source": "before", "ground_truth": "after",
                                                         "target_caption": "prompt"}, dataset="mine")
    assert result.n_items == 60 and len(held) >= 30
    # a few row groups' worth of the 30 at most, and flat (a reader over the whole file holds them all by its end)
    assert max(held) - baseline < shard_bytes / 4 and max(held[-10:]) <= max(held[:10]) * 1.1
    assert load_parquet([tmp_path / "plain"], tmp_path / "plain" / "seven.jsonl", columns={
        "source": "before", "ground_truth": "after", "instruction": "prompt"}, limit=7).n_items == 7
    with pytest.raises(InputError, match="no column 'nope'"):
        load_parquet([tmp_path / "plain"], columns={"source": "nope", "instruction": "prompt",
                                                    "ground_truth": "after"})


def test_unmatched_report_is_a_few_lines():
    unmatched = Unmatched()
    for i in range(100):
        unmatched.add("m: no output", f"x{i}")
    unmatched.add("other", "y")
    assert unmatched.lines() == ["m: no output: 100 (e.g. x0, x1, x2, ...)", "other: 1 (y)"]


def test_every_loader_runs_from_the_cli(editval, dreambooth, tmp_path, capsys):
    assert main(["manifest", "editval", str(editval), "--coco-dir", str(editval / "coco"), "--method-dir",
                 f"p2p={editval / 'edited' / 'pix2pix'}", "--split-types"]) == 0
    assert "6 item(s), 6 edited image(s)" in capsys.readouterr().out
    assert main(["manifest", "dreambooth", str(dreambooth), "--method-dir", str(dreambooth / "generated" / "model-a"),
                 "--unique-token", "sks", "--dataset", "db"]) == 0
    assert "3 item(s), 4 edited image(s)" in capsys.readouterr().out
    root = tmp_path / "faces"
    save(root / "faces" / "a.png")
    (root / "attributes.txt").write_text("a photo of a smiling person\n")
    save(root / "m" / "1" / "a.png")
    assert main(["manifest", "celeba", str(root), "--method-dir", str(root / "m")]) == 0
    assert "1 item(s), 1 edited image(s)" in capsys.readouterr().out
    shard = write_shard(tmp_path / "pq" / "train.parquet",
                        [{"q": "a cat", "src": image_struct(png_bytes("white")), "dst": image_struct(png_bytes("red"))}],
                        ["src", "dst"])
    assert main(["manifest", "parquet", str(shard), "--source-column", "src", "--ground-truth-column", "dst",
                 "--instruction-column", "q", "--dataset", "mine"]) == 0
    assert "1 item(s), 1 edited image(s)" in capsys.readouterr().out
    # a method folder outside the manifest's folder is refused up front, with what to do
    assert main(["manifest", "editval", str(editval), "--coco-dir", str(editval / "coco"), "--method-dir",
                 str(tmp_path / "pq"), "--out", str(editval / "m.jsonl")]) == 2
    assert "outside the manifest's folder" in capsys.readouterr().err


def test_pie_bench_crop_follows_a_regenerated_output(pie_bench):
    """A second run after a method's outputs were regenerated uses the new output, not the first run's crop."""
    output = pie_bench / "output" / "instruct-pix2pix" / "annotation_images" / "0_random_140" / "000000000000.jpg"

    def crop_colour(colour: str) -> tuple[int, ...]:
        side_by_side = Image.new("RGB", (1024, 512), "black")
        side_by_side.paste(Image.new("RGB", (512, 512), colour), (512, 0))
        side_by_side.save(output)
        result = load_pie_bench(pie_bench / "data", pie_bench / "pie.jsonl",
                                methods=[pie_bench / "output" / "instruct-pix2pix"])
        (item,) = [i for i in load_manifest(result.manifest) if i.id == "000000000000"]
        return tuple(int(v) for v in np.asarray(Image.open(item.edits[0].resolved))[256, 256])

    first, second = crop_colour("yellow"), crop_colour("blue")
    assert first[0] > 200 and first[2] < 60  # yellow
    assert second[2] > 200 and second[0] < 60  # blue: the regenerated output, not the stale crop


def test_parquet_shard_corrupt_past_its_footer_is_a_clear_error(tmp_path, capsys):
    """A shard whose footer reads but whose data pages are damaged: an error naming the shard, no traceback."""
    rows = [{"q": f"q{i}", "src": image_struct(png_bytes("white")), "dst": image_struct(png_bytes("red"))}
            for i in range(40)]
    shard = write_shard(tmp_path / "pq" / "train.parquet", rows, ["src", "dst"], row_group_size=5)
    data = bytearray(shard.read_bytes())
    assert len(data) > 4000
    data[200:600] = b"Z" * 400  # damage the first row group's pages; the footer (schema) at the end stays readable
    shard.write_bytes(bytes(data))
    code = main(["manifest", "parquet", str(shard), "--source-column", "src", "--ground-truth-column", "dst",
                 "--instruction-column", "q"])
    err = capsys.readouterr().err
    assert code == 2 and str(shard) in err and "row group" in err and "Traceback" not in err
    assert not (shard.parent / "manifest.jsonl").exists()


def test_editval_reports_repeated_and_unusable_values(editval):
    """A value object.json repeats for one image, an empty one and one that is not text: each counted, none silent."""
    data = json.loads((editval / "object.json").read_text())
    data["bench"]["100166"]["object_addition"]["to"] += ["bag", "", 7]
    (editval / "object.json").write_text(json.dumps(data))
    result = load_editval(editval, coco_dir=editval / "coco", methods=[editval / "edited" / "pix2pix"])
    ids = [i.id for i in load_manifest(result.manifest)]
    assert ids.count("100166-object_addition-bag") == 1
    report = "\n".join(result.warnings)
    assert "repeated (image, edit type, value) entries (one item kept): 1 (100166-object_addition-bag)" in report
    assert "'to' values that are not text or are empty (not used): 2" in report


def test_parquet_text_role_on_an_image_column_is_refused(tmp_path):
    """Mapping a text role (instruction) to an image column is an error naming the column, not bytes as text."""
    shard = write_shard(tmp_path / "pq" / "train.parquet",
                        [{"q": "a cat", "src": image_struct(png_bytes("white")), "dst": image_struct(png_bytes("red"))}],
                        ["src", "dst"])
    with pytest.raises(InputError, match=r"column 'dst' \(for instruction\) holds struct.*not text"):
        load_parquet([shard], columns={"source": "src", "ground_truth": "dst", "instruction": "dst"})


def test_parquet_limit_below_one_says_so(tmp_path):
    shard = write_shard(tmp_path / "pq" / "train.parquet",
                        [{"q": "a cat", "src": image_struct(png_bytes("white")), "dst": image_struct(png_bytes("red"))}],
                        ["src", "dst"])
    with pytest.raises(InputError, match="--limit must be at least 1"):
        load_parquet([shard], columns={"source": "src", "ground_truth": "dst", "instruction": "q"}, limit=0)


def test_parquet_repeated_id_is_reported_and_not_given_the_first_rows_output(tmp_path):
    """Two rows with one id (two splits' shards, say): the second is renamed and said so, and a method's
    <id>.png, which belongs to one of them only, is not attached to both."""
    base = {"instruction": "make it snow", "task": "global", "split": "test", "hash": "h",
            "input_caption": "a street", "output_caption": "a snowy street", "idx": 1}
    write_shard(tmp_path / "emu" / "a.parquet", [{**base, "image": image_struct(png_bytes("white"))}], ["image"])
    write_shard(tmp_path / "emu" / "b.parquet", [{**base, "image": image_struct(png_bytes("grey"))}], ["image"])
    save(tmp_path / "emu" / "model" / "1.png")
    result = load_parquet([tmp_path / "emu"], preset="emu-edit", methods=[tmp_path / "emu" / "model"])
    items = load_manifest(result.manifest)
    assert [i.id for i in items] == ["1"] and [e.path for e in items[0].edits] == ["model/1.png"]
    report = "\n".join(result.warnings)
    assert "rows whose id repeats an earlier row's (renamed <id>-2 ...; method outputs not looked up): 1 " \
        "(row 2: 1 -> 1-2)" in report
    assert "rows with no edited image (not written): 1" in report


# ---------------------------------------------------------------------------------------------- as documented
def test_documented_one_line_commands_write_the_manifest_beside_dataset_and_outputs(pie_bench, tmp_path,
                                                                                    monkeypatch, capsys):
    """`manifest pie-bench data --method-dir output/ddim+p2p` (PIE-Bench's own output/ beside data/) and
    `manifest dreambooth dataset --method-dir gen/model` work as docs/batch.md writes them, with no --out:
    the manifest goes to the folder holding the dataset and the outputs, named after the benchmark."""
    monkeypatch.chdir(pie_bench)
    assert main(["manifest", "pie-bench", "data", "--method-dir", "output/ddim+p2p"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {pie_bench.resolve() / 'pie-bench.jsonl'}: 3 item(s), 3 edited image(s)" in printed
    assert "note: masks written to" in printed and "warning: masks written" not in printed  # information only
    first = next(i for i in load_manifest(pie_bench / "pie-bench.jsonl") if i.id == "000000000000")
    assert first.source == "data/annotation_images/0_random_140/000000000000.jpg"
    assert first.edits[0].path == "output/ddim+p2p/annotation_images/0_random_140/000000000000.jpg"

    books = tmp_path / "db"
    (books / "dataset").mkdir(parents=True)
    (books / "dataset" / "prompts_and_classes.txt").write_text(PROMPTS_AND_CLASSES)
    save(books / "dataset" / "backpack" / "00.jpg")
    save(books / "gen" / "model" / "backpack" / "00.png")
    monkeypatch.chdir(books)
    assert main(["manifest", "dreambooth", "dataset", "--method-dir", "gen/model"]) == 0
    assert f"wrote {books.resolve() / 'dreambooth.jsonl'}: 1 item(s), 1 edited image(s)" in capsys.readouterr().out
    # inside ROOT the default stays ROOT/manifest.jsonl
    (books / "dataset" / "gen").mkdir()
    os.replace(books / "gen" / "model", books / "dataset" / "gen" / "model")
    result = load_dreambooth(books / "dataset", methods=[books / "dataset" / "gen" / "model"])
    assert result.manifest == (books / "dataset").resolve() / "manifest.jsonl"


def test_dreambooth_outputs_named_with_the_unique_token_match_without_it(dreambooth):
    """A model trained with a token saves `a sks backpack under the rain.png`: that names prompt 1 whether or not
    --unique-token is given, and the target text carries the token only when it is."""
    gen = dreambooth / "generated" / "model-a"
    save(gen / "backpack" / "a sks backpack under the rain.png")
    save(gen / "backpack" / "a_tiny_sks_backpack_1.png")
    save(gen / "cat2" / "a sks cat on a red sofa.png")
    plain = load_dreambooth(dreambooth, methods=[gen])
    items = {item.id: item for item in load_manifest(plain.manifest)}
    rain = items["backpack-01-a_backpack_under_the_rain"]
    assert rain.target_text == "a backpack under the rain"
    assert [e.path for e in rain.edits] == ["generated/model-a/backpack/a sks backpack under the rain.png"]
    assert [e.path for e in items["backpack-02-a_tiny_backpack"].edits] == [
        "generated/model-a/backpack/a_tiny_backpack.png", "generated/model-a/backpack/a_tiny_sks_backpack_1.png"]
    assert [e.path for e in items["cat2-00-a_cat_on_a_red_sofa"].edits] == [
        "generated/model-a/cat2/a sks cat on a red sofa.png"]
    assert "backpack/notes.png" in "\n".join(plain.warnings)  # a name that fits no prompt still fits none
    token = load_dreambooth(dreambooth, dreambooth / "token.jsonl", methods=[gen], unique_token="sks")
    with_token = {item.id: item for item in load_manifest(token.manifest)}
    assert with_token["backpack-01-a_sks_backpack_under_the_rain"].target_text == "a sks backpack under the rain"
    assert [len(i.edits) for i in with_token.values()] == [len(i.edits) for i in items.values()]
    other = load_dreambooth(dreambooth, dreambooth / "other.jsonl", methods=[gen], unique_token="zwx")
    assert sum(len(i.edits) for i in load_manifest(other.manifest)) == sum(len(i.edits) for i in items.values()) - 3


def test_editval_generation_code_names_are_found(editval):
    """EditVal's generation code (SDE_edit/edit_loader.py) saves <type>/<id>/<id>_<type>_<to>_<strength>.png
    beside <id>_unedited.png: each strength is an edit named <method>@<strength>; the unedited copy is not."""
    sde = editval / "edit_bench_data" / "sde_edit"
    for name in ("object_addition/100166/100166_object_addition_bag_0.3.png",
                 "object_addition/100166/100166_object_addition_bag_0.5.png",
                 "object_addition/100166/100166_object_addition_cup_0.3.png",
                 "object_addition/100166/100166_unedited.png",
                 "positional_addition/100166/100166_positional_addition_bag below_0.3.png",
                 "positional_addition/100166/100166_unedited.png"):
        save(sde / name, "purple")
    result = load_editval(editval, coco_dir=editval / "coco", methods=[sde])
    edits = {item.id: [(e.name, e.path) for e in item.edits] for item in load_manifest(result.manifest)}
    where = "edit_bench_data/sde_edit/object_addition/100166/100166_object_addition"
    assert edits == {
        "100166-object_addition-bag": [("sde_edit@0.3", f"{where}_bag_0.3.png"), ("sde_edit@0.5", f"{where}_bag_0.5.png")],
        "100166-object_addition-cup": [("sde_edit@0.3", f"{where}_cup_0.3.png")],
        "100166-positional_addition-bag_below": [
            ("sde_edit@0.3", "edit_bench_data/sde_edit/positional_addition/100166/"
                             "100166_positional_addition_bag below_0.3.png")]}
    assert "sde_edit: no output: 4" in "\n".join(result.warnings)  # of the 7 edits object.json asks for


@pytest.mark.parametrize(("edit_type", "value", "target", "instruction"), [
    ("object_addition", "books", "a photo of a bench and books", "add books"),
    ("object_addition", "sunglasses", "a photo of a bench and sunglasses", "add sunglasses"),
    ("object_addition", "wine glass", "a photo of a bench and a wine glass", "add a wine glass"),
    ("positional_addition", "shoes on top", "a photo of shoes on top of a bench", "add shoes on top of the bench"),
    ("positional_addition", "napkins to right", "a photo of napkins to the right of a bench",
     "add napkins to the right of the bench"),
    ("object_replacement", "orange", "a photo of an orange", "replace the bench with an orange"),
])
def test_editval_templates_put_no_article_before_a_plural(edit_type, value, target, instruction):
    """Values from EditVal's object.json: plurals (books, sunglasses, shoes, napkins) take no "a"."""
    from augclip_demo.batch.benchmarks.editval import describe_edit

    assert describe_edit("bench", edit_type, "", value) == (target, instruction)


def test_dreambooth_plural_class_takes_no_article(tmp_path):
    """DreamBooth's class list has `pink_sunglasses,glasses`: its source text is `a photo of glasses`."""
    root = tmp_path / "dataset"
    (root).mkdir()
    (root / "prompts_and_classes.txt").write_text(PROMPTS_AND_CLASSES.replace("backpack,backpack",
                                                                              "pink_sunglasses,glasses"))
    save(root / "pink_sunglasses" / "00.jpg")
    save(root / "gen" / "pink_sunglasses" / "00.png")
    (item,) = load_manifest(load_dreambooth(root, methods=[root / "gen"]).manifest)
    assert item.source_text == "a photo of glasses"
