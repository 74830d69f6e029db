"""One row per feature network (choices.FEATURE_NETWORKS): the options, the command line, batch's resume
signature, the offline demo and the pipeline's feature inputs read it."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import numpy as np
from PIL import Image

from augclip_demo.batch.item_steps import feature_signature
from augclip_demo.choices import FEATURE_METRICS, FEATURE_NETWORKS, FeatureNetworks
from augclip_demo.cli.score import add_network_args, networks_from_args
from augclip_demo.config import Settings
from augclip_demo.pipeline import features
from augclip_demo.ui.first_contact import DEMO_CLIP, demo_networks


def test_every_feature_metric_has_one_network_and_each_default_is_its_row_s():
    owners = [net.field for net in FEATURE_NETWORKS for _ in net.metrics]
    assert sorted(m for net in FEATURE_NETWORKS for m in net.metrics) == sorted(FEATURE_METRICS) and len(owners) == 5
    defaults = FeatureNetworks()
    for net in FEATURE_NETWORKS:
        assert getattr(defaults, net.field) == net.default
        for metric in net.metrics:
            assert defaults.spec_of(metric) == net.default and net.default in FEATURE_METRICS[metric]


def test_the_flags_come_from_the_rows_and_reach_the_networks_and_the_resume_signature():
    parser = argparse.ArgumentParser()
    add_network_args(parser.add_argument_group("networks"))
    assert networks_from_args(parser.parse_args([])) == FeatureNetworks()
    chosen = networks_from_args(parser.parse_args(["--structure-model", "random:tiny", "--lpips-net", "alex"]))
    assert (chosen.structure, chosen.lpips, chosen.dino) == ("random:tiny", "alex", FeatureNetworks().dino)
    assert feature_signature(chosen, ["structure_distance", "lpips_unedited", "l2"]) == {
        "structure_distance": "random:tiny", "lpips_unedited": "alex", "structure_pixel_scale": 255.0}


def test_the_demo_runs_random_networks_and_its_own_clip():
    networks = demo_networks(Settings.from_env(clip_model=DEMO_CLIP))
    assert networks is not None and networks.pie_clip == DEMO_CLIP
    assert all(getattr(networks, net.field).startswith("random:") for net in FEATURE_NETWORKS if net.family != "clip")


def test_each_row_names_a_runner_the_inputs_it_needs_and_its_other_fields():
    item_fields = {f.name for f in dataclasses.fields(features.FeatureItem)}
    network_fields = {f.name for f in dataclasses.fields(FeatureNetworks)}
    for net in FEATURE_NETWORKS:
        runner = features._runner(net)
        assert callable(runner) and list(inspect.signature(runner).parameters) == ["item", "spec"], net.field
        assert set(net.needs) <= item_fields - {"wanted", "networks", "settings"}, net.field
        assert set(net.options) <= network_fields - {n.field for n in FEATURE_NETWORKS}, net.field


def run_test_network(item: features.FeatureItem, spec: str) -> features.FeatureOutput:
    """A stand-in network for the test below: each edit's mean pixel, computed with numpy alone."""
    return features.FeatureOutput({"test_means": [float(np.asarray(e).mean()) for e in item.edits]}, [f"ran {spec}"])


def test_a_new_feature_network_is_one_row_and_its_runner(monkeypatch):
    row = dataclasses.replace(FEATURE_NETWORKS[0], field="dino", metrics=("test_metric",), needs=("ground_truth",),
                              runner=f"{__name__}:run_test_network")
    monkeypatch.setattr(features, "FEATURE_NETWORKS", (row,))
    edits = [Image.new("RGB", (8, 6), (10, 20, 30)), Image.new("RGB", (8, 6), (200, 100, 0))]
    source = Image.new("RGB", (8, 6))
    networks = FeatureNetworks(dino="random:whatever")
    fields, notes = features.feature_inputs(source, edits, source, None, ["test_metric"], networks, Settings())
    assert fields == {"test_means": [20.0, 100.0]} and notes == ["ran random:whatever"]
    # without the input its row needs, or when none of its metrics is asked for, it does not run
    assert features.feature_inputs(source, edits, None, None, ["test_metric"], networks, Settings()) == ({}, [])
    assert features.feature_inputs(source, edits, source, None, ["dino_gt"], networks, Settings()) == ({}, [])
