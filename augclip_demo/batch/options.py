"""What a batch run is asked to do (:class:`BatchOptions`) and what it did (:class:`BatchSummary`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..bpm import BPMOptions
from ..errors import InputError
from ..hatie.criteria import HatieOptions
from ..instructions import PARSERS
from ..judge import JUDGE_METRICS, JudgeOptions
from ..metrics.suite import METRICS, metric_keys, parse_metric_keys
from ..pipeline import FEATURE_METRICS, AugCLIPOptions, FeatureNetworks
from ..report import UNTRAINED_WARNING

#: The bases a batch run computes: every metric of these bases can be chosen with ``--metrics``.
_BATCH_BASES: tuple[str, ...] = ("embeddings", "pixels", "regions", "judge")


def batch_metric_keys() -> list[str]:
    """Every metric a batch run can compute, in table order (BPM included: the regions stage)."""
    return [key for key in metric_keys() if METRICS[key].basis in _BATCH_BASES]


@dataclass
class BatchOptions:
    """Choices of a batch run (the CLI flags map one to one)."""

    metrics: list[str] = field(default_factory=lambda: parse_metric_keys(None))
    augclip: AugCLIPOptions = field(default_factory=AugCLIPOptions)
    provider: str | None = None  # None: settings.attribute_provider
    batch_size: int | None = None  # images per forward pass (default: 256 on GPU, 64 on CPU)
    text_batch_size: int | None = None  # texts per forward pass (default: 1024 on GPU, 64 on CPU)
    workers: int | None = None  # decode threads or processes (default: number of CPUs, at most 16)
    fit_workers: int | None = None
    fit_executor: str = "auto"  # auto | thread | process
    decode_executor: str = "auto"  # auto | thread | process (auto: threads; processes not measured on a GPU)
    max_inflight: int | None = None  # items being decoded at once (default: max(batch_size, 4 * workers))
    overwrite: bool = False
    retry_failed: bool = False
    skip_invalid: bool = False
    bpm: BPMOptions = field(default_factory=BPMOptions)  # alpha, box threshold, region thresholds (regions stage)
    parser: str = "rules"  # instruction parser of the regions stage: rules (offline) or llm
    # the MLLM judge (judge stage): given options add its rows; its rows without options use AUGCLIP_JUDGE_*
    judge: JudgeOptions | None = None
    hatie: HatieOptions = field(default_factory=HatieOptions)  # HATIE's named choices (regions stage)
    hatie_features: Any = "auto"  # DINOv2 / LPIPS for HATIE: "auto" (the settings' networks), None (left out, noted)
    hatie_vqa: Any = None  # HATIE's VQA scorer (needed when hatie.vqa is on)
    hatie_calibrated: dict[str, dict[str, float]] = field(default_factory=dict)  # saved weight sets by name
    # the metrics that load a network (dino_gt / structure_distance / lpips_unedited) run when named here or by
    # name in ``metrics`` ("all" and the defaults leave them out, with their reason, as the Evaluator does)
    feature_metrics: list[str] = field(default_factory=list)
    networks: FeatureNetworks = field(default_factory=FeatureNetworks)

    def __post_init__(self) -> None:
        named = [] if self.metrics is None else [
            name.strip() for part in ([self.metrics] if isinstance(self.metrics, str) else self.metrics)
            for name in str(part).split(",")]
        unknown = [key for key in self.feature_metrics if key not in FEATURE_METRICS]
        if unknown:
            raise InputError(f"unknown feature metric(s) {', '.join(unknown)}; choose from {', '.join(FEATURE_METRICS)}")
        self.feature_metrics = list(dict.fromkeys([*self.feature_metrics, *(n for n in named if n in FEATURE_METRICS)]))
        self.metrics = parse_metric_keys(self.metrics, supplied_bases=_BATCH_BASES)
        self.metrics += [key for key in self.feature_metrics if key not in self.metrics]
        if self.judge is not None:
            if not isinstance(self.judge, JudgeOptions):
                raise InputError(f"judge options must be JudgeOptions, got {type(self.judge).__name__}")
            self.metrics += [key for key in JUDGE_METRICS if key not in self.metrics]
        if self.parser not in PARSERS:
            raise InputError(f"instruction parser must be one of {', '.join(PARSERS)}, got {self.parser!r}")
        if not isinstance(self.bpm, BPMOptions):
            raise InputError(f"bpm options must be BPMOptions, got {type(self.bpm).__name__}")
        if not isinstance(self.networks, FeatureNetworks):
            raise InputError(f"feature networks must be FeatureNetworks, got {type(self.networks).__name__}")
        if self.fit_executor not in ("auto", "thread", "process"):
            raise InputError(f"fit executor must be auto, thread or process, got {self.fit_executor!r}")
        if self.decode_executor not in ("auto", "thread", "process"):
            raise InputError(f"decode executor must be auto, thread or process, got {self.decode_executor!r}")
        for name in ("batch_size", "text_batch_size", "workers", "fit_workers", "max_inflight"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise InputError(f"{name.replace('_', ' ')} must be a positive integer, got {value!r}")


@dataclass
class BatchSummary:
    manifest: str
    out: str
    n_items: int = 0  # valid items in the manifest
    n_skipped: int = 0  # already in the results file
    n_ok: int = 0
    n_failed: int = 0
    invalid: list[str] = field(default_factory=list)  # manifest problems skipped with skip_invalid
    failures: list[tuple[str, str]] = field(default_factory=list)  # (id, error), the first 50
    seconds: float = 0.0
    model: str = ""
    untrained: bool = False
    csv: str | None = None
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def n_run(self) -> int:
        return self.n_ok + self.n_failed

    @property
    def items_per_second(self) -> float:
        return self.n_run / self.seconds if self.seconds > 0 else 0.0

    def count(self, record: dict[str, Any]) -> None:
        """Count one written record (the first 50 failures are kept with their errors)."""
        if record["status"] == "ok":
            self.n_ok += 1
            return
        self.n_failed += 1
        if len(self.failures) < 50:
            self.failures.append((record["id"], record["error"]))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["items_per_second"] = self.items_per_second
        return data

    def format(self) -> str:
        head = "interrupted" if self.interrupted else "done"
        lines = [f"batch {head}: {self.n_ok} item(s) scored, {self.n_failed} failed, {self.n_skipped} already done "
                 f"(of {self.n_items}) in {self.seconds:.1f}s ({self.items_per_second:.2f} items/s)"]
        lines.append(f"results: {self.out}" + (f" | csv: {self.csv}" if self.csv else ""))
        if self.untrained:
            lines.append(f"!! {UNTRAINED_WARNING} ({self.model})")
        for item_id, error in self.failures[:10]:
            lines.append(f"failed {item_id}: {error}")
        if len(self.failures) > 10 or self.n_failed > len(self.failures[:10]):
            lines.append(f"... {self.n_failed - min(10, len(self.failures))} more failure(s): see the results file")
        if self.invalid:
            lines.append(f"skipped {len(self.invalid)} invalid manifest line problem(s), e.g. {self.invalid[0]}")
        if self.interrupted:
            lines.append("rerun the same command to resume (finished items are kept)")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)
