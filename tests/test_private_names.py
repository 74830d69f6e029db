"""Names only their own module uses start with `_`: a module's public names are the ones something else reads.

"Something else" is any other file of the package, the tests, the benchmarks, app.py, assets/, the docs or
pyproject.toml (a mention anywhere counts: the check errs towards public). A name stays public without outside
use when it is part of a public signature (a class in the annotation of a public function, method or dataclass
field: a caller holds its instances), listed in ``__all__``, or a lazy export of ``augclip_demo/__init__.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support import ROOT

PACKAGE = ROOT / "augclip_demo"


def _texts() -> dict[Path, str]:
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
             ROOT / "app.py", *(ROOT / "assets").rglob("*.py"), *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "docs").rglob("*.py"), ROOT / "README.md", ROOT / "pyproject.toml"]
    return {path: path.read_text(encoding="utf-8") for path in files if path.is_file()}


def module_level_names(tree: ast.Module) -> list[str]:
    """Public names bound at module level: functions, classes and assigned names (dunders excluded)."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                names += [e.id for e in elements if isinstance(e, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def exported(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))):
            out |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return out


def in_public_signatures(tree: ast.Module) -> set[str]:
    """Names that occur in the annotations of public functions, public methods and public classes' fields."""
    annotations: list[ast.expr] = []

    def of_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("_") and node.name != "__init__":
            return
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                    arguments.vararg, arguments.kwarg]:
            if arg is not None and arg.annotation is not None:
                annotations.append(arg.annotation)
        if node.returns is not None:
            annotations.append(node.returns)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            of_function(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    of_function(member)
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name) \
                        and not member.target.id.startswith("_"):
                    annotations.append(member.annotation)
    words: set[str] = set()
    for annotation in annotations:
        text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) \
            else ast.unparse(annotation)
        words |= set(re.findall(r"\w+", text))
    return words


def names_only_their_module_uses() -> dict[str, list[str]]:
    """``{module path: [public names nothing else uses]}``."""
    texts = _texts()
    lazy = set(re.findall(r'^\s*"(\w+)":\s*"augclip_demo', texts.get(PACKAGE / "__init__.py", ""), re.M))
    words = {path: set(re.findall(r"\w+", text)) for path, text in texts.items()}
    trees = {path: ast.parse(texts[path]) for path in sorted(PACKAGE.rglob("*.py"))}
    all_exported = set().union(*(exported(tree) for tree in trees.values()))
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        keep = all_exported | lazy | in_public_signatures(tree)
        private = [name for name in module_level_names(tree)
                   if name not in keep and not any(name in w for p, w in words.items() if p != path)]
        if private:
            found[str(path.relative_to(ROOT))] = private
    return found


def test_names_only_their_module_uses_start_with_an_underscore():
    found = names_only_their_module_uses()
    assert not found, "public names that nothing outside their module uses (give them a '_'):\n" + "\n".join(
        f"{path}: {', '.join(names)}" for path, names in sorted(found.items()))


def test_the_check_finds_a_name_only_its_module_uses_and_keeps_signature_classes():
    tree = ast.parse(
        "from dataclasses import dataclass\n"
        "LIMIT = 3\n"
        "@dataclass\nclass Row:\n    value: 'Cell'\n"
        "class Cell: ...\n"
        "class Hidden: ...\n"
        "def table(rows: list[Row]) -> int:\n    return LIMIT\n"
        "def _helper(x: Hidden) -> None: ...\n"
    )
    assert module_level_names(tree) == ["LIMIT", "Row", "Cell", "Hidden", "table"]
    signature = in_public_signatures(tree)
    assert {"Row", "Cell"} <= signature and "Hidden" not in signature and "LIMIT" not in signature
