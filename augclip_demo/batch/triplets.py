"""Ground-truth-test triplets (AugCLIP Sec. 5.2, BPM Sec. 4.1): gt, ep and em edits of each item.

For every item of a manifest that has a ``gt`` edit (a well-edited image, e.g. TEdBench's Imagic
output or MagicBrush's annotated output):

* **ep** (excessively preserved) = the source image with a negligible change that ignores the
  target text: i.i.d. Gaussian noise of standard deviation ``sigma`` on the [0, 1] intensity scale
  (default 0.02, about 5 of 255 grey levels, PSNR about 34 dB), clipped and rounded to 8 bits,
  saved as PNG. BPM adds Gaussian noise to the original; AugCLIP speaks of a "negligible
  transformation". The noise of an item is drawn from ``numpy.random.default_rng([seed, h(id)])``
  (``h`` = first 8 bytes of SHA-256 of the id), so every item's ep image is reproducible on its own,
  in any order.
* **em** (excessively modified) = an image that follows the target text and ignores the source.
  The papers generate it with a text-to-image model (Stable Diffusion) prompted with the target
  text; that needs a generator and its weights, out of scope offline, so em images are supplied:
  an ``em`` edit already in the item, or ``<em_dir>/<id>.<ext>`` (any image extension).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..choices import DEFAULT_TRIPLET_SEED as DEFAULT_SEED
from ..choices import DEFAULT_TRIPLET_SIGMA as DEFAULT_SIGMA
from ..errors import InputError
from ..io import open_image
from .loaders import IMAGE_EXTENSIONS
from .manifest import iter_manifest, relative_inside, validate_manifest, write_manifest


@dataclass
class TripletResult:
    manifest: Path
    n_items: int
    skipped: list[str] = field(default_factory=list)

    def format(self) -> str:
        lines = [f"wrote {self.manifest}: {self.n_items} triplet(s) (gt, ep, em)"]
        lines += [f"skipped: {s}" for s in self.skipped[:20]]
        if len(self.skipped) > 20:
            lines.append(f"... and {len(self.skipped) - 20} more")
        return "\n".join(lines)


def _item_seed(seed: int, item_id: str) -> list[int]:
    return [int(seed), int.from_bytes(hashlib.sha256(item_id.encode("utf-8")).digest()[:8], "little")]


def excessively_preserved(source: Image.Image, sigma: float = DEFAULT_SIGMA, seed: int = DEFAULT_SEED,
                          item_id: str = "") -> Image.Image:
    """The source plus Gaussian noise N(0, sigma^2) per pixel and channel on [0, 1], as 8-bit RGB."""
    if not (np.isfinite(sigma) and sigma >= 0):
        raise InputError(f"sigma must be a non-negative number, got {sigma}")
    rng = np.random.default_rng(_item_seed(seed, item_id))
    pixels = np.asarray(source.convert("RGB"), dtype=np.float64) / 255.0
    noisy = pixels + rng.normal(0.0, sigma, size=pixels.shape)
    return Image.fromarray(np.clip(np.rint(noisy * 255.0), 0, 255).astype(np.uint8), mode="RGB")


def safe_filename(item_id: str) -> str:
    """A file name for an id: unsafe characters replaced, plus a short hash so ids never collide."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", item_id).strip("._")[:80] or "item"
    return f"{cleaned}-{hashlib.sha256(item_id.encode('utf-8')).hexdigest()[:8]}"


def _find_em(em_dir: Path, item_id: str) -> Path | None:
    for name in (item_id, safe_filename(item_id)):
        for ext in IMAGE_EXTENSIONS:
            candidate = em_dir / f"{name}{ext}"
            if candidate.is_file():
                return candidate
    return None


