"""The on-disk attribute cache: hits, misses on every key part, recovery from damaged files."""

from __future__ import annotations

import json
import logging

import pytest

from augclip_demo.attributes import Attributes, ClipVocabProvider, Provenance
from augclip_demo.attributes.disk_cache import AttributeCache
from augclip_demo.config import Settings
from tests.support import draw_scene

KEY = {"source_sha256": "ab" * 32, "target_text": "a cat", "source_text": "a dog", "provider": "openai",
       "model": "gpt-4o", "prompt_version": "v1", "seed": 0, "samples": 1}
ATTRS = Attributes(["a dog is brown"], ["a cat is gray"], Provenance(provider="openai", model="gpt-4o", seconds=1.5))


def test_hit_returns_what_was_stored(tmp_path):
    cache = AttributeCache(tmp_path)
    assert cache.get(KEY) is None
    path = cache.put(KEY, ATTRS)
    assert path is not None and path.parent.name == "openai" and not list(path.parent.glob(".tmp-*"))
    hit = cache.get(dict(KEY))
    assert hit is not None and hit.to_dict() == ATTRS.to_dict()
    assert (cache.hits, cache.misses) == (1, 1)


@pytest.mark.parametrize("part, value", [
    ("source_sha256", "cd" * 32), ("target_text", "a tiger"), ("source_text", None), ("provider", "clip-vocab"),
    ("model", "llava"), ("prompt_version", "v2"), ("seed", 1), ("samples", 3),
])
def test_any_key_part_changes_the_entry(tmp_path, part, value):
    cache = AttributeCache(tmp_path)
    cache.put(KEY, ATTRS)
    assert cache.get({**KEY, part: value}) is None
    assert cache.get(KEY) is not None


@pytest.mark.parametrize("damage", [
    b"{not json",
    b"",
    b"\xff\xfe\x00binary",
    json.dumps({"format": 1, "key": {"other": 1}, "attributes": ATTRS.to_dict()}).encode(),
    json.dumps({"format": 1, "key": KEY, "attributes": {"source_attributes": "oops"}}).encode(),
    json.dumps({"format": 1, "key": KEY, "attributes": {"source_attributes": [], "target_attributes": []}}).encode(),
    json.dumps([1, 2, 3]).encode(),
])
def test_damaged_file_is_ignored_with_a_warning_and_rewritten(tmp_path, caplog, damage):
    cache = AttributeCache(tmp_path)
    path = cache.put(KEY, ATTRS)
    path.write_bytes(damage)
    caplog.set_level(logging.WARNING)
    assert cache.get(KEY) is None
    assert "unreadable" in caplog.text and str(path) in caplog.text
    cache.put(KEY, ATTRS)
    assert cache.get(KEY).source == ATTRS.source


def test_unwritable_cache_warns_and_carries_on(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    caplog.set_level(logging.WARNING)
    assert AttributeCache(blocker).put(KEY, ATTRS) is None
    assert "could not write" in caplog.text


@pytest.mark.slow  # the clip-vocab provider encodes its ~3,300-phrase vocabulary first (~10 s)
def test_provider_recovers_from_a_corrupt_entry(tiny_encoder, tmp_path, caplog):
    settings = Settings.from_env(cache_dir=tmp_path)
    source = draw_scene(shapes=[("ellipse", (10, 10, 50, 50), "blue")])
    provider = ClipVocabProvider(tiny_encoder, settings=settings)
    first = provider.extract(source, "a blue ball in snow")
    files = list((tmp_path / "attributes" / "clip-vocab").glob("*.json"))
    assert len(files) == 1
    files[0].write_text('{"format": 1, "key": ')  # truncated by a crash
    caplog.set_level(logging.WARNING)
    second = provider.extract(source, "a blue ball in snow")
    assert second.provenance.extra["cache"] == "miss" and "unreadable" in caplog.text
    assert second.source == first.source and second.target == first.target
    assert provider.extract(source, "a blue ball in snow").provenance.extra["cache"] == "hit"
    assert json.loads(files[0].read_text())["attributes"]["source_attributes"] == first.source
