"""The README: short, Space metadata intact, links resolve, and its quick-start commands run as written.

Quick-start blocks are the fenced blocks right after a ``<!-- quick-start: NAME -->`` line. They run
with ``AUGCLIP_CLIP_MODEL=random:tiny`` (the README says so; no weights are needed), from a scratch
folder that links to the repository's ``assets/`` (so their output files stay out of the checkout),
with ``.venv/bin/python`` standing for the interpreter running the tests.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support import ROOT, TINY, free_port

README = (ROOT / "README.md").read_text(encoding="utf-8")
QUICK_START = re.compile(r"<!-- quick-start: (\w+) -->\n```(\w+)\n(.*?)\n```", re.S)


def quick_starts() -> dict[str, tuple[str, str]]:
    return {name: (language, body) for name, language, body in QUICK_START.findall(README)}


def commands(block: str) -> list[list[str]]:
    """Shell lines of a bash block (backslash continuations joined), as argument lists."""
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def environment() -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AUGCLIP_CLIP"))}
    return {**inherited, "AUGCLIP_CLIP_MODEL": TINY, "AUGCLIP_DEVICE": "cpu", "PYTHONPATH": str(ROOT),
            "GRADIO_ANALYTICS_ENABLED": "False"}


@pytest.fixture()
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "assets").symlink_to(ROOT / "assets", target_is_directory=True)
    return tmp_path


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert argv[0] == ".venv/bin/python", f"quick starts use the venv's Python: {argv}"
    return subprocess.run([sys.executable, *argv[1:]], cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=600)


def test_readme_is_short_with_space_metadata_and_the_set_up_commands():
    lines = README.splitlines()
    assert len(lines) <= 200
    assert lines[0] == "---" and "sdk: gradio" in README and "app_file: app.py" in README  # Hugging Face Space
    assert "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt" in README
    assert ".venv/bin/python -m pytest\n" in README
    assert set(quick_starts()) == {"app", "cli", "python", "batch"}
    assert (ROOT / "docs" / "images" / "app.png").is_file()


def test_every_relative_link_in_the_readme_and_docs_resolves():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"


@pytest.mark.slow  # a fresh interpreter per command (~10 s each on 2 cores)
def test_cli_quick_start(scratch):
    (argv,) = commands(quick_starts()["cli"][1])
    done = run(argv, scratch)
    assert done.returncode == 0, done.stderr
    assert "UNTRAINED" in done.stdout and "well_edited.png" in done.stdout and "prefers edit" in done.stdout


@pytest.mark.slow
def test_python_quick_start(scratch):
    language, body = quick_starts()["python"]
    assert language == "python"
    done = run([".venv/bin/python", "-c", body], scratch)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "prefers edit" in lines[0] and "untrained" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["well_edited.png", "excessively_modified.png"]


@pytest.mark.slow
def test_batch_quick_start(scratch):
    batch, protocol = commands(quick_starts()["batch"][1])
    done = run(batch, scratch)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (scratch / "results.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["status"] == "ok" for r in records)
    done = run(protocol, scratch)
    assert done.returncode == 0, done.stderr
    assert "AccBoth" in done.stdout


@pytest.mark.slow
def test_app_quick_start_answers(scratch):
    (argv,) = commands(quick_starts()["app"][1])
    port = free_port()
    env = {**environment(), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    log = scratch / "app.log"
    with open(log, "w") as out:  # app.py lives in the repository root, as the README's command assumes
        server = subprocess.Popen([sys.executable, *argv[1:]], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(1)
        assert "<html" in page.lower() and "gradio" in page.lower()
        info = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=30).read())
        assert "AugCLIP Studio" in json.dumps(info)
    finally:
        server.terminate()
        server.wait(timeout=30)