def build_triplets(manifest: str | Path, out: str | Path | None = None, *, em_dir: str | Path | None = None,
                   sigma: float = DEFAULT_SIGMA, seed: int = DEFAULT_SEED, skip_missing: bool = False) -> TripletResult:
    """Write a triplet manifest (edits: gt, ep, em) next to ``out`` (default ``<manifest>-triplets.jsonl``).

    ep images go to ``<out folder>/<out stem>_ep/``; em images outside the output folder are copied
    to ``<out stem>_em/`` (so every path stays inside the manifest's folder). Items without a
    ``gt`` edit or without an em image are errors listed all at once, or skipped with ``skip_missing``.
    """
    manifest = Path(manifest).expanduser()
    validate_manifest(manifest)
    out = Path(out).expanduser() if out else manifest.with_name(manifest.stem + "-triplets.jsonl")
    out_dir = out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    em_folder = Path(em_dir).expanduser() if em_dir else None
    if em_folder is not None and not em_folder.is_dir():
        raise InputError(f"em folder {em_folder}: not found")
    ep_dir, em_copy_dir = out_dir / f"{out.stem}_ep", out_dir / f"{out.stem}_em"
    no_gt: list[str] = []
    no_em: list[str] = []
    plans: list[tuple[Any, Any, Path]] = []
    for item in iter_manifest(manifest, check_files=False):  # validate_manifest checked the files above
        gt = next((e for e in item.edits if e.role == "gt"), None)
        em = next((e.resolved for e in item.edits if e.role == "em"), None)
        if em is None and em_folder is not None:
            em = _find_em(em_folder, item.id)
        if gt is None:
            no_gt.append(str(item.id))
        elif em is None:
            no_em.append(str(item.id))
        else:
            plans.append((item, gt, em))
    problems = _triplet_problems(no_gt, no_em, em_folder)
    if problems and not skip_missing:
        raise InputError(f"cannot build triplets from {Path(manifest).name}:\n" + "\n".join(problems)
                         + "\n(--skip-missing builds the items that have both.)")
    if not plans:
        raise InputError(f"no item of {Path(manifest).name} can form a triplet:\n" + "\n".join(problems))
    ep_dir.mkdir(exist_ok=True)
    items = []
    for item, gt, em in plans:
        ep_path = ep_dir / f"{safe_filename(item.id)}.png"
        excessively_preserved(open_image(item.source_path).image, sigma, seed, item.id).save(ep_path)
        try:
            em_rel = relative_inside(em, out_dir, "em image")
        except InputError:  # outside the output folder: copy it in
            em_copy_dir.mkdir(exist_ok=True)
            target = em_copy_dir / f"{safe_filename(item.id)}{em.suffix.lower()}"
            shutil.copyfile(em, target)
            em_rel = relative_inside(target, out_dir, "em image")
        data = item.to_dict()
        data.pop("human", None)  # the triplet's human label is its roles
        data["source"] = relative_inside(item.source_path, out_dir, "source image")
        if item.attributes_file:
            data["attributes"] = relative_inside(manifest.parent / item.attributes_file, out_dir, "attributes file")
        data["edits"] = [
            {"path": relative_inside(gt.resolved, out_dir, "gt image"), "name": gt.name, "role": "gt"},
            {"path": relative_inside(ep_path, out_dir, "ep image"), "name": f"noise sigma={sigma:g}", "role": "ep"},
            {"path": em_rel, "name": "excessively modified", "role": "em"},
        ]
        meta = dict(item.meta) if isinstance(item.meta, dict) else ({} if item.meta is None else {"original": item.meta})
        meta["triplet"] = {"sigma": sigma, "seed": seed, "source_manifest": str(manifest)}
        data["meta"] = meta
        items.append(data)
    write_manifest(items, out)
    skipped = [f"{i}: no edit with role gt" for i in no_gt] + [f"{i}: no excessively modified (em) image" for i in no_em]
    return TripletResult(manifest=out, n_items=len(items), skipped=skipped)


def _triplet_problems(no_gt: list[str], no_em: list[str], em_folder: Path | None) -> list[str]:
    """At most two short lines, whatever the manifest's size: how many items lack what, a few ids, the fix."""
    lines = []
    if no_gt:
        lines.append(f"- {len(no_gt)} item(s) have no edit with role gt (the well-edited image): {_ids(no_gt)}; "
                     "give each item one edit with \"role\": \"gt\"")
    if no_em:
        fix = (f"put ITEM_ID.png (or another image extension) in {em_folder.name}/" if em_folder is not None
               else "add an edit with \"role\": \"em\" to each item, or pass --em-dir FOLDER with ITEM_ID.png files")
        lines.append(f"- {len(no_em)} item(s) have no excessively modified (em) image: {_ids(no_em)}; {fix}")
    return lines


def _ids(ids: list[str], shown: int = 3) -> str:
    text = ", ".join(repr(i if len(i) <= 40 else i[:37] + "...") for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
