"""The app's Batch tab through its ``/batch`` endpoint: gradio_client against ``python app.py`` (tiny model)."""

from __future__ import annotations

import csv
import json
import os
import zipfile
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from augclip_demo.batch.runner import BatchOptions, run_batch
from tests.support import APP_ZIP_LIMITS, EXAMPLES, TINY

pytestmark = pytest.mark.slow

ITEMS = ("flower-pink", "shapes-add-ball")  # two of the shipped examples: small and quick
METRICS = ["augclip", "clip_i", "l2"]


@pytest.fixture(scope="module")
def client(app_server) -> Client:
    return Client(app_server["url"], verbose=False)


def example_manifest(folder: Path, items=ITEMS) -> Path:
    lines = [line for line in (EXAMPLES / "manifest.jsonl").read_text().splitlines()
             if json.loads(line)["id"] in items]
    path = folder / "bench.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def example_zip(folder: Path, items=ITEMS, wrap: str | None = None) -> Path:
    """The examples' images as a user would zip them (optionally inside one top-level folder)."""
    path = folder / "images.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for item in items:
            for file in sorted((EXAMPLES / item).iterdir()):
                name = f"{item}/{file.name}"
                archive.write(file, f"{wrap}/{name}" if wrap else name)
    return path


def batch_args(manifest: Path, images: Path, metrics=METRICS, provider="manual", skip_invalid=False):
    return (handle_file(str(manifest)), handle_file(str(images)), metrics, provider, TINY, skip_invalid)


