"""The ``--judge*`` flags shared by ``score`` and ``batch``: the MLLM judge (docs/judge.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..choices import STRUCTURED_MODES
from ..config import ENVIRONMENT_VARIABLES, Settings

if TYPE_CHECKING:
    from ..judge import JudgeOptions


def add_judge_args(parser: argparse.ArgumentParser, *, how: str) -> None:
    group = parser.add_argument_group(
        "MLLM judge (VIEScore-style semantic consistency, perceptual quality, overall; 0-10)",
        f"{how} Any OpenAI-compatible chat server that reads images: OPENAI_BASE_URL / OPENAI_API_KEY, or "
        "--judge-base-url. Answers are cached by content hash under the cache directory.")
    group.add_argument("--judge", action="store_true", help="run the judge (rows judge_sc, judge_pq, judge_overall)")
    group.add_argument("--judge-model", metavar="NAME",
                       help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_MODEL"] + "; implies --judge")
    group.add_argument("--judge-base-url", metavar="URL", help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_BASE_URL"])
    group.add_argument("--judge-samples", type=int, metavar="N", help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_SAMPLES"])
    group.add_argument("--judge-temperature", type=float, metavar="T",
                       help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_TEMPERATURE"])
    group.add_argument("--judge-seed", type=int, metavar="N", help="seed of the first sample (default 0)")
    group.add_argument("--judge-concurrency", type=int, metavar="N",
                       help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_CONCURRENCY"])
    group.add_argument("--judge-rpm", type=float, metavar="N", help=ENVIRONMENT_VARIABLES["AUGCLIP_JUDGE_RPM"])
    group.add_argument("--judge-structured", choices=STRUCTURED_MODES,
                       help="send the answer's JSON schema as response_format: auto (default: yes, and without it "
                            "if the server refuses it), json_schema (always), off (never); answers are validated "
                            "either way")


def _wants_judge(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "judge", False) or getattr(args, "judge_model", None))


def judge_options_from_args(args: argparse.Namespace, settings: Settings) -> JudgeOptions | None:
    """The judge's options (flags over ``AUGCLIP_JUDGE_*``), or None when the judge is not asked for."""
    from ..judge import JudgeOptions

    if not _wants_judge(args):
        return None
    return JudgeOptions.from_settings(
        settings, model=args.judge_model, base_url=args.judge_base_url, samples=args.judge_samples,
        temperature=args.judge_temperature, seed=args.judge_seed, concurrency=args.judge_concurrency,
        requests_per_minute=args.judge_rpm, structured=args.judge_structured)


