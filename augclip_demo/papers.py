"""The papers this project implements or follows, cited once: the page's help, the HATIE tab and the docs'
tables name them from here (README.md's *Papers* section carries the same citations; tests/test_papers.py
checks that they agree)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """One paper: its title, authors (in the paper's order) and where it was published."""

    title: str
    authors: tuple[str, ...]
    venue: str

    @property
    def short(self) -> str:
        """``Surname et al., VENUE`` (the form used inside sentences)."""
        lead = self.authors[0].split()[-1]
        return f"{lead} et al., {self.venue}" if len(self.authors) > 2 else f"{lead}, {self.venue}"

    @property
    def full(self) -> str:
        """Authors, title in quotes, venue: the form a reference list uses."""
        return f'{", ".join(self.authors)}. "{self.title}". {self.venue}.'


_AUGCLIP = Paper("Preserve or Modify? Context-Aware Evaluation for Balancing Preservation and Modification in "
                "Text-Guided Image Editing",
                ("Yoonjeon Kim", "Soohyun Ryu", "Yeonsung Jung", "Hyunkoo Lee", "Joowon Kim", "June Yong Yang",
                 "Jaeryong Hwang", "Eunho Yang"), "CVPR 2025")
BPM = Paper("Balancing Preservation and Modification: A Region and Semantic Aware Metric for Instruction-Based "
            "Image Editing", ("Zhuoying Li", "Zhu Xu", "Yuxin Peng", "Yang Liu"), "ICML 2025")
HATIE = Paper("Towards Scalable Human-aligned Benchmark for Text-guided Image Editing",
              ("Suho Ryu", "Kihyun Kim", "Eugene Baek", "Dongsoo Shin", "Joonseok Lee"), "CVPR 2025")
RELEVANCY = Paper("Generic Attention-model Explainability for Interpreting Bi-Modal and Encoder-Decoder Transformers",
                  ("Hila Chefer", "Shir Gur", "Lior Wolf"), "ICCV 2021")

PAPERS: dict[str, Paper] = {"augclip": _AUGCLIP, "bpm": BPM, "hatie": HATIE, "relevancy": RELEVANCY}
