"""`pip install .`: the declared dependencies cover every import, the tested set fits the ranges, the command works anywhere."""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support import ROOT, TINY, draw_scene

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _third_party_imports(files: list[Path]) -> dict[str, set[str]]:
    """Top-level modules imported anywhere in ``files`` (also inside functions) -> the files importing them."""
    found: dict[str, set[str]] = {}
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "augclip_demo":
                    found.setdefault(top, set()).add(str(file.relative_to(ROOT)))
    return found


@functools.cache
def _module_to_distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()  # scans every installed distribution: once


def _distributions_of(module: str) -> set[str]:
    return {re.sub(r"[-_.]+", "-", d).lower() for d in _module_to_distributions().get(module, [])}


def test_every_import_is_a_declared_dependency():
    """Core modules import only `dependencies`; the app (augclip_demo/ui, and augclip_demo/explore, which only the
    app and `augclip-demo explore`, the app's launcher, use) may also use the `app` extra, the Ray engine,
    Parquet results and the Parquet dataset loader (imported only when used) the `ray` extra."""
    core = {_name(r) for r in PROJECT["dependencies"]}
    app = core | {_name(r) for r in PROJECT["optional-dependencies"]["app"]}
    ray = core | {_name(r) for r in PROJECT["optional-dependencies"]["ray"]}
    package = sorted((ROOT / "augclip_demo").rglob("*.py"))
    ui = [f for f in package if {"ui", "explore"} & set(f.relative_to(ROOT / "augclip_demo").parts)]
    ray_files = [ROOT / "augclip_demo" / "batch" / name for name in ("ray_engine.py", "results_parquet.py",
                                                                      "benchmarks/hf_parquet.py")]
    problems = []
    for files, declared, where in [([f for f in package if f not in ui and f not in ray_files], core, "dependencies"),
                                   (ui, app, "dependencies + [app]"), (ray_files, ray, "dependencies + [ray]")]:
        for module, importers in _third_party_imports(files).items():
            if not _distributions_of(module) & declared:
                problems.append(f"{module} (imported by {', '.join(sorted(importers))}) is not in {where}")
    assert not problems, "\n".join(problems)


def _pinned(name: str) -> set[str]:
    lines = [line.split("#")[0].strip() for line in (ROOT / name).read_text().splitlines()]
    return {_name(line) for line in lines if line and not line.startswith("-")}


def test_requirements_txt_is_the_runtime_set_and_requirements_dev_the_rest():
    """requirements.txt (what a Space installs) holds exactly the runtime set, dependencies + the app extra;
    requirements-dev.txt the Ray engine, the tests and the linters on top of it; what is installed satisfies
    pyproject's ranges."""
    runtime = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["app"]
    dev = PROJECT["optional-dependencies"]["ray"] + PROJECT["optional-dependencies"]["test"] + \
        [r for r in PROJECT["optional-dependencies"]["dev"] if not r.startswith("augclip-demo")]
    assert _pinned("requirements.txt") == {_name(r) for r in runtime}
    assert _pinned("requirements-dev.txt") == {_name(r) for r in dev}
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    for requirement in map(Requirement, runtime + dev):
        installed = metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), \
            f"installed {requirement.name} {installed} is outside pyproject's range {requirement.specifier}"


def test_the_runtime_set_holds_no_test_lint_or_cluster_tool():
    tools = {"pytest", "pytest-xdist", "playwright", "hypothesis", "ruff", "import-linter", "pre-commit", "ray", "pyarrow"}
    assert not _pinned("requirements.txt") & tools


@pytest.mark.slow  # builds a wheel and runs the installed command (~20 s on 2 cores)
def test_installed_wheel_runs_the_command_from_any_directory(tmp_path: Path):
    # Build from a copy, so the checkout gets no build/ or egg-info folders.
    source = tmp_path / "src"
    shutil.copytree(ROOT / "augclip_demo", source / "augclip_demo", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", str(source), "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("augclip_demo-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "augclip_demo/inference/model_configs/augclip-tiny-vit.json" in names  # package data travels
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    import augclip_demo

    assert f"Version: {augclip_demo.__version__}" in meta
    assert {_name(line.split(":", 1)[1].split(";")[0]) for line in meta.splitlines() if line.startswith("Requires-Dist:")} \
        >= {_name(r) for r in PROJECT["dependencies"]}

    # Install it (dependencies come from this venv) into a folder of its own, then run the console script
    # from an unrelated directory with only that folder on the path: no checkout involved.
    target = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")]).save(elsewhere / "source.png")
    draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red"), ("rectangle", (0, 72, 96, 96), "green")]).save(
        elsewhere / "edit.png")
    (elsewhere / "attrs.json").write_text(json.dumps({"source_attributes": ["a red ball"],
                                                      "target_attributes": ["green grass"]}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    command = target / "bin" / "augclip-demo"
    located = subprocess.run([sys.executable, "-c", "import augclip_demo; print(augclip_demo.__file__)"],
                             cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert Path(located.stdout.strip()).is_relative_to(target), located
    version = subprocess.run([str(command), "--version"], cwd=elsewhere, env=env, capture_output=True, text=True,
                             timeout=120)
    assert version.returncode == 0 and version.stdout.strip() == f"augclip-demo {augclip_demo.__version__}", version
    scored = subprocess.run([str(command), "score", "--source", "source.png", "--edited", "edit.png",
                             "--target", "a red ball on green grass", "--attributes", "attrs.json",
                             "--clip-model", TINY, "--device", "cpu", "--json"],
                            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert report["untrained"] is True and report["edits"][0]["name"] == "edit.png"
