"""Same inputs, same numbers to 1e-9: in any process, batch position, cache state and after a resume.

Two things used to break this: libsvm's loose default tolerance (tests/metrics/test_augclip.py
covers the sample order) and embeddings that moved by ~1e-7 with the size of the batch they were
encoded in. Here: (1) an embedding equals open_clip's own output for a forward pass of the encoder's
fixed size, bit for bit (a text reads 8, 16 or 32 positions when that holds it, equal to the full
77-token pass to float rounding), whatever its batch mates, position, path (file / decoded pixels)
or cache state; (2) the CLI gives the same scores in separate processes with an empty or a filled cache, and
in a batch run that was interrupted and resumed, reordered, or compared with ``score``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from augclip_demo.inference import ClipEncoder
from augclip_demo.inference.cpu_matmul import cpu_matmul
from tests.support import EXAMPLES, ROOT, TINY, draw_scene

TEXTS = [f"a {color} {thing}" for color in ("red", "green", "pale blue", "dark") for thing in ("ball", "cup on a table", "dog")]
# Longer than 16 and than 32 tokens: encoded in the passes of another length than the short ones.
LONG_TEXTS = ["a wooden table by a sunny window with a red cup a green ball and a small grey dog asleep on a blue rug",
              " ".join(["a tall glass vase full of fresh yellow tulips"] * 5)]


def fresh_encoder() -> ClipEncoder:
    return ClipEncoder(TINY, device="cpu").load()


def full_pass_rows(encoder: ClipEncoder, texts: list[str]) -> np.ndarray:
    """open_clip's own encode_text over all 77 positions, one text at a time in a pass of the fixed size."""
    rows = []
    for text in texts:
        tokens = encoder.tokenizer([text] * encoder.text_batch_size)
        with torch.inference_mode(), cpu_matmul(encoder.matmul):
            features = encoder.model.encode_text(tokens).float()[0]
        rows.append((features / features.norm()).numpy())
    return np.stack(rows).astype(np.float32)


def direct_text_rows(encoder: ClipEncoder, texts: list[str]) -> np.ndarray:
    """open_clip's own encode_text (no encoder code path), one text at a time in a pass of the fixed size,
    reading the positions the encoder's pass for that text reads: a copy of the model with its position
    table and causal mask cut to that length. With the encoder's matrix kernels (part of the numerics,
    like the precision)."""
    import copy

    models: dict[int, torch.nn.Module] = {}
    rows = []
    for text in texts:
        length = encoder._text_pass_length(text)
        if length not in models:
            model = copy.deepcopy(encoder.model)
            model.positional_embedding = torch.nn.Parameter(model.positional_embedding[:length].clone(),
                                                            requires_grad=False)
            model.attn_mask = model.attn_mask[:length, :length].clone()
            models[length] = model
        tokens = encoder.tokenizer([text] * encoder.text_batch_size)[:, :length]
        with torch.inference_mode(), cpu_matmul(encoder.matmul):
            features = models[length].encode_text(tokens).float()[0]
        rows.append((features / features.norm()).numpy())
    return np.stack(rows).astype(np.float32)


@pytest.mark.slow
def test_text_rows_do_not_depend_on_batch_mates_position_or_cache():
    encoder = fresh_encoder()
    expected = direct_text_rows(encoder, TEXTS[:3])
    alone = np.stack([fresh_encoder().encode_text(t) for t in TEXTS[:3]])
    np.testing.assert_array_equal(alone, expected)
    shuffled = TEXTS[::-1]  # 12 texts: more than one forward pass, the three at other positions
    mixed = fresh_encoder().encode_texts(shuffled)
    np.testing.assert_array_equal(mixed[[shuffled.index(t) for t in TEXTS[:3]]], expected)
    warm = fresh_encoder()
    warm.encode_texts([TEXTS[1]])  # one cached, the others encoded with new batch mates
    np.testing.assert_array_equal(warm.encode_texts(TEXTS[:3] + ["something else"])[:3], expected)


