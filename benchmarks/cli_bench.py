"""How long the command line takes before it answers: every ``--help`` page, and ``score`` end to end.

    python benchmarks/cli_bench.py                        # this tree, 3 runs of each command
    python benchmarks/cli_bench.py --baseline main~3      # ...and a git revision too, in the same run, with ratios
    python benchmarks/cli_bench.py --repeats 5 --no-score
    python benchmarks/cli_bench.py --stages               # where `score`'s time goes: imports per package, the run,
                                                          # and the floor (importing only what `score` cannot do without)

Each command runs in a fresh interpreter (``python -m augclip_demo ...``) with the tree first on
``PYTHONPATH``; the CPU time is the child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)``),
which a machine loaded by other jobs changes far less than the wall time. Printed per command: the
median CPU seconds of the runs (and the median wall time), and with ``--baseline`` the same for the
revision (its ``augclip_demo`` folder, taken with ``git archive`` into a temporary folder) and the ratio
new / old. ``score`` runs on the shipped example with ``--clip-model random:tiny`` (untrained weights:
nothing to download, the scores mean nothing). Goals (issue 43): every ``--help`` under 0.5 s of CPU,
``score`` under 3 s end to end.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "examples" / "flower-pink"
SCORE = ["score", "--source", str(EXAMPLE / "source.png"),
         "--edited", str(EXAMPLE / "well_edited.png"), str(EXAMPLE / "excessively_modified.png"),
         "--target", "a pink dahlia flower", "--source-text", "an orange dahlia flower",
         "--attributes", str(EXAMPLE / "attributes.json"), "--clip-model", "random:tiny"]


@dataclass(frozen=True)
class Timing:
    cpu_s: float  # median user + system seconds of the child
    wall_s: float  # median wall seconds


def _commands(tree: Path) -> list[str]:
    """The top-level commands, read from this tree's parser (in a child, so this process stays light)."""
    code = ("from augclip_demo.cli import build_parser; import argparse; p = build_parser(); "
            "print(' '.join(next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree,
                          env=_env(tree), check=True)
    return done.stdout.split()


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}


def _run(tree: Path, words: list[str], repeats: int) -> Timing:
    """``python -m augclip_demo WORDS``, timed."""
    return _timed(tree, ["-m", "augclip_demo", *words], repeats)


def _timed(tree: Path, arguments: list[str], repeats: int) -> Timing:
    """``python ARGUMENTS`` in a fresh interpreter ``repeats`` times: the medians of its CPU and wall time."""
    cpu, wall = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, cwd=tree,
                              env=_env(tree))
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(arguments)} failed in {tree} ({done.returncode}): {done.stderr[-500:]}")
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return Timing(statistics.median(cpu), statistics.median(wall))


def _check_tree(tree: Path) -> None:
    """The child must import the package of ``tree``, not an installed copy."""
    done = subprocess.run([sys.executable, "-c", "import augclip_demo; print(augclip_demo.__file__)"],
                          capture_output=True, text=True, cwd=tree, env=_env(tree), check=True)
    if not Path(done.stdout.strip()).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the child imports {done.stdout.strip()}, not the package in {tree}")


def _baseline_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "augclip_demo"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _row(name: str, new: Timing, old: Timing | None) -> str:
    line = f"{name:<22} {new.cpu_s:8.2f} {new.wall_s:8.2f}"
    if old is not None:
        line += f" {old.cpu_s:8.2f} {old.wall_s:8.2f} {new.cpu_s / old.cpu_s:8.2f}"
    return line


#: The packages ``--stages`` names in its table (the rest are summed as "other imports").
_STAGE_PACKAGES = ("torch", "torchvision", "open_clip", "transformers", "sklearn", "scipy", "numpy", "PIL",
                   "augclip_demo")


def _score_stages(tree: Path) -> None:
    """``score`` once under ``python -X importtime``: each package's own import time (the modules of the package,
    without what they import from others), then the run after the imports (model load, encoding, fit,
    printing): the wall time less every import. ``-X importtime`` adds a little to each import."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "augclip_demo", *SCORE], capture_output=True,
                          text=True, cwd=tree, env=_env(tree))
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"score failed ({done.returncode}): {done.stderr[-500:]}")
    own: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        fields = line.split("|")
        try:
            seconds = int(fields[0].split(":")[1]) / 1e6
        except ValueError:  # the header line
            continue
        root = fields[2].strip().split(".")[0]
        group = root if root in _STAGE_PACKAGES else "other imports"
        own[group] = own.get(group, 0.0) + seconds
    imports = sum(own.values())
    print(f"\n`score` random:tiny, one run under -X importtime: {wall:.2f} s wall; seconds per stage")
    for group in sorted(own, key=own.get, reverse=True):
        print(f"  import {group:<16} {own[group]:6.2f}")
    print(f"  {'all imports':<23} {imports:6.2f}")
    print(f"  {'the run after them':<23} {wall - imports:6.2f}  (model load, encoding, fit, printing)")
    floor = _timed(tree, ["-c", _FLOOR_CODE], repeats=3)
    print(f"  floor: a fresh interpreter importing only {_FLOOR_CODE[len('import '):]}: {floor.wall_s:.2f} s wall "
          f"({floor.cpu_s:.2f} CPU s, median of 3); any `score` takes at least this")


#: What ``score`` cannot run without: CLIP (open_clip on torch), the hyperplane fit (scikit-learn's SVC) and PIL.
_FLOOR_CODE = "import torch, open_clip, sklearn.svm, PIL.Image"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="REV", help="also measure this git revision's augclip_demo, in this run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (the median is printed)")
    parser.add_argument("--no-score", action="store_true", help="skip `score` with random:tiny")
    parser.add_argument("--stages", action="store_true", help="only `score`'s stages: imports per package, then the run")
    args = parser.parse_args()
    if args.stages:
        print(f"load average {os.getloadavg()[0]:.1f} / {os.cpu_count()} cores")
        _score_stages(ROOT)
        return
    with tempfile.TemporaryDirectory() as scratch:
        old_tree = _baseline_tree(args.baseline, Path(scratch)) if args.baseline else None
        for tree in (ROOT, old_tree):
            if tree is not None:
                _check_tree(tree)
        cases = [("--help", ["--help"])] + [(f"{c} --help", [c, "--help"]) for c in _commands(ROOT)]
        if not args.no_score:
            cases.append(("score random:tiny", SCORE))
        print(f"load average {os.getloadavg()[0]:.1f} / {os.cpu_count()} cores; median of {args.repeats} runs")
        header = f"{'command':<22} {'CPU s':>8} {'wall s':>8}"
        if old_tree is not None:
            header += f" {'old CPU':>8} {'old wall':>8} {'CPU new/old':>8}"
        print(header)
        old_commands = {"--help", *_commands(old_tree)} if old_tree is not None else set()
        for name, words in cases:
            new = _run(ROOT, words, args.repeats)
            old = _run(old_tree, words, args.repeats) if old_tree is not None and words[0] in old_commands else None
            print(_row(name, new, old), flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
