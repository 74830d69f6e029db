"""``python -m augclip_demo attributes`` and ``score --provider ...`` (in-process, offline)."""

from __future__ import annotations

import json

import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.cli import main
from tests.support.attribute_chat import paper_flow
from tests.support.chat_server import ChatServer

TINY_ARGS = ["--clip-model", "random:tiny", "--device", "cpu"]


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_CUSTOM_HEADERS", "AUGCLIP_ATTRIBUTE_PROVIDER",
                 "AUGCLIP_MLLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_list_providers(capsys):
    assert main(["attributes", "--list-providers"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(lines) == {"manual", "openai", "clip-vocab"}
    assert " no " in lines["openai"] and "OPENAI_API_KEY" in lines["openai"]
    assert "lower fidelity" in lines["clip-vocab"] and " yes " in lines["clip-vocab"]


@pytest.mark.slow
def test_clip_vocab_default_provider_saves_the_shared_format(scene_files, tmp_path, capsys):
    out_file = tmp_path / "attrs.json"
    code = main(["attributes", "--source", str(scene_files["source"]), "--target", "a red ball on green grass",
                 "--source-text", "a red ball", "--out", str(out_file), "--json", *TINY_ARGS])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = Attributes.load(out_file)
    assert printed == saved.to_dict()
    assert saved.source[0] == "a red ball" and saved.target[0] == "a red ball on green grass"
    assert saved.provenance.provider == "clip-vocab" and saved.provenance.lower_fidelity
    # the saved file is what --provider manual and score --attributes read back
    assert main(["attributes", "--source", str(scene_files["source"]), "--target", "x", "--provider", "manual",
                 "--attributes", str(out_file)]) == 0
    listing = capsys.readouterr().out
    assert f"source attributes ({len(saved.source)}):" in listing and "  - a red ball" in listing


@pytest.mark.slow
def test_openai_through_the_cli_against_a_local_server(scene_files, tmp_path, monkeypatch, capsys):
    with ChatServer(responder=paper_flow) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(["attributes", "--source", str(scene_files["source"]), "--target", "a ball on grass",
                     "--provider", "openai", "--mllm-model", "llava", "--samples", "2", "--seed", "5",
                     "--cache-dir", str(tmp_path)])
        assert code == 0
        out = capsys.readouterr().out
        assert "provider openai, model llava, 2 samples from seed 5" in out and "  - Grass is green" in out
        assert {r.body["model"] for r in server.requests} == {"llava"}
        assert sorted({r.body["seed"] for r in server.requests}) == [5, 6]
        seen = len(server.requests)
        code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                     "--target", "a ball on grass", "--provider", "openai", "--mllm-model", "llava",
                     "--cache-dir", str(tmp_path), *TINY_ARGS])
        assert code == 0 and len(server.requests) == seen + 3
        table = capsys.readouterr().out
        assert "provider openai, llava; MLLM-extracted" in table and "AugCLIP" in table


@pytest.mark.slow  # embeds the whole attribute vocabulary without a cache
def test_score_with_clip_vocab_and_no_cache(scene_files, tmp_path, capsys):
    code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 "--target", "a red ball on green grass", "--provider", "clip-vocab", "--no-cache",
                 "--cache-dir", str(tmp_path), *TINY_ARGS])
    assert code == 0
    assert "provider clip-vocab" in capsys.readouterr().out
    assert not (tmp_path / "attributes").exists()  # --no-cache wrote nothing


@pytest.mark.parametrize("args, message", [
    (["--provider", "openai"], "not configured: set OPENAI_API_KEY"),
    (["--provider", "clip-vocab", "--samples", "2"], "--samples and --seed apply to the openai provider only"),
    (["--provider", "manual"], "--provider manual needs --attributes FILE"),
    (["--provider", "nonsense"], "unknown attribute provider 'nonsense'"),
])
def test_errors_are_one_line(scene_files, capsys, args, message):
    code = main(["attributes", "--source", str(scene_files["source"]), "--target", "a cat", *args, *TINY_ARGS])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_source_and_target_are_required(capsys):
    assert main(["attributes", "--target", "a cat"]) == 2
    assert "--source is required" in capsys.readouterr().err
