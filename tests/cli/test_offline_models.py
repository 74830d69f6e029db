"""The offline CLIP models (random:tiny, the shipped shapes:tiny): doctor lists them, and a missing-weights
error names them."""

from __future__ import annotations

from pathlib import Path

import pytest

import augclip_demo
from augclip_demo.cli import main
from augclip_demo.inference import families, specs

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "examples" / "flower-pink"
#: Where the package keeps shapes:tiny, written out here rather than asked of the code under test.
SHIPPED = Path(augclip_demo.__file__).parent / "inference" / "shipped" / "shapes-tiny"


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("AUGCLIP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("AUGCLIP_DEVICE", "cpu")
    return tmp_path


def _ship(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"{}")


def test_doctor_lists_the_offline_models_and_whether_shapes_tiny_is_here(offline, capsys):
    main(["doctor", "--clip-model", "random:tiny"])
    out = capsys.readouterr().out
    block = out.split("offline CLIP models", 1)[1].split("features (", 1)[0]
    assert "random:tiny (built in): untrained" in block and "mean nothing" in block
    here = (SHIPPED / "open_clip_config.json").is_file() and any(
        (SHIPPED / name).is_file() for name in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"))
    shapes = next(line for line in block.splitlines() if line.strip().startswith("shapes:tiny"))
    assert ("present in" in shapes) == here and ("files not present" in shapes) == (not here)
    assert str(SHIPPED) in shapes and "synthetic shapes" in shapes


def test_a_shipped_model_counts_as_present_only_with_its_config_and_a_weight_file(monkeypatch, tmp_path):
    monkeypatch.setattr(specs, "_SHIPPED_DIR", tmp_path)
    states = {model.spec: model.present for model in families.offline_clip_models()}
    assert states == {"random:tiny": True, "shapes:tiny": False}
    _ship(tmp_path / "shapes-tiny", "open_clip_config.json")
    assert not {m.spec: m.present for m in families.offline_clip_models()}["shapes:tiny"]  # no weight file
    (tmp_path / "shapes-tiny" / "open_clip_model.safetensors").write_bytes(b"0")
    assert {m.spec: m.present for m in families.offline_clip_models()}["shapes:tiny"]


def test_the_how_to_fix_of_missing_clip_weights_names_the_offline_choices_that_exist(monkeypatch, tmp_path):
    monkeypatch.setattr(specs, "_SHIPPED_DIR", tmp_path)
    text = families.FAMILIES["clip"].how_to_fix("ViT-B-16/openai", None)
    assert "--clip-model random:tiny" in text and "shapes:tiny" not in text
    _ship(tmp_path / "shapes-tiny", "open_clip_config.json", "open_clip_model.safetensors")
    text = families.FAMILIES["clip"].how_to_fix("ViT-B-16/openai", None)
    assert "--clip-model shapes:tiny (toy model trained on synthetic shapes) or --clip-model random:tiny (untrained)" in text
    assert len(text) < 600  # the app's status area shows it whole


def test_score_offline_with_the_default_clip_says_which_model_runs_offline(offline, capsys):
    code = main(["score", "--source", str(EXAMPLE / "source.png"), "--edited", str(EXAMPLE / "well_edited.png"),
                 "--target", "a pink dahlia flower", "--clip-model", "ViT-B-16/openai"])
    err = capsys.readouterr().err
    assert code == 2 and "ViT-B-16/openai" in err and "--clip-model random:tiny" in err
    assert "Traceback" not in err


def test_score_with_shapes_tiny_absent_says_so_and_names_random_tiny(offline, monkeypatch, capsys):
    monkeypatch.setattr(specs, "_SHIPPED_DIR", offline / "empty")
    code = main(["score", "--source", str(EXAMPLE / "source.png"), "--edited", str(EXAMPLE / "well_edited.png"),
                 "--target", "a pink dahlia flower", "--clip-model", "shapes:tiny"])
    err = capsys.readouterr().err
    assert code == 2 and "shapes:tiny's files are not in this installation" in err
    assert "--clip-model random:tiny" in err


def test_a_batch_that_cannot_load_its_clip_leaves_no_results_file(offline, capsys):
    """The weights are missing: the run stops before its first item, names the offline models, and the
    results file it would have started is not left behind empty (protocol would read it as a run)."""
    out = offline / "outputs" / "results.jsonl"
    out.parent.mkdir()
    manifest = EXAMPLE.parent / "manifest.jsonl"
    assert main(["batch", str(manifest), "--out", str(out), "--clip-model", "ViT-B-16/openai", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "ViT-B-16/openai" in err and "--clip-model random:tiny" in err and "Traceback" not in err
    assert not out.exists() and not Path(str(out) + ".lock").exists()
    out.write_text('{"id": "earlier"}\n')  # a results file with records is never removed, even by a failed run
    assert main(["batch", str(manifest), "--out", str(out), "--clip-model", "ViT-B-16/openai", "--no-progress"]) == 2
    assert out.read_text() == '{"id": "earlier"}\n'
