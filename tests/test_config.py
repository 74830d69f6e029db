"""Configuration: environment variables, overrides, validation."""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from augclip_demo.config import (
    AUDIENCES,
    ENVIRONMENT_VARIABLES,
    SETTING,
    SETTINGS,
    Settings,
    configuration_markdown,
)
from augclip_demo.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


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


def test_the_checked_in_page_is_the_generated_one():
    """docs/configuration.md comes from the declarations: regenerate it with
    ``python -m augclip_demo.config --markdown > docs/configuration.md``."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == configuration_markdown(), "docs/configuration.md is stale: regenerate it (see this test's doc)"
    done = subprocess.run([sys.executable, "-m", "augclip_demo.config", "--markdown"], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout == page


def test_one_declaration_per_setting():
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    assert [s.field for s in SETTINGS] == list(SETTING) and set(SETTING) == set(fields)
    assert len({s.env for s in SETTINGS}) == len(SETTINGS) and all(s.env.startswith("AUGCLIP_") for s in SETTINGS)
    defaults = Settings()
    for spec in SETTINGS:
        assert spec.audience in AUDIENCES, spec.field
        assert spec.help and "(default" not in spec.help, f"{spec.field}: the default is added from the declaration"
        assert (spec.check is None) == (not spec.allowed), f"{spec.field}: a check says what it allows"
        if spec.factory is None:
            assert getattr(defaults, spec.field) == spec.default, spec.field
        assert spec.accepts(getattr(defaults, spec.field)), f"{spec.field}: its default fails its own check"
    assert "OPENAI_API_KEY" not in {s.env for s in SETTINGS} and "api_key" not in fields  # secrets are no settings


def test_the_page_separates_what_a_user_sets_from_operator_limits():
    page = configuration_markdown()
    user = page[page.index("## Settings you set"):page.index("## Models, downloads and services")]
    limits = page[page.index("## Operator limits"):page.index("## Other variables")]
    users = [s for s in SETTINGS if s.audience == "user"]
    assert 5 <= len(users) <= 12  # a handful
    for spec in SETTINGS:
        row = f"| `{spec.env}` |"
        assert page.count(row) == 1, spec.env
        assert (row in user) == (spec.audience == "user") and (row in limits) == (spec.audience == "limit")
    for name in ("AUGCLIP_MAX_EDITS", "AUGCLIP_MAX_REQUEST_PIXELS", "AUGCLIP_MAX_IMAGE_SIDE", "AUGCLIP_CONCURRENCY"):
        assert f"| `{name}` |" in limits
    for name in ("AUGCLIP_CLIP_MODEL", "AUGCLIP_DEVICE", "AUGCLIP_CACHE_DIR"):
        assert f"| `{name}` |" in user
    assert "| `OPENAI_API_KEY` |" in page[page.index("## Other variables"):]


@pytest.mark.parametrize("env, message", [
    ({"AUGCLIP_JUDGE_SAMPLES": "17"}, "judge_samples must be from 1 to 16, got '17' (from AUGCLIP_JUDGE_SAMPLES)"),
    ({"AUGCLIP_BPM_PRESET": "turbo"}, "bpm_preset must be one of standard, fast, got 'turbo' (from AUGCLIP_BPM_PRESET)"),
    ({"AUGCLIP_SAM_SHA256": "abc"}, "sam_sha256 must be 64 hexadecimal digits, got 'abc' (from AUGCLIP_SAM_SHA256)"),
    ({"AUGCLIP_MAX_C": "inf"}, "max_c must be a finite number of at least 0.0001, got 'inf' (from AUGCLIP_MAX_C)"),
    ({"AUGCLIP_CONCURRENCY": "2.5"}, "AUGCLIP_CONCURRENCY must be an integer, got '2.5'"),
])
def test_a_bad_variable_names_itself_its_value_and_what_is_allowed(env, message):
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert str(info.value) == message


def test_every_numeric_variable_refuses_text():
    for spec in SETTINGS:
        if spec.kind in (int, float):
            with pytest.raises(ConfigError, match=f"^{spec.env} must be an? (integer|number), got 'many'$"):
                Settings.from_env({spec.env: "many"})


def test_overrides_are_checked_as_the_environment_is():
    with pytest.raises(ConfigError, match="^max_edits must be a positive integer, got 0$"):  # has a flag
        Settings.from_env({}, max_edits=0)
    with pytest.raises(ConfigError, match=r"^max_text_chars must be a positive integer, got -1 "
                                          r"\(set with AUGCLIP_MAX_TEXT_CHARS\)$"):  # environment only
        Settings().replace(max_text_chars=-1)
    assert Settings.from_env({"AUGCLIP_DEVICE": "  "}).device == "auto"  # blank is unset


def test_cli_help_comes_from_the_declaration():
    from augclip_demo.cli import build_parser

    def flat(text: str) -> str:
        return " ".join(text.split())

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts = {name: flat(sub.format_help()) for name, sub in subparsers.choices.items()}
    assert flat(SETTING["clip_model"].cli_help) in texts["score"]
    assert flat(SETTING["judge_samples"].cli_help) in texts["score"]
    assert flat(SETTING["hatie_dino"].cli_help) in texts["batch"]
    assert flat(SETTING["study_db"].cli_help) in texts["study"]


# Modules that may read the environment: the edges, which build a Settings with from_env and pass it down, and
# the readers of variables that are not settings. Everything else takes settings or explicit values, so a bad
# variable of one part (say the judge's) never fails unrelated work deep inside.
ENVIRONMENT_READERS = {
    "config.py": "declares and reads the settings; the study token (a secret) and XDG_CACHE_HOME",
    "cli/common.py": "edge: the command line",
    "cli/doctor.py": "edge: the command line (also says whether HF_TOKEN is set)",
    "cli/hatie.py": "edge: the command line",
    "cli/study.py": "edge: the command line",
    "ui/app.py": "edge: the web app (and GRADIO_SERVER_NAME)",
    "ui/launch.py": "edge: python app.py (and Gradio's and Spaces' variables)",
    "pipeline/evaluator.py": "edge: the Evaluator's default settings, the library's entry point",
    "llm/client.py": "OPENAI_API_KEY / OPENAI_BASE_URL: secrets and the SDK's standard variables, never settings",
    "batch/ray_engine.py": "RAY_ADDRESS (Ray's own variable) and PYTHONPATH for the Ray workers",
    "inference/weights/fetch.py": "HF_ENDPOINT, HF_HUB_OFFLINE, HF_HUB_CACHE, HF_HOME: the Hugging Face libraries' "
                                  "own variables, read when a file is fetched, as those libraries do; never settings",
}


def test_only_the_edges_read_the_environment():
    package = ROOT / "augclip_demo"
    pattern = re.compile(r"from_env\(|os\.environ|getenv|\benviron\[")
    readers = set()
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if pattern.search(path.read_text(encoding="utf-8")):
            readers.add(name)
    unexpected = sorted(readers - set(ENVIRONMENT_READERS))
    assert not unexpected, f"these modules read the environment; take a Settings argument instead: {unexpected}"
    assert set(ENVIRONMENT_READERS) <= readers  # the list stays true: an edge that stopped reading leaves it
