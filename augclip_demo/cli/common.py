"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

from ..choices import RegionThresholds
from ..config import CPU_MATMULS, ENVIRONMENT_VARIABLES, PRECISIONS, Settings
from ..errors import InputError


def add_evaluation_inputs(parser: argparse.ArgumentParser) -> None:
    """The inputs of one evaluation (``score``, ``explain``): source, edits, texts, attributes file."""
    parser.add_argument("--source", required=True, metavar="IMAGE", help="source image")
    parser.add_argument("--edited", required=True, nargs="+", metavar="IMAGE", help="edited image(s)")
    parser.add_argument("--target", required=True, metavar="TEXT", help="target text (instruction or description)")
    parser.add_argument("--source-text", metavar="TEXT", help="text describing the source image (enables CLIPdir)")
    parser.add_argument("--attributes", metavar="JSON",
                        help='attributes file {"source_attributes": [...], "target_attributes": [...]}')


def add_model_args(parser: argparse.ArgumentParser) -> None:
    """--clip-model / --clip-checkpoint / --device / --precision / --cpu-matmul / --cache-dir (override the env)."""
    group = parser.add_argument_group("model (each flag overrides its environment variable)")
    group.add_argument("--clip-model", metavar="SPEC", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_MODEL"])
    group.add_argument("--clip-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_CHECKPOINT"])
    group.add_argument("--device", metavar="DEVICE", help=ENVIRONMENT_VARIABLES["AUGCLIP_DEVICE"])
    group.add_argument("--precision", choices=PRECISIONS, help=ENVIRONMENT_VARIABLES["AUGCLIP_PRECISION"])
    group.add_argument("--cpu-matmul", choices=CPU_MATMULS, help=ENVIRONMENT_VARIABLES["AUGCLIP_CPU_MATMUL"])
    group.add_argument("--cache-dir", metavar="DIR", help=ENVIRONMENT_VARIABLES["AUGCLIP_CACHE_DIR"])


def settings_from_args(args: argparse.Namespace, **extra: Any) -> Settings:
    return Settings.from_env(
        clip_model=getattr(args, "clip_model", None),
        clip_checkpoint=getattr(args, "clip_checkpoint", None),
        device=getattr(args, "device", None),
        precision=getattr(args, "precision", None),
        cpu_matmul=getattr(args, "cpu_matmul", None),
        cache_dir=getattr(args, "cache_dir", None),
        **extra,
    )


def warn(message: str) -> None:
    print(message, file=sys.stderr)


# ---------------------------------------------------------------------------------------------- preflight
#: Output flags that name a file, and those that name a folder (created when missing).
_OUTPUT_FILE_FLAGS = ("out", "csv")
_OUTPUT_DIR_COMMANDS = {"explain": ("out",), "world": ("out",)}
#: Commands whose output is a positional argument, and the name their help gives it.
_POSITIONAL_OUTPUTS = {"world": "OUT"}


def _check_output_file(value: str, flag: str) -> None:
    """Refuse an output file we could not write, before any work is done."""
    path = Path(value).expanduser()
    if "\x00" in value:
        raise InputError(f"{flag} {value!r}: a path cannot contain a NUL byte")
    if path.is_dir():
        raise InputError(f"{flag} {value}: is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{flag} {value}: the folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise InputError(f"{flag} {value}: {parent} is not a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{flag} {value}: the file is read-only")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {value}: the folder {parent} is not writable")


def _check_output_dir(value: str, flag: str) -> None:
    """Refuse an output folder that cannot be created or written, before any work is done."""
    path = Path(value).expanduser()
    if "\x00" in value:
        raise InputError(f"{flag} {value!r}: a path cannot contain a NUL byte")
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {value}: is a file; give a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{flag} {value}: {existing} is a file, so the folder cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {value}: the folder {existing} is not writable")


def _parquet_results(value: str) -> bool:
    """``batch --out`` naming a Parquet results folder (``.parquet`` or an existing folder)."""
    from ..batch.results_parquet import is_parquet_results

    return is_parquet_results(Path(value).expanduser())


def preflight(args: argparse.Namespace) -> None:
    """Checks every command shares, done before any model is loaded or any work starts.

    Output paths can be written; numbers are finite and in range (whether or not the step that uses
    them runs: ``--alpha nan`` is refused even when BPM is skipped); at most ``max_edits`` edits.
    """
    command = getattr(args, "command", "")
    for name in _OUTPUT_FILE_FLAGS:
        value = getattr(args, name, None)
        if value:
            flag = _POSITIONAL_OUTPUTS.get(command, f"--{name}")
            if name in _OUTPUT_DIR_COMMANDS.get(command, ()) or (command == "batch" and name == "out"
                                                                 and _parquet_results(value)):
                _check_output_dir(value, flag)
            else:
                _check_output_file(value, flag)
    for name in ("alpha", "box_threshold"):
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise InputError(f"--{name.replace('_', '-')} must be a number from 0 to 1, got {value!r}")
    for name in RegionThresholds.__dataclass_fields__:
        value = getattr(args, name, None)
        if value is not None and not math.isfinite(value):
            raise InputError(f"--{name.replace('_', '-')} must be a finite number, got {value!r}")
    c_value = getattr(args, "C", None)
    if c_value is not None and not (math.isfinite(c_value) and c_value > 0):
        raise InputError(f"--C must be a positive number, got {c_value!r}")
    edits = getattr(args, "edited", None)
    if edits is not None:
        limit = Settings.from_env().max_edits
        if len(edits) > limit:
            raise InputError(f"{len(edits)} edited images given; the limit is {limit} per evaluation (the app's too; "
                             "AUGCLIP_MAX_EDITS raises it). Score more with `batch`.")


def terminal_progress(stream: Any = None) -> Any:
    """A ``progress(fraction, message)`` callback that rewrites one status line on a terminal, with the
    seconds since it was made; ``None`` when ``stream`` (stderr) is not a terminal (pipes and logs stay clean)."""
    import time

    stream = stream or sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        return None
    start, furthest = time.perf_counter(), [0.0]
    width = 100

    def report(fraction: float, message: str) -> None:
        furthest[0] = max(furthest[0], min(max(fraction, 0.0), 1.0))
        line = f"[{time.perf_counter() - start:5.0f} s] {100 * furthest[0]:3.0f}%  {message}"
        stream.write("\r" + line[:width].ljust(width))
        if fraction >= 1.0:
            stream.write("\r" + " " * width + "\r")
        stream.flush()

    return report
