"""`fetch_model` reads everything per family from the family table and the family's wrapper."""

from __future__ import annotations

import pytest

from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError
from augclip_demo.inference.families import FAMILIES
from augclip_demo.inference.lazy import LazyModel
from augclip_demo.inference.prefetch import fetch_model


def test_an_unknown_family_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match="unknown model family 'resnet'; one of clip, "):
        fetch_model("resnet", "resnet50", Settings.from_env(cache_dir=tmp_path), progress=False)


def test_every_family_s_wrapper_says_how_its_weights_are_fetched():
    for key, row in FAMILIES.items():
        assert row.wrapper_class.fetch_weights is not LazyModel.fetch_weights, key


def test_random_weights_need_no_download(tmp_path):
    fetched = fetch_model("sam", "random:tiny", Settings.from_env(cache_dir=tmp_path), progress=False)
    assert fetched.files == [] and "nothing to download" in fetched.note
