"""Configuration: environment variables, overrides, validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from augclip_demo.config import ENVIRONMENT_VARIABLES, Settings
from augclip_demo.errors import ConfigError


def test_environment_then_overrides(tmp_path):
    env = {"AUGCLIP_CLIP_MODEL": "random:tiny", "AUGCLIP_DEVICE": "cpu", "AUGCLIP_CACHE_DIR": str(tmp_path),
           "AUGCLIP_CLIP_CHECKPOINT": "~/w.bin", "AUGCLIP_MAX_IMAGE_PIXELS": "1000", "OPENAI_API_KEY": "sk-secret"}
    settings = Settings.from_env(env)
    assert settings.clip_model == "random:tiny" and settings.device == "cpu"
    assert settings.cache_dir == tmp_path and settings.clip_checkpoint == Path("~/w.bin").expanduser()
    assert settings.max_image_pixels == 1000
    assert "sk-secret" not in str(settings.as_dict())
    overridden = Settings.from_env(env, clip_model="ViT-B-16/openai", device=None)
    assert overridden.clip_model == "ViT-B-16/openai" and overridden.device == "cpu"


def test_defaults_and_documentation():
    settings = Settings.from_env({})
    assert settings.clip_model == "ViT-B-16/openai" and settings.device == "auto"
    assert settings.cache_dir.name == "augclip-demo"
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    for name in ENVIRONMENT_VARIABLES:
        assert f"`{name}`" in page, f"{name} is not documented in docs/configuration.md"


@pytest.mark.parametrize("env, message", [
    ({"AUGCLIP_PRECISION": "fp8"}, "precision must be one of"),
    ({"AUGCLIP_MAX_IMAGE_PIXELS": "lots"}, "must be an integer"),
    ({"AUGCLIP_MAX_UPLOAD_MB": "big"}, "must be a number"),
])
def test_invalid_values(env, message):
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(env)


def test_unknown_override_is_refused():
    with pytest.raises(ConfigError, match="unknown setting"):
        Settings.from_env({}, colour="blue")
