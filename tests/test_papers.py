"""Papers are cited by title, authors and venue: README's list, the page's help and the HATIE tab use
augclip_demo.papers; no text points at the local papers folder a clone does not have."""

from __future__ import annotations

import re

from augclip_demo.papers import PAPERS, Paper
from tests.support import ROOT


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_readme_cites_every_paper_as_the_module_does():
    readme = _flat((ROOT / "README.md").read_text())
    for key, paper in PAPERS.items():
        cited = f'{", ".join(paper.authors)}. "{paper.title}". {paper.venue}'
        assert cited in readme, key


def test_short_and_full_forms():
    paper = Paper("A Title", ("Ada Lovelace", "Alan Turing", "Grace Hopper"), "VENUE 2000")
    assert paper.short == "Lovelace et al., VENUE 2000"
    assert Paper("T", ("Ada Lovelace", "Alan Turing"), "V").short == "Lovelace, V"
    assert paper.full == 'Ada Lovelace, Alan Turing, Grace Hopper. "A Title". VENUE 2000.'


def test_the_page_cites_the_papers_it_names():
    from augclip_demo.ui.evaluate.views import BPM_HELP, RELEVANCY_HELP
    from augclip_demo.ui.hatie.layout import HELP
    from augclip_demo.ui.help import help_markdown

    assert f"Ryu et al., CVPR 2025: *{PAPERS['hatie'].title}*" in HELP
    assert "Li et al., ICML 2025" in BPM_HELP and "Chefer et al., ICCV 2021" in RELEVANCY_HELP
    text = help_markdown()
    assert all(paper.full in text for paper in PAPERS.values())


def test_nothing_points_at_the_local_papers_folder():
    pattern = re.compile(r"paper 00\d|papers/|(first|second|third|fourth) paper in")
    files = [*(ROOT / "augclip_demo").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    hits = [f"{path.relative_to(ROOT)}:{number}" for path in files
            for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
