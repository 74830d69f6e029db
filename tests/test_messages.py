"""Messages a user reads stay short (a few lines) and speak of files and flags, whatever the input's size.

"A few lines" is checked as: at most ``MAX_LINES`` lines once wrapped at 100 columns, as a terminal or
a toast shows them.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from PIL import Image

from augclip_demo.bpm.models import bpm_missing_weights, bpm_models_status, require_bpm_weights
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.errors import InputError, MissingWeightsError, WeightsUnavailableError
from augclip_demo.inference import get_encoder

MAX_LINES = 8


def wrapped_lines(message: str) -> int:
    return sum(max(1, len(textwrap.wrap(line, 100))) for line in message.splitlines())


@pytest.fixture()
def offline_settings(tmp_path, monkeypatch):
    """The published default models with an empty cache and no network: nothing can be loaded."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return Settings.from_env({}, device="cpu", cache_dir=tmp_path / "cache")


def test_a_missing_clip_model_says_what_provides_it_in_a_few_lines(offline_settings):
    with pytest.raises(WeightsUnavailableError) as info:
        get_encoder(offline_settings.replace(clip_model="ViT-B-16/openai")).load()
    message = str(info.value)
    assert wrapped_lines(message) <= MAX_LINES, message
    assert "augclip-demo download --clip ViT-B-16/openai" in message and "AUGCLIP_CLIP_CHECKPOINT" in message
    brief = info.value.brief()
    assert "\n" not in brief and len(brief) < 200
    assert brief.startswith("CLIP ViT-B-16/openai: ") and "`augclip-demo download --clip ViT-B-16/openai`" in brief
    assert "--clip-checkpoint PATH (AUGCLIP_CLIP_CHECKPOINT=PATH)" in brief


def test_bpm_names_every_missing_region_model_at_once(offline_settings):
    missing = bpm_missing_weights(offline_settings)
    assert [error.model.split()[0] for error in missing] == ["GroundingDINO", "SAM"]
    with pytest.raises(MissingWeightsError) as info:
        require_bpm_weights(offline_settings)
    message = str(info.value)
    lines = message.splitlines()
    assert lines[0] == "the weights of 2 models for BPM could not be loaded:"
    assert lines[1].startswith("- GroundingDINO IDEA-Research/grounding-dino-tiny: ") and "AUGCLIP_GDINO_MODEL" in lines[1]
    assert lines[2].startswith("- SAM vit_b: ") and "AUGCLIP_SAM_CHECKPOINT" in lines[2]
    assert all("`augclip-demo download --bpm`" in line for line in lines[1:])
    assert wrapped_lines(message) <= MAX_LINES, message
    available, reason = bpm_models_status(offline_settings)
    assert not available and "GroundingDINO" in reason and "SAM" in reason


def test_one_missing_region_model_keeps_its_full_message(offline_settings):
    settings = offline_settings.replace(gdino_model="random:tiny")
    with pytest.raises(WeightsUnavailableError) as info:
        require_bpm_weights(settings)
    assert not isinstance(info.value, MissingWeightsError) and info.value.model == "SAM vit_b"
    assert wrapped_lines(str(info.value)) <= MAX_LINES, str(info.value)


def test_triplets_without_em_edits_fail_with_a_short_message_however_many_items(tmp_path):
    from augclip_demo.batch.triplets import build_triplets

    Image.new("RGB", (32, 32), "white").save(tmp_path / "src.png")
    Image.new("RGB", (32, 32), "red").save(tmp_path / "gt.png")
    lines = [json.dumps({"id": f"item-{i:03d}-" + "x" * 60, "source": "src.png", "target_text": "a red square",
                         "edits": [{"path": "gt.png", "role": "gt"}]}) for i in range(120)]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        build_triplets(manifest)
    message = str(info.value)
    assert wrapped_lines(message) <= MAX_LINES, message
    assert "120 item(s) have no excessively modified (em) image" in message
    assert "--em-dir" in message and "and 117 more" in message


def test_cli_errors_speak_of_files_not_uploads(tmp_path, capsys):
    not_image = tmp_path / "notes.png"
    not_image.write_text("not an image")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    for source in (not_image, empty, tmp_path / "missing.png"):
        code = main(["score", "--source", str(source), "--edited", str(source), "--target", "a cat",
                     "--attributes", str(tmp_path / "none.json"), "--clip-model", "random:tiny", "--device", "cpu"])
        err = capsys.readouterr().err
        assert code != 0 and err.startswith("error: "), err
        assert "upload" not in err.lower(), err
        assert wrapped_lines(err) <= MAX_LINES, err
