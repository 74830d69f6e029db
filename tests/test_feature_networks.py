"""One row per feature network (choices.FEATURE_NETWORKS): the options, the command line, batch's resume
signature and the offline demo read it."""

from __future__ import annotations

import argparse

from augclip_demo.batch.item_steps import feature_signature
from augclip_demo.choices import FEATURE_METRICS, FEATURE_NETWORKS, FeatureNetworks
from augclip_demo.cli.score import add_network_args, networks_from_args
from augclip_demo.config import Settings
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
