"""The package's shape: no import cycles, the import-linter contracts in pyproject.toml hold, and module names
say what a module holds."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import grimp
import pytest

from tests.support import ROOT


def strongly_connected_components(graph: grimp.ImportGraph) -> list[set[str]]:
    """Tarjan's algorithm (iterative) over the module-level import graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = grimp.build_graph("augclip_demo")
    graph.add_import(importer="augclip_demo.metrics.vectors", imported="augclip_demo.report")
    graph.add_import(importer="augclip_demo.report", imported="augclip_demo.metrics.registry")
    graph.add_import(importer="augclip_demo.metrics.registry", imported="augclip_demo.metrics.vectors")
    cycles = [c for c in strongly_connected_components(graph) if len(c) > 1]
    assert {"augclip_demo.metrics.vectors", "augclip_demo.report", "augclip_demo.metrics.registry"} <= set().union(*cycles)


def test_no_import_cycles_inside_the_package():
    graph = grimp.build_graph("augclip_demo")
    assert len(graph.modules) > 50  # the whole package was scanned
    cycles = [sorted(c) for c in strongly_connected_components(graph) if len(c) > 1]
    self_imports = [m for m in graph.modules if graph.direct_import_exists(importer=m, imported=m)]
    assert not cycles and not self_imports, f"import cycles: {cycles} {self_imports}"


def test_import_linter_contracts_hold(capsys: pytest.CaptureFixture[str]):
    from importlinter.cli import lint_imports

    sys.path.insert(0, str(ROOT))  # lint-imports finds the package the way the command does from the root
    try:
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:
        sys.path.remove(str(ROOT))
    report = capsys.readouterr().out
    assert code == 0, report
    assert "0 broken" in report and " kept" in report


MAX_FUNCTION_LINES = 100
# Functions over the limit that other changes of issue 28 are splitting: named here so that no new one appears
# meanwhile; each goes from this list with its split (BPM's bpm_score_many went with the module renames).
LONG_FUNCTIONS_BEING_SPLIT: set[tuple[str, str]] = set()


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[tuple[int, str, str]]:
    """(lines, file, name) of every function or method under ``root`` longer than ``limit`` lines (from its
    ``def`` line to its last line, nested functions included)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append((lines, path.relative_to(root.parent).as_posix(), node.name))
    return found


def test_the_length_rule_finds_a_long_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))  # def line + 100 = 101 lines
    method_body = body.replace("\n", "\n    ")
    (package / "mod.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n\n\n"
                                    f"class C:\n    def method(self):\n    {method_body}\n        return 0\n")
    assert long_functions(package) == [(MAX_FUNCTION_LINES + 1, "pkg/mod.py", "long"),
                                       (MAX_FUNCTION_LINES + 2, "pkg/mod.py", "method")]


def test_no_function_in_the_package_is_over_100_lines():
    """A function over a screenful or two does several things: each of them deserves a name (and a test)."""
    found = [item for item in long_functions(ROOT / "augclip_demo") if item[1:] not in LONG_FUNCTIONS_BEING_SPLIT]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines: {found}"


#: The app's rooms, one package per tab, each with the same parts (docs/app.md, *Adding a tab*).
ROOMS = {"ui/evaluate", "ui/batch", "ui/hatie", "ui/explore", "ui/study"}

#: Module file names that several packages share because they mean the same thing there, with the paths
#: that may hold them (a new module under one of these names, elsewhere, is a new meaning: name it for it).
SAME_MEANING: dict[str, tuple[set[str], str]] = {
    "agreement.py": ({"metrics", "study", "cli"}, "agreement of metrics with people: the math, the same on a live "
                     "study, and the command that reports it for human sets"),
    "answers.py": ({"attributes", "judge"}, "reading the chat model's answer to its package's prompts"),
    "prompts.py": ({"attributes", "judge"}, "what its package asks a chat model"),
    "bench.py": ({"cli", "batch"}, "the `bench` command and the speed benchmark it runs"),
    "manifest.py": ({"cli", "batch"}, "the `manifest` command and manifests"),
    "triplets.py": ({"cli", "batch"}, "the `triplets` command and ground-truth-test triplets"),
    "common.py": ({"cli", "batch/benchmarks", "ui"}, "what the sibling modules of the package share"),
    "layout.py": (ROOMS, "an app tab's components, laid out (docs/app.md, *Adding a tab*)"),
    "handlers.py": (ROOMS, "an app tab's context and the functions its events call"),
    "wiring.py": (ROOMS, "an app tab's events: its layout connected to its handlers"),
    "views.py": ({"ui/evaluate", "ui/explore"}, "what an app tab shows: results in, page values out"),
    "judgments.py": ({"explore", "ui/explore"}, "a rating study's judgments as Explore's human judgments: the "
                     "conversion, and the app's reading of the study database"),
    "slices.py": ({"explore", "study"}, "an Explore slice: the filter, and a study made from one"),
    "store.py": ({"explore", "study"}, "the package's database (results through DuckDB, a study in SQLite)"),
}


def test_no_two_modules_share_a_file_name_with_different_meanings():
    package = ROOT / "augclip_demo"
    folders: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if path.name != "__init__.py":
            folders.setdefault(path.name, set()).add(path.parent.relative_to(package).as_posix())
    shared = {name: where for name, where in folders.items() if len(where) > 1}
    assert "score.py" not in shared and "stages.py" not in shared  # the ones renamed for what they hold
    unexplained = {name: sorted(where) for name, where in shared.items()
                   if name not in SAME_MEANING or not where <= SAME_MEANING[name][0]}
    assert not unexplained, f"modules sharing a name: {unexplained} (rename them, or add a same-meaning entry)"
    stale = sorted(name for name in SAME_MEANING if name not in shared)
    assert not stale, f"same-meaning entries no module pair needs any more: {stale}"


def _doc_block(heading: str) -> list[str]:
    """The lines of the first code block under ``heading`` in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1]
    return section.split("```", 2)[1].strip("\n").splitlines()


def test_the_architecture_page_names_every_package_and_only_packages():
    package = ROOT / "augclip_demo"
    packages = {init.parent.relative_to(package).as_posix() for init in package.rglob("__init__.py")} - {"."}
    named = {m.group(1) for line in _doc_block("## Packages") if (m := re.match(r"  ([a-z_/]+)/\s", line))}
    assert named == packages, (f"named but not packages: {sorted(named - packages)}; "
                               f"packages not named: {sorted(packages - named)}")


def test_the_architecture_page_draws_the_layers_of_the_contract():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    want = [layer.replace("augclip_demo.", "") for layer in contract["layers"]]
    drawn = [re.split(r"\s{2,}", line.strip())[0] for line in _doc_block("## Layers")]
    assert drawn == want
