"""AugCLIP Studio: context-aware evaluation of text-guided image edits.

The public API is every name in :data:`__all__`, imported from here::

    from augclip_demo import Attributes, evaluate

    report = evaluate("source.png", ["edit_a.png", "edit_b.png"], "a pink dahlia flower",
                      source_text="an orange dahlia flower",
                      attributes=Attributes(source=["orange petals"], target=["pink petals"]))
    print(report.verdict())

Module paths below this package may change between releases; these names will not. Each name is
imported on first use (PEP 562 module ``__getattr__``), so ``import augclip_demo`` stays light
and only what you touch loads torch, open_clip or scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it (one place; tests/test_api.py checks every entry)
_PUBLIC: dict[str, str] = {
    # one call, and the evaluator behind it
    "evaluate": "augclip_demo.api",
    "Evaluator": "augclip_demo.pipeline",
    "AugCLIPOptions": "augclip_demo.pipeline",
    "Report": "augclip_demo.report",
    "EditResult": "augclip_demo.report",
    # attribute lists and the providers that make them
    "Attributes": "augclip_demo.attributes",
    "Provenance": "augclip_demo.attributes",
    "ManualProvider": "augclip_demo.attributes",
    "OpenAIProvider": "augclip_demo.attributes",
    "ClipVocabProvider": "augclip_demo.attributes",
    "get_provider": "augclip_demo.attributes",
    # the metrics on embeddings and pixels (numpy and scikit-learn only)
    "augclip_score": "augclip_demo.metrics.augclip",
    "attribute_weights": "augclip_demo.metrics.augclip",
    "AugCLIPResult": "augclip_demo.metrics.augclip",
    "clip_dir": "augclip_demo.metrics.clip_metrics",
    "clip_i": "augclip_demo.metrics.clip_metrics",
    "clip_t": "augclip_demo.metrics.clip_metrics",
    "augmented_clip_dir": "augclip_demo.metrics.clip_metrics",
    "l2_distance": "augclip_demo.metrics.pixel",
    # instructions and BPM
    "parse_instruction": "augclip_demo.instructions",
    "ParsedInstruction": "augclip_demo.instructions",
    "bpm_score": "augclip_demo.bpm",
    "BPMOptions": "augclip_demo.bpm",
    "BPMResult": "augclip_demo.bpm",
    "RegionThresholds": "augclip_demo.bpm",
    "ObjectMasks": "augclip_demo.bpm",
    # the MLLM judge (an OpenAI-compatible chat model)
    "MLLMJudge": "augclip_demo.judge",
    "JudgeOptions": "augclip_demo.judge",
    # explanations
    "explain_report": "augclip_demo.explain",
    "ExplainOptions": "augclip_demo.explain",
    "ReportExplanations": "augclip_demo.explain",
    "comparison_grid": "augclip_demo.explain",
    "ComparisonGrid": "augclip_demo.report.comparison",
    # models, images, settings
    "ClipEncoder": "augclip_demo.inference",
    "get_encoder": "augclip_demo.inference",
    "LoadedImage": "augclip_demo.io",
    "open_image": "augclip_demo.io",
    "Settings": "augclip_demo.config",
    "EXAMPLES_DIR": "augclip_demo.config",
    # batches of edits and the papers' protocols
    "run_batch": "augclip_demo.batch.runner",
    "BatchOptions": "augclip_demo.batch.runner",
    "compute_protocols": "augclip_demo.batch.protocol_tables",
    # errors a caller may catch (every one is an AugclipError)
    "AugclipError": "augclip_demo.errors",
    "InputError": "augclip_demo.errors",
    "ImageLoadError": "augclip_demo.errors",
    "InstructionParseError": "augclip_demo.errors",
    "WeightsUnavailableError": "augclip_demo.errors",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'augclip_demo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