def test_batch_scores_match_the_runner_and_the_protocol_table_is_filled(client, tmp_path, tiny_encoder):
    manifest = example_manifest(tmp_path)
    summary, protocol, scores, files = client.predict(*batch_args(manifest, example_zip(tmp_path, wrap="upload")),
                                                      api_name="/batch")
    assert "2 item(s) scored, 0 failed" in summary and "untrained" in summary
    # The protocol table: the examples are gt / ep / em triplets, so AccBoth and the shares of wins.
    assert protocol["headers"][0] == "metric" and any("AccBoth" in h for h in protocol["headers"])
    assert [row[0] for row in protocol["data"]] == ["AugCLIP", "CLIP-I", "L2"]
    # The per-edit scores equal the batch runner's, run here on the examples' own folder.
    direct_out = tmp_path / "direct.jsonl"
    run_batch(EXAMPLES / "manifest.jsonl", direct_out, options=BatchOptions(metrics=METRICS, provider="manual"),
              encoder=tiny_encoder)
    direct = {(r["id"], e["name"]): e["metrics"] for r in map(json.loads, direct_out.read_text().splitlines())
              if r["id"] in ITEMS for e in r["edits"]}
    headers, rows = scores["headers"], scores["data"]
    assert len(rows) == 8 == len(direct)
    for row in rows:
        values = dict(zip(headers, row))
        expected = direct[(values["id"], values["name"])]
        assert values["status"] == "ok"
        assert values["AugCLIP"] == pytest.approx(expected["augclip"], abs=1e-4)
        assert values["L2"] == pytest.approx(expected["l2"], abs=1e-4)
    names = sorted(Path(f).name for f in files)
    assert names == ["bench-protocol.csv", "bench-protocol.json", "bench-results.csv", "bench-results.jsonl"]
    results_csv = next(f for f in files if f.endswith("results.csv"))
    with open(results_csv, newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 8


def test_batch_tab_offers_bpm_and_scores_it_like_the_runner(client, tmp_path, tiny_encoder):
    from augclip_demo.config import Settings
    from augclip_demo.ui.batch.layout import metric_choices

    assert ("BPM", "bpm") in metric_choices()
    manifest = example_manifest(tmp_path)
    summary, _, scores, _ = client.predict(*batch_args(manifest, example_zip(tmp_path), metrics=["clip_i", "bpm"]),
                                           api_name="/batch")
    assert "2 item(s) scored, 0 failed" in summary and "untrained" in summary
    # the app's server runs random:tiny GroundingDINO and SAM (seeded): the runner here gives the same BPM
    settings = Settings.from_env(clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")
    direct_out = tmp_path / "direct.jsonl"
    run_batch(EXAMPLES / "manifest.jsonl", direct_out, options=BatchOptions(metrics="clip_i,bpm"), settings=settings,
              encoder=tiny_encoder)
    direct = {(r["id"], e["name"]): e["metrics"] for r in map(json.loads, direct_out.read_text().splitlines())
              if r["id"] in ITEMS for e in r["edits"]}
    rows = [dict(zip(scores["headers"], row)) for row in scores["data"]]
    assert len(rows) == 8 and all(isinstance(row["BPM"], float) for row in rows)
    for row in rows:
        assert row["BPM"] == pytest.approx(direct[(row["id"], row["name"])]["bpm"], abs=1e-4)


def write_zip(path: Path, entries: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)  # kept as written (no path clean-up), like a hostile zip's entries
            info.compress_type = compression
            archive.writestr(info, data)
    return path


def refused(client: Client, manifest: Path, images: Path) -> str:
    with pytest.raises(Exception) as info:
        client.predict(*batch_args(manifest, images), api_name="/batch")
    return str(info.value)


def test_unsafe_and_oversized_zips_are_refused_and_the_server_keeps_serving(client, tmp_path):
    manifest = example_manifest(tmp_path, items=("flower-pink",))
    png = (EXAMPLES / "flower-pink" / "source.png").read_bytes()
    cases = {
        "dotdot": ({"flower-pink/source.png": png, "../escape.png": png}, "contains '..'"),
        "absolute": ({"/etc/evil.png": png}, "absolute path"),
        "many-files": ({f"f{i}.txt": b"x" for i in range(int(APP_ZIP_LIMITS["AUGCLIP_UPLOAD_MAX_FILES"]) + 1)},
                       "entries (files and folders), over the limit"),
        # A zip bomb in miniature: small compressed, over the uncompressed-size limit once expanded.
        "bomb": ({"zeros.bin": bytes(17 * 1024 * 1024)}, "expands to"),
        "big": ({"noise.bin": os.urandom(int(4.5 * 1024 * 1024))}, "over the upload limit"),
    }
    for name, (entries, expected) in cases.items():
        compression = zipfile.ZIP_STORED if name == "big" else zipfile.ZIP_DEFLATED
        message = refused(client, manifest, write_zip(tmp_path / f"{name}.zip", entries, compression))
        assert expected in message, (name, message)
        assert "Traceback" not in message
    not_zip = tmp_path / "not-a-zip.zip"
    not_zip.write_bytes(b"PK? no")
    assert "is not a zip file" in refused(client, manifest, not_zip)
    # Nothing escaped the upload folder, and the next good request works.
    assert not (tmp_path.parent / "escape.png").exists()
    summary, *_ = client.predict(*batch_args(manifest, example_zip(tmp_path, items=("flower-pink",))),
                                 api_name="/batch")
    assert "1 item(s) scored, 0 failed" in summary


def test_every_bad_manifest_line_is_reported_at_once(client, tmp_path):
    good = json.loads((EXAMPLES / "manifest.jsonl").read_text().splitlines()[0])
    lines = [json.dumps(good),
             json.dumps({**good, "id": "escape", "source": "../outside.png"}),
             "{not json",
             json.dumps({**good, "id": "no-target", "target_text": ""})]
    manifest = tmp_path / "broken.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    images = example_zip(tmp_path, items=("flower-pink",))
    message = refused(client, manifest, images)
    assert "broken.jsonl: 3 problem(s)" in message and "_uploaded" not in message
    assert "line 2" in message and "line 3" in message and "line 4" in message
    # With "skip invalid lines" the valid item is scored and the problems are listed in the summary.
    summary, _, scores, _ = client.predict(*batch_args(manifest, images, skip_invalid=True), api_name="/batch")
    assert "1 item(s) scored" in summary and "3 invalid manifest line problem(s) skipped" in summary
    assert {row[0] for row in scores["data"]} == {"flower-pink"}
