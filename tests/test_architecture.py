"""The package's shape: no import cycles, and the import-linter contracts in pyproject.toml hold."""

from __future__ import annotations

import sys

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
