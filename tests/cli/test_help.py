"""``--help`` pages: they load no model stack, and every page of the docs they point to exists."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from augclip_demo.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]

#: The model stack and the other large libraries a command imports only when it runs.
HEAVY = ("torch", "torchvision", "open_clip", "transformers", "segment_anything", "timm", "gradio", "sklearn",
         "matplotlib", "ray", "duckdb", "pandas", "pyarrow", "scipy", "umap", "openai", "httpx")


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every (sub)command's words, the top level's () first."""
    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _command_paths(sub, (*prefix, name))


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_the_command_list_reaches_nested_commands():
    paths = list(_command_paths(build_parser()))
    assert () in paths and ("score",) in paths and ("manifest", "magicbrush") in paths and ("bench", "speed") in paths


def test_help_pages_import_no_model_stack():
    """Each ``--help`` in a fresh interpreter: after it, none of the heavy modules is loaded (an import
    check, not a timing). The top-level page loads not even numpy."""
    paths = [list(path) for path in _command_paths(build_parser())]
    code = f"""
import contextlib, io, json, sys
from augclip_demo.cli import main
heavy = {HEAVY!r}
found = {{}}
for words in {paths!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([*words, "--help"])
        except SystemExit:
            pass
    assert "usage:" in out.getvalue(), words
    loaded = sorted(name for name in {(*HEAVY, "numpy")!r} if name in sys.modules)
    if not words:
        found["(top)"] = loaded
    elif [m for m in loaded if m in heavy]:
        found[" ".join(words)] = loaded
        break
print(json.dumps(found))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"(top)": []}


def _help_texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    for each in _parsers(parser):
        yield from (text for text in (each.description, each.epilog) if text)
        for group in each._action_groups:
            yield from (text for text in (group.title, group.description) if text)
        for action in each._actions:
            if action.help:
                yield action.help
            if isinstance(action, argparse._SubParsersAction):
                yield from (choice.help for choice in action._choices_actions if choice.help)


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(markdown: Path) -> set[str]:
    lines = markdown.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if re.match(r"#{1,6} ", line)}


def test_slug_follows_github():
    assert _slug(" Speed benchmark") == "speed-benchmark"
    assert _slug("`--skip-invalid`") == "--skip-invalid"
    assert _slug("BPM: the region-aware metric") == "bpm-the-region-aware-metric"


def test_every_page_and_section_a_help_text_names_exists():
    texts = list(_help_texts(build_parser()))
    links = [(page, anchor) for text in texts for page, anchor in re.findall(r"docs/([\w-]+\.md)(?:#([\w-]+))?", text)]
    assert ("batch.md", "manifests") in links and ("bpm.md", "region-thresholds") in links
    for page, anchor in links:
        path = ROOT / "docs" / page
        assert path.is_file(), f"a help text names docs/{page}, which does not exist"
        if anchor:
            assert anchor in _anchors(path), f"a help text names docs/{page}#{anchor}: no such section"
    # a README section named in words must be a README heading
    readme = {_slug(line.lstrip("#")) for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("#")}
    for text in texts:
        for section in re.findall(r"README '([^']+)'", text):
            assert _slug(section) in readme, f"a help text names README section {section!r}, which does not exist"
