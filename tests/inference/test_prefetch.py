"""Start-up prefetch of a feature's models (the table in inference.needs) against the local model hub."""

from __future__ import annotations

import logging

from augclip_demo.config import Settings
from augclip_demo.inference.needs import page_models
from augclip_demo.inference.prefetch import prefetch_in_background
from augclip_demo.inference.weights.fetch import sha256_of
from tests.support import published


def sam_settings(hub, cache, sha256: str) -> Settings:
    """BPM's standard preset where only SAM has weights to fetch (CLIP and GroundingDINO are random ones)."""
    return Settings.from_env({}, cache_dir=str(cache), sam_model="tiny", device="cpu", clip_model="random:tiny",
                             gdino_model="random:tiny", bpm_preset="standard",
                             sam_url=f"{hub.url}/files/{published.SAM_FILE}", sam_sha256=sha256)


def test_prefetch_puts_the_sam_checkpoint_in_the_cache_and_the_second_run_asks_nothing(hub, online):
    settings = sam_settings(hub, online, sha256_of(hub.published["sam_path"]))
    before = hub.count()
    prefetch_in_background(settings, page_models(settings)).join(timeout=60)
    assert hub.count() > before
    cached = [p for p in online.rglob(published.SAM_FILE) if p.is_file()]
    assert cached and sha256_of(cached[0]) == sha256_of(hub.published["sam_path"])
    after_first = hub.count()
    prefetch_in_background(settings, page_models(settings)).join(timeout=60)
    assert hub.count() == after_first  # already there: no request


def test_a_failed_prefetch_is_logged_not_raised(hub, online, caplog):
    settings = sam_settings(hub, online, "0" * 64)  # wrong checksum: the file is refused
    with caplog.at_level(logging.WARNING, logger="augclip_demo.inference.prefetch"):
        thread = prefetch_in_background(settings, page_models(settings))
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert any("could not prefetch sam tiny" in r.getMessage() for r in caplog.records)
    assert not [p for p in online.rglob(published.SAM_FILE) if p.is_file()]
