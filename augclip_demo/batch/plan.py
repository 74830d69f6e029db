"""The planning pass of a batch run, and the second pass that streams the planned items.

The plan reads the manifest once: it checks every line (files included) and counts, for each
image path and each text, how many pending items use it, so the embedding store can drop an
embedding as soon as its last user is scored. Nothing else is kept (no images, no items).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .manifest import ManifestItem, iter_manifest


def image_key(path: Path) -> str:
    """The key of an image in a run: the manifest's folder (resolved) joined with the path as written."""
    return str(path)


def item_static_texts(item: ManifestItem, needs: set[str]) -> set[str]:
    """The texts an item needs encoded that are known before decoding (target, source, attributes)."""
    texts: set[str] = set()
    if "target_text_embedding" in needs:
        texts.add(item.target_text)
    if "source_text_embedding" in needs and item.source_text:
        texts.add(item.source_text)
    if "output_caption_embedding" in needs and item.output_caption:
        texts.add(item.output_caption)
    if "attribute_embeddings" in needs and item.attributes is not None:
        texts.update(item.attributes.source)
        texts.update(item.attributes.target)
    return texts


@dataclass
class RunPlan:
    n_items: int = 0  # valid items in the manifest
    pending: int = 0  # valid items not in the results file yet
    image_uses: Counter[str] = field(default_factory=Counter)
    text_uses: Counter[str] = field(default_factory=Counter)
    needs_provider: bool = False  # some pending item has no attributes and a metric needs them
    problems: list[str] = field(default_factory=list)
    rejected_lines: set[int] = field(default_factory=set)  # lines with problems (as many as the problems)


def make_plan(manifest: Path, done: set[str], needs: set[str]) -> RunPlan:
    plan = RunPlan()
    for item in iter_manifest(manifest, problems=plan.problems, rejected_lines=plan.rejected_lines):
        plan.n_items += 1
        if item.id in done:
            continue
        plan.pending += 1
        for path in {image_key(p) for p in item.image_paths()}:
            plan.image_uses[path] += 1
        for text in item_static_texts(item, needs):
            plan.text_uses[text] += 1
        if "attribute_embeddings" in needs and item.attributes is None:
            plan.needs_provider = True
    return plan


def planned_items(manifest: Path, plan: RunPlan, done: set[str]) -> Iterator[tuple[int, ManifestItem]]:
    """The plan's pending items again, numbered from 0 in manifest order.

    This pass only parses (the plan checked every file): it skips the lines the plan rejected, so
    a line refused for a missing file is not run with ``--skip-invalid``; a file that vanished in
    between fails its item when it is opened.
    """
    ordinal = 0
    problems: list[str] = []  # already reported by the plan
    for item in iter_manifest(manifest, problems=problems, check_files=False):
        if item.line in plan.rejected_lines or item.id in done:
            continue
        yield ordinal, item
        ordinal += 1
