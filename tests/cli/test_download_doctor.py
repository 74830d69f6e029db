"""``download`` and ``doctor`` against the local model hub (in-process, real HTTP)."""

from __future__ import annotations

import pytest

from augclip_demo.cli import main
from augclip_demo.inference.weights.fetch import sha256_of
from tests.support import published

HF_CLIP = f"hf-hub:{published.HF_HUB_CLIP_REPO}"


@pytest.fixture()
def configured(hub, online, monkeypatch):
    monkeypatch.setenv("AUGCLIP_CACHE_DIR", str(online))
    monkeypatch.setenv("AUGCLIP_CLIP_MODEL", HF_CLIP)
    monkeypatch.setenv("AUGCLIP_SAM_MODEL", "tiny")
    monkeypatch.setenv("AUGCLIP_SAM_URL", f"{hub.url}/files/{published.SAM_FILE}")
    monkeypatch.setenv("AUGCLIP_SAM_SHA256", sha256_of(hub.published["sam_path"]))
    monkeypatch.setenv("AUGCLIP_DEVICE", "cpu")
    return online


def test_download_fetches_checks_and_says_where_then_doctor_finds_it(configured, hub, capsys):
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"* clip  {HF_CLIP}: MISSING" in out and "augclip-demo download" in out and "cpu" in out
    before = hub.count()
    assert main(["download"]) == 0
    out = capsys.readouterr().out
    assert hub.count() > before
    assert f"ok: CLIP {HF_CLIP}" in out and "open_clip_model.safetensors" in out and str(configured) in out
    assert main(["doctor"]) == 1  # the BPM models are configured too and not fetched yet
    out = capsys.readouterr().out
    assert f"* clip  {HF_CLIP}: present, " in out and " MiB (see" in out and "(see the model's page)" in out
    assert "* sam   tiny: MISSING" in out and "download --bpm" in out
    assert "ViT-B-16/openai: MISSING (about 571 MiB; MIT" in out  # the table's facts for what is not here


def test_download_reports_a_refused_file_and_exits_2(configured, hub, capsys):
    hub.refuse(published.HF_HUB_CLIP_REPO, "open_clip_model.safetensors", 403)
    assert main(["download", "--clip", HF_CLIP]) == 2
    err = capsys.readouterr().err
    assert "FAILED" in err and "HTTP 403" in err and "open_clip_model.safetensors" in err


def test_doctor_touches_no_network(configured, hub, capsys):
    before = hub.count()
    main(["doctor"])
    assert hub.count() == before
    assert "only the disk was searched" in capsys.readouterr().out


@pytest.mark.slow
def test_download_bpm_fetches_grounding_dino_and_sam(configured, hub, hub_gdino, capsys):
    assert main(["download", "--bpm"]) == 0
    out = capsys.readouterr().out
    assert "ok: GroundingDINO IDEA-Research/grounding-dino-tiny" in out and "model.safetensors" in out
    assert "ok: SAM tiny (SHA-256 checked)" in out and published.SAM_FILE in out
    assert main(["doctor"]) == 0
    assert "all configured models are present" in capsys.readouterr().out


@pytest.mark.slow  # encodes the ~3,300-phrase vocabulary with the tiny model (~10 s on 2 cores)
def test_download_vocab_builds_the_store_ahead_then_finds_it(configured, hub, capsys):
    from augclip_demo.attributes.clip_vocab import clear_memory_cache

    clear_memory_cache()
    assert main(["download", "--vocab"]) == 0
    captured = capsys.readouterr()
    assert "phrases (encoded" in captured.out and "encoding the vocabulary once" in captured.err
    stores = list((configured / "clip_vocab").glob("*.npz"))
    assert len(stores) == 1 and stores[0].stat().st_size > 0
    clear_memory_cache()  # a later process: the store is read, nothing is encoded
    assert main(["download", "--vocab"]) == 0
    assert "phrases (disk" in capsys.readouterr().out


@pytest.mark.slow
def test_download_bpm_fast_fetches_owlvit_and_sam2_then_doctor_finds_the_fast_preset(configured, hub, monkeypatch,
                                                                                     tmp_path_factory, capsys):
    owl = published.write_owlvit(tmp_path_factory.mktemp("published-owlvit-cli"))
    sam2 = published.write_sam2(tmp_path_factory.mktemp("published-sam2-cli"))
    hub.add_folder(published.OWL_REPO, owl)
    hub.add_folder(published.SAM2_REPO, sam2)
    monkeypatch.setenv("AUGCLIP_BPM_PRESET", "fast")
    assert main(["download", "--bpm-fast"]) == 0
    out = capsys.readouterr().out
    assert f"ok: OWL-ViT {published.OWL_REPO}" in out and "merges.txt" in out and "vocab.json" in out
    assert f"ok: SAM 2 {published.SAM2_REPO}" in out
    assert "GroundingDINO" not in out  # the fast preset runs without it
    main(["doctor"])
    out = capsys.readouterr().out
    assert f"* owlvit {published.OWL_REPO}: present, " in out and f"* sam2  {published.SAM2_REPO}: present, " in out
