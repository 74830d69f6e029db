"""``batch``: score every item of a manifest into a results JSONL (resumable)."""

from __future__ import annotations

import argparse
import json
import sys

from ..choices import (
    DEFAULT_BPM_ALPHA,
    DEFAULT_BPM_BOX_THRESHOLD,
    ENGINES,
    FEATURE_NETWORKS,
    PARSERS,
    PROVIDER_NAMES,
    REGION_SOURCES,
)
from ..config import ENVIRONMENT_VARIABLES
from .bpm import bpm_settings
from .common import add_model_args
from .hatie import add_hatie_args, hatie_from_args
from .judge_options import add_judge_args, judge_options_from_args
from .score import (
    add_augclip_args,
    add_network_args,
    feature_metrics_from_args,
    networks_from_args,
    options_from_args,
)


class _MetricNamesHelp(argparse.HelpFormatter):
    """Writes the metric table's names into ``--metrics``' help when the help is printed: the table
    (metrics/suite.py) loads numpy and Pillow, which building the parser for another command must not."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if action.dest != "metrics" or text is None:
            return text
        from ..metrics.suite import metric_keys

        return text.format(primary=",".join(metric_keys(computable=True, primary=True)),
                           computable=", ".join(metric_keys(computable=True)))


def _metrics_of(args: argparse.Namespace) -> str:
    """``--metrics``, or the primary computable metrics when it is not given."""
    if args.metrics is not None:
        return str(args.metrics)
    from ..metrics.suite import metric_keys

    return ",".join(metric_keys(computable=True, primary=True))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch", formatter_class=_MetricNamesHelp, help="score a whole manifest (JSONL) into a results file; resumable",
        description="Score every item of a manifest. Results are appended item by item and flushed, so a crash or "
                    "Ctrl-C loses nothing: rerun the same command to resume (ids already in --out are skipped). "
                    "Exit status: 0 all items scored, 1 some items failed (recorded in the results), "
                    "2 bad input, 130 interrupted.")
    parser.add_argument("manifest", metavar="MANIFEST", help="manifest file (.jsonl, docs/batch.md#manifests)")
    parser.add_argument("--out", required=True, metavar="RESULTS.jsonl",
                        help="results file (appended to, resumed); a name ending in .parquet (or a folder) holds "
                             "Parquet part files instead")
    parser.add_argument("--csv", metavar="RESULTS.csv", help="also write one CSV row per edit at the end")
    parser.add_argument("--metrics", metavar="LIST",
                        help="comma-separated metrics (default {primary}; 'all' for every CLIP and pixel "
                             "metric: {computable}; add bpm by name, e.g. 'all,bpm': "
                             "it runs GroundingDINO + SAM on items with an instruction or a parse; --judge adds "
                             "judge_sc, judge_pq, judge_overall)")
    parser.add_argument("--provider", metavar="NAME",
                        help=f"attribute provider for items without attributes ({', '.join(PROVIDER_NAMES)}; "
                             "default AUGCLIP_ATTRIBUTE_PROVIDER)")
    run = parser.add_argument_group("run")
    run.add_argument("--batch-size", type=int, metavar="N", help="images per forward pass (default 256 GPU / 64 CPU)")
    run.add_argument("--text-batch-size", type=int, metavar="N", help="texts per forward pass (default 1024 GPU / 64 CPU)")
    run.add_argument("--workers", type=int, metavar="N",
                     help="image decode threads or processes (default: CPUs, at most 16)")
    run.add_argument("--decode-executor", choices=("auto", "thread", "process"), default="auto",
                     help="where images are decoded and texts tokenized: threads, or worker processes that leave "
                          "Python's lock to the encoder (auto: threads; processes are not measured faster on a GPU yet, "
                          "docs/performance.md)")
    run.add_argument("--fit-workers", type=int, metavar="N", help="parallel AugCLIP fits (default: 2 threads on CPU, "
                                                                  "CPUs-2 processes on GPU)")
    run.add_argument("--fit-executor", choices=("auto", "thread", "process"), default="auto",
                     help="where fits run: threads, or worker processes (auto: processes on GPU machines)")
    run.add_argument("--overwrite", action="store_true", help="start over instead of resuming --out")
    run.add_argument("--retry-failed", action="store_true", help="run items that failed last time again")
    run.add_argument("--skip-invalid", action="store_true",
                     help="run the valid items of a manifest with problems (the problems are listed) instead of stopping")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    engine = parser.add_argument_group("engine (--engine ray: Ray Data, pip install 'augclip-demo[ray]'; docs/ray.md)")
    engine.add_argument("--engine", choices=ENGINES, default="local",
                        help="local: this process (default); ray: actors on a Ray cluster or a local Ray instance")
    engine.add_argument("--ray-address", metavar="ADDR",
                        help="Ray cluster to join ('auto' for the running one; default RAY_ADDRESS, else start a local "
                             "instance for this run)")
    engine.add_argument("--ray-actors", type=int, metavar="N",
                        help="scoring actors, one loaded CLIP each (default: the cluster's GPUs, else its CPUs)")
    engine.add_argument("--ray-gpus-per-actor", type=float, metavar="G",
                        help="GPUs per scoring actor (default 1 when the cluster has GPUs; 0.5 puts two on a GPU)")
    engine.add_argument("--ray-cpus-per-actor", type=float, default=1.0, metavar="C", help="CPUs per scoring actor")
    engine.add_argument("--ray-items-per-batch", type=int, default=16, metavar="N", help="items per actor call")
    engine.add_argument("--ray-attribute-actors", type=int, default=1, metavar="N",
                        help="concurrent attribute providers (bounds concurrent LLM calls; default %(default)s)")
    engine.add_argument("--ray-attribute-rate", type=float, metavar="R",
                        help="attribute extractions per second, all actors together (one openai extraction makes "
                             "about three chat requests; default: no cap)")
    engine.add_argument("--ray-bpm-actors", type=int, metavar="N", help="BPM region actors (default: as scoring)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_augclip_args(parser)
    bpm = parser.add_argument_group("BPM (with --metrics ...,bpm; items give an \"instruction\" and/or a \"parse\")")
    bpm.add_argument("--parser", choices=PARSERS, default="rules",
                     help="instruction parser: rules (offline, default) or llm (OpenAI-compatible chat model)")
    bpm.add_argument("--gdino-model", metavar="ID|PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_GDINO_MODEL"])
    bpm.add_argument("--sam-model", metavar="NAME", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_MODEL"])
    bpm.add_argument("--sam-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_CHECKPOINT"])
    bpm.add_argument("--bpm-alpha", type=float, default=DEFAULT_BPM_ALPHA,
                     help=f"BPM weight of S_semantic (default {DEFAULT_BPM_ALPHA}, the BPM paper's Table 9)")
    bpm.add_argument("--box-threshold", type=float, default=DEFAULT_BPM_BOX_THRESHOLD,
                     help=f"GroundingDINO box score threshold (default {DEFAULT_BPM_BOX_THRESHOLD})")
    bpm.add_argument("--bpm-regions", choices=REGION_SOURCES, default="detected",
                     help="where BPM's regions come from: detected (GroundingDINO + SAM, default) or masks (each "
                          "item's \"object_masks\" and / or \"edit_mask\"; no detector or segmenter is loaded)")
    needs = "; ".join(f"{' / '.join(net.metrics)} need{'' if len(net.metrics) > 1 else 's'} an item's "
                      + ", ".join(f'"{n}"' for n in net.needs) for net in FEATURE_NETWORKS if net.needs)
    add_network_args(parser.add_argument_group(f"feature networks ({needs}; each network loads once per run)"))
    add_judge_args(parser, how="With --judge (or judge_* in --metrics) every item's edits are judged against its "
                               "\"instruction\", else its target text; an endpoint failure fails the item "
                               "(--retry-failed asks again, earlier answers come from the cache).")
    add_hatie_args(parser)
    add_model_args(parser)
    parser.set_defaults(func=_run_command)


def _run_command(args: argparse.Namespace) -> int:
    from ..batch.runner import BatchOptions, BatchRunner
    from ..bpm import BPMOptions

    settings = bpm_settings(args, attribute_provider=args.provider)
    metrics = _metrics_of(args)
    wants_hatie = any(m.strip().startswith("hatie") for m in metrics.split(","))
    hatie = hatie_from_args(args, settings, want=wants_hatie)
    options = BatchOptions(
        metrics=metrics, feature_metrics=feature_metrics_from_args(args), networks=networks_from_args(args), augclip=options_from_args(args), provider=args.provider, batch_size=args.batch_size,
        text_batch_size=args.text_batch_size, workers=args.workers, fit_workers=args.fit_workers,
        fit_executor=args.fit_executor, decode_executor=args.decode_executor, overwrite=args.overwrite, retry_failed=args.retry_failed,
        skip_invalid=args.skip_invalid, parser=args.parser,
        bpm=BPMOptions(alpha=args.bpm_alpha, box_threshold=args.box_threshold, regions=args.bpm_regions),
        judge=judge_options_from_args(args, settings), **hatie)
    ray_options = None
    if args.engine == "ray":
        from ..batch.ray_engine import RayOptions

        ray_options = RayOptions(
            address=args.ray_address, actors=args.ray_actors, num_gpus=args.ray_gpus_per_actor,
            num_cpus=args.ray_cpus_per_actor, items_per_batch=args.ray_items_per_batch,
            attribute_actors=args.ray_attribute_actors, extractions_per_second=args.ray_attribute_rate,
            bpm_actors=args.ray_bpm_actors)
    runner = BatchRunner(args.manifest, args.out, options=options, settings=settings, csv=args.csv,
                         show_progress=not args.no_progress, engine=args.engine, ray_options=ray_options)
    try:
        summary = runner.run()
    except KeyboardInterrupt:
        if runner.summary is not None:
            runner.summary.interrupted = True
            print(runner.summary.format(), file=sys.stderr)
        raise
    print(json.dumps(summary.to_dict(), indent=2) if args.json else summary.format())
    return 1 if summary.n_failed else 0