@pytest.mark.slow
def test_texts_of_every_pass_length_match_the_full_context_pass():
    """Short texts read 8, 16 or 32 tokens instead of 77 (ClipEncoder._encode_text_batch); the rows stay the model's own."""
    encoder = fresh_encoder()
    assert encoder._text_lengths() == (8, 16, 32, 77)
    texts = [TEXTS[0], LONG_TEXTS[0], TEXTS[7], LONG_TEXTS[1]]
    assert [encoder._text_pass_length(t) for t in texts] == [8, 32, 16, 77]
    together = encoder.encode_texts(texts)
    np.testing.assert_array_equal(together, direct_text_rows(encoder, texts))  # open_clip's own, cut short
    # and the embedding of the full 77-token pass (a shorter product may round differently)
    np.testing.assert_allclose(together, full_pass_rows(encoder, texts), rtol=0, atol=1e-6)
    alone = np.stack([fresh_encoder().encode_text(t) for t in texts])
    np.testing.assert_array_equal(together, alone)  # a row never depends on texts of other lengths in the call
    reordered = fresh_encoder().encode_texts(texts[::-1] + TEXTS[5:])
    np.testing.assert_array_equal(reordered[:4][::-1], together)


def test_pass_length_from_a_token_row_equals_the_count_of_the_text_alone():
    """encode_texts tokenizes once and reads each pass length off the row; the per-text count is the reference."""
    encoder = fresh_encoder()
    texts = ["!", "wow!", "!$", "a price tag of 5!$", "a red cup", "an orange dahlia flower with a yellow centre and a green stem",
             " ".join(["petal"] * 80), TEXTS[0], LONG_TEXTS[0], LONG_TEXTS[1], "an <end_of_text> token inside the text"]
    rows = encoder._token_rows(texts)
    assert set(rows) == set(texts)
    assert int(rows["!$"][1]) == 0  # '!' before '$' is id 0: a zero inside a text is not padding
    counts = [encoder.token_count(t) for t in texts]
    expected = [next((n for n in (8, 16, 32, 77) if c <= n), 77) for c in counts]
    assert expected == [encoder._text_pass_length(t) for t in texts] and 77 in expected and 8 in expected
    assert encoder._pass_lengths_of_rows(rows) == dict(zip(texts, expected))


