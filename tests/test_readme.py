"""The README: short, Space metadata intact, links resolve, and its quick-start commands run as written.

Quick-start blocks are the fenced blocks right after a ``<!-- quick-start: NAME -->`` line. The command
line, Python and batch ones run exactly as written and offline (no model setting inherited, the Hub
offline, empty weight caches: they name the shipped ``shapes:tiny``), from a scratch folder that links to
the repository's ``assets/`` (so their output files stay out of the checkout), with ``.venv/bin/python``
standing for the interpreter running the tests.
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


def environment(caches: Path) -> dict[str, str]:
    """A machine with no weights and no internet: the Hub offline, every weight cache an empty folder under
    ``caches``, and no model setting or API key inherited (the shipped models are all a quick start has)."""
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith(("OPENAI_", "AUGCLIP_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TORCH_HOME"))}
    return {**inherited, "HF_HUB_OFFLINE": "1", "HF_HOME": str(caches / "hf"), "AUGCLIP_CACHE_DIR": str(caches / "augclip"),
            "TORCH_HOME": str(caches / "torch"), "AUGCLIP_DEVICE": "cpu", "PYTHONPATH": str(ROOT),
            "GRADIO_ANALYTICS_ENABLED": "False"}


@pytest.fixture()
def scratch(tmp_path: Path) -> Path:
    """A stand-in for the checkout's root: its assets, and an outputs/ folder as a clone has one."""
    (tmp_path / "assets").symlink_to(ROOT / "assets", target_is_directory=True)
    (tmp_path / "outputs").mkdir()
    return tmp_path


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``.venv/bin/python ...`` or ``.venv/bin/augclip-demo ...`` (the console script the set-up installs),
    offline with empty caches (in ``cwd``'s ``.caches``)."""
    if argv[0] == ".venv/bin/augclip-demo":
        argv = [".venv/bin/python", "-m", "augclip_demo", *argv[1:]]
    assert argv[0] == ".venv/bin/python", f"quick starts use the venv's Python or command: {argv}"
    return subprocess.run([sys.executable, *argv[1:]], cwd=cwd, env=environment(cwd / ".caches"), capture_output=True,
                          text=True, timeout=600)


APP_SET_UP = 'python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt -e ".[app]" && python app.py'
TEST_SET_UP = ". .venv/bin/activate && pip install -r requirements-dev.txt && python -m pytest"


def test_readme_is_short_with_space_metadata_and_the_set_up_commands():
    lines = README.splitlines()
    assert len(lines) <= 200
    assert lines[0] == "---" and "sdk: gradio" in README and "app_file: app.py" in README  # Hugging Face Space
    set_up = README[README.index("## Set up"):README.index("## Quick start")]
    blocks = re.findall(r"```bash\n(.*?)\n```", set_up, re.S)
    assert blocks == [APP_SET_UP, TEST_SET_UP]  # two commands: the app (and the package), then the tests
    assert set(quick_starts()) == {"app", "cli", "python", "batch"}
    assert (ROOT / "docs" / "images" / "app.png").is_file()


def test_ci_runs_exactly_the_readme_set_up_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"APP_COMMAND='{APP_SET_UP}'" in ci and 'bash -c "$APP_COMMAND"' in ci
    assert f"TEST_COMMAND='{TEST_SET_UP}'" in ci and 'bash -c "$TEST_COMMAND"' in ci
    assert ci.index('bash -c "$APP_COMMAND"') < ci.index('bash -c "$TEST_COMMAND"') < ci.index("pre-commit run")
    assert "apt-get install -y -qq chromium" in ci


def test_space_preloads_the_models_the_page_runs_on_a_cpu_space():
    """preload_from_hub = CLIP and BPM's fast preset (what the page runs without a GPU), as the table says."""
    from augclip_demo.config import Settings
    from augclip_demo.inference.needs import models_needed, web_app_settings
    from augclip_demo.inference.weights.table import pretrained_entry

    front = README.split("---", 2)[1]
    preloaded = dict(re.findall(r"^  - (\S+) (\S+)$", front, re.M))
    space = web_app_settings(Settings.from_env({}), cuda=False, environ={})
    needed = {pretrained_entry(n.family, n.spec).repo_id: n for n in models_needed(space, "bpm")}
    assert set(preloaded) == set(needed)
    for repo, files in preloaded.items():
        entry = pretrained_entry(needed[repo].family, needed[repo].spec)
        assert entry.files[0] in files.split(",")  # the weight file itself


def _named_commands() -> set[tuple[str, ...]]:
    """Every ``augclip-demo ...`` command a doc page, the README or a message in the package names."""
    texts = [README, *(page.read_text() for page in (ROOT / "docs").glob("*.md")),
             *(file.read_text() for file in (ROOT / "augclip_demo").rglob("*.py"))]
    found = set()
    for text in texts:
        for match in re.finditer(r"augclip-demo((?: +[A-Za-z0-9_./:=-]+)+)", text):
            found.add(tuple(match.group(1).split()))
    return found


def test_every_command_named_anywhere_exists_with_its_flags(capsys):
    """Each named command's (sub)command answers --help, and every flag it names is in that help."""
    from augclip_demo.cli import main

    checked = {}
    for words in sorted(_named_commands()):
        path = [w for w in words[:2] if not w.startswith("-")][:2]
        if len(path) == 2 and path[0] not in ("hatie", "bench", "manifest"):  # the ones with sub-subcommands
            path = path[:1]
        key = tuple(path)
        if not path or path[0].isupper():  # a placeholder: `augclip-demo COMMAND --help`
            continue
        if key not in checked:
            with pytest.raises(SystemExit) as done:
                main([*path, "--help"])
            assert done.value.code == 0, f"augclip-demo {' '.join(path)} --help failed"
            checked[key] = capsys.readouterr().out
        for flag in (w.split("=")[0] for w in words if w.startswith("--")):
            assert flag in checked[key], f"`augclip-demo {' '.join(words)}`: {flag} is not an option"
    assert {("download",), ("doctor",), ("score",), ("hatie", "table")} <= set(checked)


def test_the_package_and_its_command_are_installed_by_the_set_up():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["augclip-demo"] == "augclip_demo.cli:main"
    assert '-e ".[app]"' in APP_SET_UP
    from augclip_demo.cli import build_parser

    assert build_parser().prog == "augclip-demo"


def test_every_relative_link_in_the_readme_and_docs_resolves():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"


#: what every showing of shapes:tiny's scores says (inference/specs.py writes it; a reader must see it)
TOY = "toy model trained on synthetic shapes"


def _shipped_manifest_items() -> int:
    return len((ROOT / "assets" / "examples" / "manifest.jsonl").read_text().splitlines())


@pytest.mark.slow  # a fresh interpreter per command (~10 s each on 2 cores)
def test_cli_quick_start(scratch):
    (argv,) = commands(quick_starts()["cli"][1])
    done = run(argv, scratch)
    assert done.returncode == 0, done.stderr
    edits = argv[argv.index("--edited") + 1:argv.index("--target")]
    assert [line for line in done.stdout.splitlines() if line.startswith("files:")] == [
        "files: " + ", ".join(f"E{k} = {Path(path).name}" for k, path in enumerate(edits, 1))]
    assert TOY in done.stdout and "prefers edit" in done.stdout and "UNTRAINED" not in done.stdout


@pytest.mark.slow
def test_python_quick_start_from_any_folder(tmp_path):
    language, body = quick_starts()["python"]
    assert language == "python"
    (tmp_path / "quick_start.py").write_text(body)  # saved as a script in a folder with no assets/
    done = run([".venv/bin/python", "quick_start.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "prefers edit" in lines[0] and TOY in lines[0] and "untrained" not in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["correct.png", "over_edit.png"]


@pytest.mark.slow
def test_batch_quick_start(scratch):
    batch, protocol = commands(quick_starts()["batch"][1])
    done = run(batch, scratch)
    assert done.returncode == 0, done.stderr
    assert "outputs/" in batch[batch.index("--out") + 1]  # under the git-ignored folder
    ignored = subprocess.run(["git", "check-ignore", "-q", "outputs/results.jsonl"], cwd=ROOT)
    kept = subprocess.run(["git", "ls-files", "--error-unmatch", "outputs/.gitignore"], cwd=ROOT, capture_output=True)
    assert ignored.returncode == 0 and kept.returncode == 0  # a clone has the folder; what goes in stays out of git
    records = [json.loads(line) for line in (scratch / "outputs" / "results.jsonl").read_text().splitlines()]
    assert len(records) == _shipped_manifest_items() and all(r["status"] == "ok" for r in records)
    assert {r["run"]["model"] for r in records} == {"shapes:tiny"}
    done = run(protocol, scratch)
    assert done.returncode == 0, done.stderr
    assert "AccBoth" in done.stdout and TOY in done.stdout


@pytest.mark.slow
def test_batch_quick_start_without_the_toy_model_fails_clearly_and_leaves_no_results(scratch):
    """The same command with its --clip-model taken out needs ViT-B-16's weights: offline it stops before
    the first item, names the offline models, leaves no results file, and protocol says there is none."""
    batch, protocol = commands(quick_starts()["batch"][1])
    at = batch.index("--clip-model")
    done = run(batch[:at] + batch[at + 2:], scratch)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--clip-model shapes:tiny" in done.stderr and "--clip-model random:tiny" in done.stderr
    assert not (scratch / "outputs" / "results.jsonl").exists()
    done = run(protocol, scratch)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "outputs/results.jsonl" in done.stderr


@pytest.mark.slow
def test_app_quick_start_answers(scratch):
    (argv,) = commands(quick_starts()["app"][1])
    port = free_port()
    # the page starts on random:tiny here (what it shows with no weights is the browser tests' part)
    env = {**environment(scratch / ".caches"), "AUGCLIP_CLIP_MODEL": TINY, "GRADIO_SERVER_NAME": "127.0.0.1",
           "GRADIO_SERVER_PORT": str(port)}
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
