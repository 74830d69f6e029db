"""The command line, through the real entry point (a subprocess) and in-process for the error paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from augclip_demo.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def attrs_file(tmp_path: Path) -> Path:
    path = tmp_path / "attrs.json"
    path.write_text(json.dumps({"source_attributes": ["a red ball", "a white background"],
                                "target_attributes": ["green grass", "a red ball on grass"]}))
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "augclip_demo", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


@pytest.mark.slow  # a fresh interpreter imports torch and open_clip (~8 s)
def test_score_prints_a_table_with_best_marks(scene_files, attrs_file):
    proc = run_cli("score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                   str(scene_files["replaced"]), "--target", "a red ball on green grass", "--source-text", "a red ball",
                   "--attributes", str(attrs_file), "--clip-model", "random:tiny", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "UNTRAINED" in out and "AugCLIP" in out and "CLIPdir" in out and "faithful.png" in out
    assert out.count("*") >= 5  # one best mark per metric column, plus the legend
    assert "prefers edit" in out


def test_score_json_output_and_files(scene_files, attrs_file, tmp_path, capsys):
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 "--target", "a red ball on grass", "--attributes", str(attrs_file), "--clip-model", "random:tiny",
                 "--device", "cpu", "--json", "--out", str(out_json), "--csv", str(out_csv), "--classifier", "lda"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["untrained"] is True and printed["options"]["classifier"] == "lda"
    assert printed["edits"][0]["metrics"]["clip_dir"] is None
    assert json.loads(out_json.read_text())["edits"][0]["metrics"] == printed["edits"][0]["metrics"]
    assert out_csv.read_text().startswith("edit,name,augclip")


@pytest.mark.slow  # a fresh interpreter imports torch and open_clip (~8 s)
def test_errors_exit_nonzero_with_one_line():
    proc = run_cli("score", "--source", "missing.png", "--edited", "also-missing.png", "--target", "x",
                   "--clip-model", "random:tiny", "--device", "cpu")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: missing.png: file not found"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--clip-model", "ViT-Z-1/openai"], "unknown open_clip architecture"),
        (["--attributes", "nope.json"], "attributes file nope.json: not found"),
        (["--target", " "], "target text is empty"),
        (["--provider", "bogus"], "unknown attribute provider"),
    ],
)
def test_error_messages(scene_files, attrs_file, capsys, extra, message):
    args = ["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
            "--target", "grass", "--attributes", str(attrs_file), "--clip-model", "random:tiny", "--device", "cpu"]
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    if "--provider" in extra:
        args = [a for a in args if a not in ("--attributes", str(attrs_file))]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
