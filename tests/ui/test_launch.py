"""``python app.py`` options (each named after its environment variable) and the web-message path filter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from augclip_demo.errors import ConfigError
from augclip_demo.ui.guard import scrub_paths
from augclip_demo.ui.launch import APP_OPTIONS, build_parser, server_options, settings_from
from tests.support import ROOT


def test_flags_override_the_environment_and_fall_back_to_it():
    env = {"AUGCLIP_CLIP_MODEL": "ViT-B-32/openai", "AUGCLIP_CONCURRENCY": "3", "AUGCLIP_ALLOWED_MODELS": "a, b",
           "GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SHARE": "true"}
    args = build_parser().parse_args(["--clip-model", "random:tiny", "--max-edits", "4", "--port", "7999"])
    settings = settings_from(args, env)
    assert settings.clip_model == "random:tiny"  # the flag wins
    assert settings.concurrency == 3 and settings.allowed_models == ("a", "b")  # the variables fill the rest
    assert settings.max_edits == 4
    assert server_options(args, env) == {"server_name": "0.0.0.0", "server_port": 7999, "share": True}
    args = build_parser().parse_args(["--host", "127.0.0.1", "--no-share", "--allowed-models", "x,y,x"])
    assert server_options(args, env) == {"server_name": "127.0.0.1", "server_port": None, "share": False}
    assert settings_from(args, env).allowed_models == ("x", "y")


def test_every_option_names_its_variable_in_help():
    text = build_parser().format_help()
    for flag, (variable, _) in APP_OPTIONS.items():
        assert flag in text and f"[{variable}]" in text
    assert {"--clip-model", "--device", "--precision", "--host", "--port", "--share", "--allowed-models",
            "--concurrency"} <= set(APP_OPTIONS)


def test_bad_values_are_refused_before_the_app_starts():
    with pytest.raises(ConfigError, match="concurrency must be a positive integer, got 0"):
        settings_from(build_parser().parse_args(["--concurrency", "0"]), {})


@pytest.mark.slow
def test_app_py_exits_with_one_line_on_a_bad_option():
    done = subprocess.run([sys.executable, "app.py", "--max-edits", "-1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stderr.strip() == "error: max_edits must be a positive integer, got -1"


def test_web_messages_show_file_names_never_server_folders():
    assert scrub_paths("manifest /tmp/augclip-batch-x/data/m.jsonl: line 2: file not found (/tmp/g/ab/x.png)") == \
        "manifest …/m.jsonl: line 2: file not found (…/x.png)"
    kept = "could not connect to http://127.0.0.1:8000/v1; C (svm / logistic) and 1/2"
    assert scrub_paths(kept) == kept
    assert scrub_paths("tried local-dir:/srv/models/clip") == "tried local-dir:…/clip"
