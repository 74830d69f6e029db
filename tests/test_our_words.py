"""No project file repeats the reference papers' wording: no run of 10 consecutive words in common.

The papers' methods are facts we follow; their sentences, prompts and examples are not ours to
ship. Every tracked text file (code, docs, tests, asset metadata) is compared with the text
extractions of the papers after normalising case and punctuation. Citing a paper by its title is
not copying: runs inside a title (the quoted titles in the papers' README) are allowed. The papers
live beside the repository (``../shared/papers``, where CI clones it); ``AUGCLIP_PAPERS_DIR``
points elsewhere.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN = 10  # words in a row that count as copied
_WORD = re.compile(r"[a-z0-9]+")


def papers_dir() -> Path:
    return Path(os.environ.get("AUGCLIP_PAPERS_DIR") or REPO.parent / "shared" / "papers")


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words: punctuation, quotes, line breaks and code syntax do not count."""
    return _WORD.findall(text.lower())


def runs(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + RUN]) for i in range(len(tokens) - RUN + 1)}


def title_runs(folder: Path) -> set[tuple[str, ...]]:
    """Word runs of the papers' titles, quoted in the folder's README (citing a title is allowed)."""
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8", errors="replace") if readme.is_file() else ""
    allowed: set[tuple[str, ...]] = set()
    for title in re.findall(r'"([^"]+)"', text):
        allowed |= runs(words(title))
    return allowed


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    files = []
    for name in names.decode().split("\0"):
        path = REPO / name
        if not name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:
            continue  # binary (images)
        files.append(path)
    return files


def copied_runs(text: str, paper_runs: set[tuple[str, ...]]) -> list[str]:
    """The maximal stretches of ``text`` whose every 10-word window occurs in a paper."""
    tokens = words(text)
    hits = [i for i in range(len(tokens) - RUN + 1) if tuple(tokens[i:i + RUN]) in paper_runs]
    stretches, start, end = [], None, None
    for i in hits:
        if start is not None and i <= end:
            end = i + RUN
            continue
        if start is not None:
            stretches.append(" ".join(tokens[start:end]))
        start, end = i, i + RUN
    if start is not None:
        stretches.append(" ".join(tokens[start:end]))
    return stretches


def test_detector_finds_a_copied_run_and_ignores_case_and_punctuation():
    paper = runs(words("The quick brown fox jumps over the lazy dog near the river bank today."))
    assert copied_runs("x = 'THE QUICK, brown fox -- jumps over the lazy dog, near the' + y", paper) == [
        "the quick brown fox jumps over the lazy dog near the"]
    assert copied_runs("the quick brown fox jumps over the lazy cat near the river", paper) == []


def test_no_ten_word_run_of_the_papers_in_any_project_file():
    folder = papers_dir()
    papers = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not papers:
        pytest.skip(f"reference papers not found at {folder} (set AUGCLIP_PAPERS_DIR to check against them)")
    paper_runs: set[tuple[str, ...]] = set()
    for paper in papers:
        paper_runs |= runs(words(paper.read_text(encoding="utf-8", errors="replace")))
    paper_runs -= title_runs(folder)
    found = {}
    for path in tracked_text_files():
        stretches = copied_runs(path.read_text(encoding="utf-8", errors="replace"), paper_runs)
        if stretches:
            found[str(path.relative_to(REPO))] = stretches
    assert not found, "text copied from the papers (rewrite it in our own words):\n" + "\n".join(
        f"{name}: {stretch!r}" for name, stretches in found.items() for stretch in stretches)


def test_a_cited_title_is_allowed(tmp_path):
    (tmp_path / "README.md").write_text('| 000.txt | Toy: "One Two Three Four Five Six Seven Eight Nine Ten Eleven" |\n')
    paper = runs(words("Intro. One two three four five six seven eight nine ten eleven twelve thirteen."))
    paper -= title_runs(tmp_path)
    assert copied_runs("cite: one two three four five six seven eight nine ten eleven", paper) == []
    assert copied_runs("two three four five six seven eight nine ten eleven twelve", paper) != []
