"""The app's work folders: deleted when the session ends, by age, and oldest-first over the size cap."""

from __future__ import annotations

import os
import time
from pathlib import Path

from augclip_demo.ui.storage import MIN_AGE_S, WorkFolders


def _fill(folder: Path, size: int, age_s: float = 0.0) -> Path:
    folder.mkdir(exist_ok=True)
    file = folder / "figure.png"
    file.write_bytes(b"x" * size)
    when = time.time() - age_s
    os.utime(file, (when, when))
    os.utime(folder, (when, when))
    return folder


def test_a_sessions_folders_go_with_the_session(tmp_path):
    folders = WorkFolders(tmp_path)
    mine = [folders.new("s1"), folders.new("s1", prefix="augclip-batch-")]
    other = folders.new("s2")
    assert folders.release("s1") == 2
    assert not any(p.exists() for p in mine) and other.is_dir()
    folders.release_folder(other)
    assert not other.exists()
    outside = tmp_path / "not-ours"
    outside.mkdir()
    folders.release_folder(outside)  # only augclip-app-* / augclip-batch-* folders are ever deleted
    assert outside.is_dir()


def test_old_folders_go_even_without_an_owner(tmp_path):
    folders = WorkFolders(tmp_path, max_age_s=3600)
    stale = _fill(tmp_path / "augclip-app-left-by-a-killed-server", 10, age_s=7200)
    fresh = _fill(folders.new(None), 10)
    unrelated = _fill(tmp_path / "somebody-else", 10, age_s=7200)
    result = folders.sweep()
    assert not stale.exists() and fresh.is_dir() and unrelated.is_dir()
    assert result["folders_removed"] == 1


def test_the_total_is_capped_oldest_first_and_young_files_are_spared(tmp_path):
    folders = WorkFolders(tmp_path, max_age_s=10**6, max_bytes=2500)
    old = _fill(folders.new("a"), 1000, age_s=3 * MIN_AGE_S)
    middle = _fill(folders.new("b"), 1000, age_s=2 * MIN_AGE_S)
    cache = tmp_path / "gradio-cache-file.png"
    cache.write_bytes(b"y" * 1000)
    when = time.time() - 1.5 * MIN_AGE_S
    os.utime(cache, (when, when))
    young = _fill(folders.new("c"), 1000)
    result = folders.sweep(cache_files=[cache])
    assert not old.exists() and not middle.exists()  # 4000 bytes -> evict oldest until <= 2500
    assert cache.exists() and young.is_dir() and result["bytes"] == 2000
    # Everything young: over the cap, but nothing a request may still be reading is deleted.
    folders.max_bytes = 10
    assert folders.sweep()["bytes"] == 1000 and young.is_dir()
    # Another process's folders (same temporary folder) count for age only, never for the size cap.
    other = WorkFolders(tmp_path, max_age_s=10**6, max_bytes=10)
    old_elsewhere = _fill(tmp_path / "augclip-app-of-another-server", 1000, age_s=3 * MIN_AGE_S)
    assert other.sweep()["bytes"] == 0 and old_elsewhere.is_dir() and young.is_dir()