@pytest.mark.slow  # encodes on several threads with a fresh encoder
def test_threads_on_a_fresh_encoder_get_the_rows_of_one_thread():
    """The first calls of a loaded encoder, from several threads at once, pick the same pass lengths."""
    import threading

    expected = fresh_encoder().encode_texts(TEXTS)  # one thread: the reference
    for _ in range(3):
        encoder, rows, errors = fresh_encoder(), {}, []
        start = threading.Barrier(4)

        def encode(index: int, encoder: ClipEncoder = encoder, start: threading.Barrier = start, rows: dict = rows,
                   errors: list = errors) -> None:
            try:
                start.wait()
                rows[index] = encoder.encode_texts(TEXTS[index::4])
            except Exception as exc:  # reported below, with the thread's index
                errors.append((index, exc))

        threads = [threading.Thread(target=encode, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        for index in range(4):
            np.testing.assert_array_equal(rows[index], expected[index::4])


def test_prefix_passes_only_for_causal_towers_pooled_at_the_end_token():
    from augclip_demo.inference.clip_encoder import _prefix_is_exact

    model = fresh_encoder().model
    assert _prefix_is_exact(model, 77)
    model.text_pool_type = "last"  # a tower pooled at the last position reads the padding: no prefix
    assert not _prefix_is_exact(model, 77)
    model.text_pool_type = "argmax"
    model.attn_mask = torch.zeros(77, 77)  # attending both ways: padding reaches the end token
    assert not _prefix_is_exact(model, 77)


@pytest.mark.slow
def test_image_rows_do_not_depend_on_batch_mates_path_or_cache():
    from augclip_demo.io import open_image

    pictures = [draw_scene((90 + 7 * i, 80), bg, [("ellipse", (10, 10, 50, 60), fg)])
                for i, (bg, fg) in enumerate([("white", "red"), ("green", "blue"), ("black", "yellow"),
                                              ("grey", "red"), ("white", "green")] * 2)]
    loaded = [open_image(p) for p in pictures]
    encoder = fresh_encoder()
    pixels = torch.stack([encoder.preprocess(loaded[2].image)] * encoder.image_batch_size)
    with torch.inference_mode(), cpu_matmul(encoder.matmul):
        direct = encoder.model.encode_image(pixels).float()[0]
    expected = (direct / direct.norm()).numpy().astype(np.float32)
    np.testing.assert_array_equal(fresh_encoder().encode_images([loaded[2]])[0], expected)
    np.testing.assert_array_equal(fresh_encoder().encode_images(loaded)[2], expected)  # 10 images: two passes
    prepared = fresh_encoder()
    rows = prepared.encode_preprocessed([prepared.preprocess_image(x) for x in loaded[::-1]])
    np.testing.assert_array_equal(rows[len(loaded) - 1 - 2], expected)


# ---------------------------------------------------------------------------------------------- CLI, processes
def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AUGCLIP_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "augclip_demo", *args, "--clip-model", TINY], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def score_json(example: str, cache: Path, *extra: str) -> dict:
    spec = json.loads((EXAMPLES / example / "example.json").read_text())
    edits = [str(EXAMPLES / e["path"]) for e in spec["edits"]]
    out = cli("score", "--source", str(EXAMPLES / spec["source"]), "--edited", *edits, "--target", spec["target_text"],
              "--source-text", spec["source_text"], "--all-metrics", "--json", *extra, cache=cache)
    return json.loads(out.stdout)


def metric_table(report: dict) -> dict[tuple[int, str], float]:
    return {(e["index"], k): v for e in report["edits"] for k, v in e["metrics"].items() if v is not None}


def assert_same_numbers(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and a
    worst = max(abs(a[k] - b[k]) for k in a)
    assert worst <= 1e-9, f"max |diff| {worst:.3g}"


@pytest.mark.slow
def test_scores_agree_across_processes_and_attribute_cache_states(tmp_path):
    """clip-vocab with an empty cache, then filled, then its attributes from a file: one set of numbers."""
    cache = tmp_path / "cache"
    empty = score_json("flower-pink", cache, "--provider", "clip-vocab")
    assert any(cache.rglob("*")), "the first run should fill the cache"
    filled = score_json("flower-pink", cache, "--provider", "clip-vocab")
    attributes = tmp_path / "attributes.json"
    attributes.write_text(json.dumps({key: empty["attributes"][key] for key in ("source_attributes", "target_attributes")}))
    from_file = score_json("flower-pink", tmp_path / "other-cache", "--attributes", str(attributes))
    assert filled["attributes"]["source_attributes"] == empty["attributes"]["source_attributes"]
    assert_same_numbers(metric_table(empty), metric_table(filled))
    assert_same_numbers(metric_table(empty), metric_table(from_file))


def write_manifest(items: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def batch_numbers(results: Path) -> dict[tuple[str, int, str], float]:
    table = {}
    for line in results.read_text().splitlines():
        record = json.loads(line)
        for edit in record["edits"]:
            for key, value in edit["metrics"].items():
                if value is not None:
                    table[(record["id"], edit["index"], key)] = value
    return table


@pytest.mark.slow
def test_batch_resumed_reordered_and_single_score_agree(tmp_path):
    items = [json.loads(line) for line in (EXAMPLES / "manifest.jsonl").read_text().splitlines() if line.strip()]
    shutil.copytree(EXAMPLES, tmp_path / "examples")  # manifests take paths relative to their folder
    forward = write_manifest(items, tmp_path / "examples" / "forward.jsonl")
    reverse = write_manifest(items[::-1], tmp_path / "examples" / "reverse.jsonl")
    cache = tmp_path / "cache"
    cli("batch", str(forward), "--out", str(tmp_path / "whole.jsonl"), "--metrics", "all", "--no-progress", cache=cache)
    whole = batch_numbers(tmp_path / "whole.jsonl")
    # An interrupted run: only the first item reached the results file; the rerun, in the reverse order and with a
    # cold cache of its own, resumes the rest (one process for both: order and resume each would move a number).
    first_line = (tmp_path / "whole.jsonl").read_text().splitlines()[0]
    (tmp_path / "resumed.jsonl").write_text(first_line + "\n")
    done = cli("batch", str(reverse), "--out", str(tmp_path / "resumed.jsonl"), "--metrics", "all", "--no-progress",
               cache=tmp_path / "cache-2")
    assert "1 already done" in done.stdout + done.stderr
    resumed = batch_numbers(tmp_path / "resumed.jsonl")
    assert_same_numbers(whole, resumed)
    assert [json.loads(line)["id"] for line in (tmp_path / "resumed.jsonl").read_text().splitlines()[1:]] == [
        item["id"] for item in items[:0:-1]]  # the rest were scored in the reverse order
    # The single-evaluation path (files, not decoded pixels; its own process) gives the same numbers.
    single = score_json(items[2]["id"], tmp_path / "cache-4", "--attributes", str(EXAMPLES / items[2]["attributes"]))
    batch_item = {(i, k): v for (item_id, i, k), v in whole.items() if item_id == items[2]["id"]}
    assert_same_numbers({k: v for k, v in metric_table(single).items() if k in batch_item}, batch_item)
