"""The Parquet presets of the public human-vote sets, on shards written with each card's columns and types.

GenAI-Bench (``image_edition``: its dataset card's features; the vote labels of its inference.py),
EditReward-Bench (the columns EditReward's evaluate/inference_{2,3,4}pair_hf.py read; rankings as they
publish them) and ImagenHub's text-guided editing (the card's features; the rater TSVs of
eval/human_ratings). Every image cell holds real PNG bytes.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from PIL import Image

from augclip_demo.batch.benchmarks import load_parquet
from augclip_demo.batch.manifest import load_manifest
from augclip_demo.cli import main
from augclip_demo.errors import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # the Hub's Image feature


def png(color: str) -> dict:
    buffer = io.BytesIO()
    Image.new("RGB", (24, 24), color).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def write(path: Path, rows: list[dict], schema: list[tuple[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(schema)), path, row_group_size=3)
    return path


# ---------------------------------------------------------------------------------------------- GenAI-Bench
GENAI_SCHEMA = [("source_prompt", pa.string()), ("target_prompt", pa.string()), ("instruct_prompt", pa.string()),
                ("source_image", IMAGE), ("left_model", pa.string()), ("left_output_image", IMAGE),
                ("right_model", pa.string()), ("right_output_image", IMAGE), ("vote_type", pa.string())]


def genai_row(vote: str, left: str = "MagicBrush", right: str = "InstructPix2Pix") -> dict:
    return {"source_prompt": "a dog on grass", "target_prompt": "a cat on grass", "instruct_prompt": "make it a cat",
            "source_image": png("white"), "left_model": left, "left_output_image": png("red"),
            "right_model": right, "right_output_image": png("blue"), "vote_type": vote}


def test_genai_bench_votes_become_human_judgments_and_ties_are_kept(tmp_path):
    votes = ["leftvote", "rightvote", "tievote", "bothbad_vote", "leftvote"]
    shard = write(tmp_path / "image_edition" / "test_v1-00000-of-00001.parquet", [genai_row(v) for v in votes],
                  GENAI_SCHEMA)
    result = load_parquet([shard.parent], preset="genai-bench")
    items = load_manifest(result.manifest)
    assert len(items) == 5 and result.n_edits == 10  # every vote is an item, ties and both-bad included
    expected = {"leftvote": (0, (1.0, 0.0)), "rightvote": (1, (0.0, 1.0)), "tievote": (None, (0.5, 0.5)),
                "bothbad_vote": (None, (0.0, 0.0))}
    for item, vote in zip(items, votes):
        preferred, scores = expected[vote]
        assert item.human is not None and item.human.preferred == preferred and item.human.scores == scores
        assert item.meta["vote"] == vote
        assert [e.name for e in item.edits] == ["MagicBrush", "InstructPix2Pix"]
        assert item.edits[0].resolved.read_bytes() == png("red")["bytes"]
        assert item.source_text == "a dog on grass" and item.target_text == "a cat on grass"
        assert item.instruction == "make it a cat" and item.dataset == "genai-bench"
    assert [i.meta["vote_kind"] for i in items] == ["win", "win", "tie", "both_bad", "win"]
    note = "\n".join(result.notes)
    assert "1 both bad" in note and "1 tie" in note and "3 win" in note


def test_genai_bench_unknown_vote_is_counted_not_guessed(tmp_path):
    shard = write(tmp_path / "ge.parquet", [genai_row("leftvote"), genai_row("left")], GENAI_SCHEMA)
    result = load_parquet([shard], preset="genai-bench")
    assert len(load_manifest(result.manifest)) == 1
    assert "rows whose vote cannot be read (not written): 1" in "\n".join(result.warnings)
    with pytest.raises(InputError, match="--method-dir does not apply"):
        load_parquet([shard], preset="genai-bench", methods=[tmp_path])


# ---------------------------------------------------------------------------------------------- EditReward-Bench
EDITREWARD_SCHEMA = [("id", pa.string()), ("instruction", pa.string()), ("source_image", IMAGE),
                     ("candidate_1", IMAGE), ("candidate_2", IMAGE), ("ranking", pa.string()),
                     ("comparison_type", pa.string()), ("score_1", pa.float64()), ("score_2", pa.float64()),
                     ("model_1", pa.string()), ("model_2", pa.string())]


def editreward_row(key: str, ranking: str, comparison: str, models: tuple[str, str]) -> dict:
    return {"id": key, "instruction": "add a hat", "source_image": png("white"), "candidate_1": png("red"),
            "candidate_2": png("blue"), "ranking": ranking, "comparison_type": comparison,
            "score_1": 6.0, "score_2": 4.0, "model_1": models[0], "model_2": models[1]}


def test_editreward_bench_pairs_of_a_ranked_group_keep_its_order(tmp_path):
    # a 3-candidate group published as its three pairs (3pair folder), and a 2pair tie
    rows = [editreward_row("g1-AvsB", "B>A", "AvsB", ("flux", "gpt")),
            editreward_row("g1-AvsC", "A>C", "AvsC", ("flux", "step1x")),
            editreward_row("g1-BvsC", "B>C", "BvsC", ("gpt", "step1x")),
            editreward_row("p7", "A=B", "", ("qwen", "bagel"))]
    write(tmp_path / "3pair" / "train-00000-of-00002.parquet", rows, EDITREWARD_SCHEMA)
    result = load_parquet([tmp_path / "3pair"], preset="editreward-bench")
    items = {i.id: i for i in load_manifest(result.manifest)}
    assert items["g1-AvsB"].human.preferred == 1 and items["g1-AvsB"].human.scores == (0.0, 1.0)
    assert items["g1-AvsC"].human.preferred == 0 and items["g1-AvsC"].meta["candidates"] == ["A", "C"]
    assert [e.name for e in items["g1-BvsC"].edits] == ["gpt", "step1x"]
    tie = items["p7"]
    assert tie.human.preferred is None and tie.human.scores == (0.5, 0.5) and tie.meta["vote_kind"] == "tie"


def test_editreward_ranking_of_a_whole_group_and_two_pair_shards(tmp_path):
    # a 2pair shard lacks candidate_3 / candidate_4 and the model columns: the preset reads what is there
    schema = [f for f in EDITREWARD_SCHEMA if not f[0].startswith("model_")]
    rows = [{k: v for k, v in editreward_row("a", "A=B=Bad", "", ("x", "y")).items() if not k.startswith("model_")}]
    write(tmp_path / "2pair" / "train-00000-of-00001.parquet", rows, schema)
    (item,) = load_manifest(load_parquet([tmp_path / "2pair"], preset="editreward-bench").manifest)
    assert item.human.scores == (0.0, 0.0) and item.meta["vote_kind"] == "both_bad"
    assert [e.name for e in item.edits] == ["editreward-bench-A", "editreward-bench-B"]
    # a group of four in one row, ranked with a tie: every pair keeps its order
    group = [("id", pa.string()), ("instruction", pa.string()), ("source_image", IMAGE), ("candidate_1", IMAGE),
             ("candidate_2", IMAGE), ("candidate_3", IMAGE), ("candidate_4", IMAGE), ("ranking", pa.string())]
    row = {"id": "g", "instruction": "x", "source_image": png("white"), "candidate_1": png("red"),
           "candidate_2": png("blue"), "candidate_3": png("green"), "candidate_4": png("black"), "ranking": "C>A=D>B"}
    write(tmp_path / "4pair" / "g.parquet", [row], group)
    (item,) = load_manifest(load_parquet([tmp_path / "4pair"], preset="editreward-bench").manifest)
    a, b, c, d = item.human.scores
    assert c > a == d > b and item.human.preferred == 2 and item.meta["vote_kind"] == "ranking"


# ---------------------------------------------------------------------------------------------- ImagenHub
IMAGENHUB_SCHEMA = [("img_id", pa.string()), ("turn_index", pa.int32()), ("source_img", IMAGE),
                    ("mask_img", IMAGE), ("instruction", pa.string()), ("source_global_caption", pa.string()),
                    ("target_global_caption", pa.string()), ("target_local_caption", pa.string()),
                    ("target_img", IMAGE)]


def test_imagenhub_ratings_score_each_models_output(tmp_path):
    rows = [{"img_id": img, "turn_index": turn, "source_img": png("white"), "mask_img": png("black"),
             "instruction": "make the sky pink", "source_global_caption": "a beach",
             "target_global_caption": "a beach under a pink sky", "target_local_caption": "pink sky",
             "target_img": png("pink")} for img, turn in (("100081", 1), ("100558", 1))]
    root = tmp_path / "imagenhub"
    write(root / "data" / "filtered-00000-of-00002.parquet", rows, IMAGENHUB_SCHEMA)
    for model, color in (("MagicBrush", "red"), ("SDEdit", "blue")):
        for img in ("100081", "100558"):
            (root / "museum" / model).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (24, 24), color).save(root / "museum" / model / f"sample_{img}_1.jpg")
    header = "uid\tCycleDiffusion\tMagicBrush\tSDEdit\n"
    (root / "r1.tsv").write_text(header + "sample_100081_1.jpg\t[0, 0]\t[0.5, 1]\t[1, 0.5]\n"
                                 "sample_100558_1.jpg\t[0,0]\t[1, 1]\t[0, 1]\n"
                                 "sample_999_1.jpg\t[0,0]\t[1, 1]\t[0, 1]\n")
    (root / "r2.tsv").write_text(header + "sample_100081_1.jpg\t[0,0]\t[1,1]\t[0.5,0.5]\n")
    result = load_parquet([root / "data"], root / "ih.jsonl", preset="imagenhub-edit",
                          methods=[root / "museum" / "MagicBrush", root / "museum" / "SDEdit"],
                          ratings=[root / "r1.tsv", root / "r2.tsv"])
    first, second = load_manifest(result.manifest)
    assert first.id == "100081-1" and first.target_text == "a beach under a pink sky"
    # ImagenHub's overall: sqrt(SC x PQ) per rater, then the raters' mean
    assert first.human.scores == pytest.approx(((math.sqrt(0.5) + 1.0) / 2, (math.sqrt(0.5) + 0.5) / 2))
    assert second.human.scores == pytest.approx((1.0, 0.0))
    assert first.meta["ratings"]["MagicBrush"]["sc"] == [0.5, 1.0]
    assert "rated rows not in the shards: 1 (sample_999_1)" in "\n".join(result.warnings)
    sc = load_parquet([root / "data"], root / "sc.jsonl", preset="imagenhub-edit", rating="sc",
                      methods=[root / "museum" / "MagicBrush"], ratings=[root / "r1.tsv"])
    assert [i.human.scores for i in load_manifest(sc.manifest)] == [(0.5,), (1.0,)]
    (root / "bad.tsv").write_text(header + "sample_100081_1.jpg\t[0,0]\t[2, 1]\t[0, 0]\n")
    assert main(["manifest", "parquet", str(root / "data"), "--preset", "imagenhub-edit", "--out",
                 str(root / "x.jsonl"), "--method-dir", str(root / "museum" / "SDEdit"), "--ratings",
                 str(root / "bad.tsv")]) == 2
