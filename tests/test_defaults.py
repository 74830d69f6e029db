"""Each AugCLIP and UMAP-view default has one place, the metric's or the view's own signature; every entry
point (options, Python API, command line, page, explanations) starts from the same values."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

from augclip_demo import api
from augclip_demo.cli.explain import register as register_explain
from augclip_demo.cli.score import add_augclip_args, options_from_args
from augclip_demo.explain.explanations import ExplainOptions
from augclip_demo.explain.hyperplane import umap_view
from augclip_demo.metrics.augclip import AUGCLIP_DEFAULTS, augclip_score
from augclip_demo.pipeline import AugCLIPOptions


def _signature_defaults(function) -> dict:
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if p.default is not inspect.Parameter.empty}


def test_augclip_defaults_are_the_metric_signature_s_everywhere():
    own = _signature_defaults(augclip_score)
    assert own == AUGCLIP_DEFAULTS and own["C"] == 1.0 and own["classifier"] == "svm"  # the paper's
    assert {f.name: f.default for f in dataclasses.fields(AugCLIPOptions)} == own
    from_api = _signature_defaults(api.evaluate)
    assert {k: from_api[k] for k in ("classifier", "C", "weighting", "include_images")} == {
        k: own[k] for k in ("classifier", "C", "weighting", "include_images")}
    parser = argparse.ArgumentParser()
    add_augclip_args(parser)
    assert options_from_args(parser.parse_args([])) == AugCLIPOptions()
    assert "(default 1.0)" in " ".join(parser.format_help().split())  # the help prints the metric's value


def test_umap_view_defaults_are_the_view_signature_s_everywhere():
    own = _signature_defaults(umap_view)
    options = ExplainOptions()
    assert (options.umap_neighbors, options.umap_min_dist, options.umap_seed) == (
        own["n_neighbors"], own["min_dist"], own["seed"])
    subparsers = argparse.ArgumentParser().add_subparsers()
    register_explain(subparsers)
    explain = subparsers.choices["explain"]
    assert explain.get_default("umap_neighbors") is None  # unset: ExplainOptions' own, which is the view's
