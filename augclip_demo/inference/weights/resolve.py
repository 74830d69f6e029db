"""From a model spec to local files: one resolver per kind of source.

* CLIP (open_clip): ``ARCH/TAG`` -> the tag's Hugging Face repository (or URL) in open_clip's own
  pretrained table; ``hf-hub:ORG/REPO`` -> ``open_clip_config.json`` + weights; ``local-dir:PATH``
  and checkpoint files -> checked on disk; ``random:`` -> nothing to fetch.
* transformers folders (GroundingDINO, OWL-ViT, SAM 2, DINO): a hub id -> the files
  ``from_pretrained`` needs, fetched one by one into a snapshot folder; a local folder -> checked.
* single files from a URL (SAM's official checkpoints, LPIPS backbones, FID's Inception): the
  cache, torch's hub cache, a download (or a mirror), or a local file.

Nothing here hands back "no weights" for a non-``random:`` spec: a model whose files cannot be had
stops the run. The how-to-fix text every error ends with comes from the caller (the family table).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ...errors import WeightsUnavailableError
from .fetch import HubFetch, check_weight_file, fetch_url, hub_endpoint, sha256_of
from .table import DINO_FILES, OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHT_FILES, SAM_CHECKPOINT_URLS

# ---------------------------------------------------------------------- CLIP


@dataclass(frozen=True)
class ClipFiles:
    """What open_clip needs for one CLIP spec, all local."""

    model_name: str  # first argument of open_clip.create_model
    checkpoint: Path | None  # weights file for built-in architectures (None: random, or inside ``folder``)
    folder: Path | None = None  # for hf-hub: / local-dir: (open_clip_config.json + weights)
    tokenizer_name: str | None = None  # argument of open_clip.get_tokenizer
    tokenizer_cache: Path | None = None
    preprocess: dict[str, Any] = field(default_factory=dict)  # the tag's mean/std/interpolation/resize_mode
    quick_gelu: bool = False
    source: str = ""  # where the weights came from, for messages


def clip_file_list(files: ClipFiles) -> list[Path]:
    """The local files a resolved CLIP model is read from."""
    if files.checkpoint is not None:
        return [files.checkpoint]
    if files.folder is not None:
        found = [files.folder / OPEN_CLIP_CONFIG]
        found += [files.folder / name for name in OPEN_CLIP_WEIGHT_FILES if (files.folder / name).is_file()][:1]
        return found
    return []


def clip_tag_source(arch: str, tag: str) -> tuple[str | None, str | None, str | None]:
    """``(repo_id, filename or None, url)`` open_clip's pretrained table gives for ``arch/tag``."""
    import open_clip

    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    hub = (cfg.get("hf_hub") or "").rstrip("/")
    repo_id = filename = None
    if hub:
        parts = hub.split("/")
        repo_id, filename = "/".join(parts[:2]), ("/".join(parts[2:]) or None)
    return repo_id, filename, cfg.get("url") or None


def resolve_clip(spec: Any, cache_dir: Path, how: str, *, progress: bool = False) -> ClipFiles:
    """Local files for a parsed CLIP :class:`~augclip_demo.inference.specs.ModelSpec` (downloading what is missing);
    ``how`` ends every error (the family's how-to-fix text)."""
    import open_clip

    model = f"CLIP {spec.raw}"
    hub_cache = Path(cache_dir) / "open_clip"
    tag_cfg = (open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}) if spec.arch and spec.pretrained else {}
    preprocess = {k: tag_cfg[k] for k in ("mean", "std", "interpolation", "resize_mode") if k in tag_cfg}
    quick_gelu = bool(tag_cfg.get("quick_gelu"))
    if spec.kind == "random":
        return ClipFiles(spec.arch, None, tokenizer_name=spec.arch, preprocess={}, source="random")
    if spec.kind == "checkpoint":
        path = Path(spec.checkpoint)
        if not path.is_file():
            raise WeightsUnavailableError(model, f"the local file {path}", "The file does not exist; check the path "
                                          "given with --clip-checkpoint / AUGCLIP_CLIP_CHECKPOINT.")
        return ClipFiles(spec.arch, path, tokenizer_name=spec.arch, tokenizer_cache=hub_cache, preprocess=preprocess,
                         quick_gelu=quick_gelu, source=str(path))
    if spec.kind == "local-dir":
        folder = Path(spec.source_id).expanduser()
        if not (folder / OPEN_CLIP_CONFIG).is_file():
            raise WeightsUnavailableError(model, f"the local folder {folder} (no {OPEN_CLIP_CONFIG} there)", how)
        weights = [folder / name for name in OPEN_CLIP_WEIGHT_FILES if (folder / name).is_file()]
        if not weights:
            raise WeightsUnavailableError(model, f"the local folder {folder} (no weight file there)", how)
        for path in weights[:1]:
            if (problem := check_weight_file(path)) is not None:
                raise WeightsUnavailableError(model, f"the file {path}", f"It {problem}. {how}")
        return ClipFiles(f"local-dir:{folder}", None, folder=folder, tokenizer_name=f"local-dir:{folder}",
                         source=str(folder))
    if spec.kind == "hf-hub":
        fetch = HubFetch(model, spec.source_id, hub_cache, how, progress=progress)
        config = fetch.fetch([OPEN_CLIP_CONFIG])
        assert config is not None
        weights = fetch.fetch(OPEN_CLIP_WEIGHT_FILES)
        assert weights is not None
        if weights.parent != config.parent:
            raise fetch.fail(weights.name, f"the config and the weights come from different snapshots ({config.parent} "
                             f"and {weights.parent})", "Delete the repository's folder from the cache and download again.")
        text_cfg = json.loads(config.read_text(encoding="utf-8")).get("model_cfg", {}).get("text_cfg", {})
        if text_cfg.get("hf_tokenizer_name"):  # the tokenizer lives in a (possibly other) hub repository
            tokenizer, tok_cache = f"hf-hub:{spec.source_id}", _cache_root_of(config)
        else:
            tokenizer, tok_cache = f"local-dir:{config.parent}", None
        return ClipFiles(f"local-dir:{config.parent}", None, folder=config.parent, tokenizer_name=tokenizer,
                         tokenizer_cache=tok_cache, source=f"{hub_endpoint()}/{spec.source_id}")
    # a built-in architecture with a pretrained tag
    repo_id, filename, url = clip_tag_source(spec.arch, spec.pretrained)
    if repo_id:
        fetch = HubFetch(model, repo_id, hub_cache, how, progress=progress)
        names = [filename] if filename else list(OPEN_CLIP_WEIGHT_FILES)
        if filename and filename.endswith((".bin", ".pth")):  # open_clip prefers a safetensors twin
            names.insert(0, filename[:-4] + ".safetensors")
        path = fetch.fetch(names)
        assert path is not None
        source = f"{hub_endpoint()}/{repo_id}"
    elif url:
        path = fetch_url(model, url, hub_cache / Path(urlparse(url).path).name, how, progress=progress)
        source = url
    else:
        raise WeightsUnavailableError(model, "open_clip's pretrained table (no source for this tag)", how)
    return ClipFiles(spec.arch, path, tokenizer_name=spec.arch, tokenizer_cache=hub_cache, preprocess=preprocess,
                     quick_gelu=quick_gelu, source=source)


def _cache_root_of(path: Path) -> Path:
    """The hub cache folder holding ``.../models--org--name/snapshots/<sha>/file``."""
    for parent in path.parents:
        if parent.name.startswith("models--"):
            return parent.parent
    return path.parent


def _fetch_snapshot_folder(model: str, spec: str, cache_dir: Path | str, how: str,
                           files: Sequence[tuple[tuple[str, ...], bool]], progress: bool = False) -> Path:
    """Fetch ``files`` (``(names, required)`` pairs) of a hub repository; the one snapshot folder holding them.

    Files from two snapshots in one folder would mix revisions, so that is refused with the fix."""
    fetch = HubFetch(model, spec, Path(cache_dir) / "huggingface", how, progress=progress)
    folders = set()
    for names, required in files:
        path = fetch.fetch(names, required=required)
        if path is not None:
            folders.add(path.parent)
    if len(folders) != 1:
        raise WeightsUnavailableError(model, f"the cache ({', '.join(sorted(map(str, folders)))})",
                                      "The files come from different snapshots; delete the repository's cache folder "
                                      "and download again. " + how)
    return folders.pop()


# ---------------------------------------------------------------------- SAM


def sam_url(arch: str, override: str | None = None) -> str | None:
    """The checkpoint URL for ``arch``: ``override`` (AUGCLIP_SAM_URL) or the official one."""
    return override or SAM_CHECKPOINT_URLS.get(arch)


def sam_cache_path(cache_dir: Path, url: str) -> Path:
    return Path(cache_dir) / "sam" / Path(urlparse(url).path).name


def resolve_sam(arch: str, checkpoint: Path | None, url: str | None, cache_dir: Path, how: str, *,
                sha256: str | None = None, progress: bool = False) -> Path:
    """The local SAM checkpoint: the given file, else the URL's file in the cache (downloaded when missing)."""
    model = f"SAM {arch}"
    if checkpoint is not None:
        if not checkpoint.is_file():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", "The file does not exist; check "
                                          "--sam-checkpoint / AUGCLIP_SAM_CHECKPOINT. " + how)
        if sha256 and (digest := sha256_of(checkpoint)) != sha256.lower():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", f"Its SHA-256 is {digest}, expected "
                                          f"{sha256.lower()} (AUGCLIP_SAM_SHA256): corrupt or a different file. " + how)
        return checkpoint
    if url is None:
        raise WeightsUnavailableError(model, "no checkpoint file and no URL", how)
    return fetch_url(model, url, sam_cache_path(cache_dir, url), how, sha256=sha256, progress=progress)


def resolve_transformers_folder(model: str, spec: str, local_folder: Path | None, cache_dir: Path, how: str, *,
                                files: tuple[tuple[tuple[str, ...], bool], ...] = DINO_FILES,
                                progress: bool = False) -> Path:
    """A folder ``from_pretrained`` can load offline: ``local_folder`` checked, or the hub snapshot of ``spec``."""
    weight_names = next(names for names, _ in files if names[0].endswith((".safetensors", ".bin")))
    if local_folder is not None:
        if not (local_folder / "config.json").is_file():
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no config.json there)",
                                          "Give a folder saved with save_pretrained (config.json and "
                                          f"{' or '.join(weight_names)}), e.g. a download of the hub repository. " + how)
        found = [local_folder / name for name in weight_names if (local_folder / name).is_file()]
        if not found:
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no {' or '.join(weight_names)} "
                                          "there)", how)
        if (problem := check_weight_file(found[0])) is not None:
            raise WeightsUnavailableError(model, f"the file {found[0]}", f"It {problem}. {how}")
        return local_folder
    return _fetch_snapshot_folder(model, spec, cache_dir, how, files, progress)


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url``, or the same file name under ``mirror`` (``AUGCLIP_FILE_MIRROR``) when one is set."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + Path(urlparse(url).path).name


def _torchvision_hash_prefix(name: str) -> str | None:
    """The SHA-256 prefix torchvision writes into its weight file names (``alexnet-owt-7be5be79.pth``)."""
    import re

    match = re.search(r"-([a-f0-9]{8,})\.", name)
    return match.group(1) if match else None


def resolve_url_weights(model: str, url: str, checkpoint: Path | None, cache_dir: Path, subdir: str, how: str, *,
                        check_name_hash: bool = False, progress: bool = False) -> Path:
    """A local weight file: ``checkpoint`` checked, else ``url``'s file in ``cache_dir/subdir`` (downloaded when
    missing), else the same file already in torch's hub cache. ``check_name_hash`` compares the file's
    SHA-256 with the prefix in its name (torchvision's convention), for files from the official URL."""
    if checkpoint is not None:
        if not checkpoint.is_file():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", "The file does not exist. " + how)
        if (problem := check_weight_file(checkpoint)) is not None:
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", f"It {problem}. {how}")
        return checkpoint
    name = Path(urlparse(url).path).name
    target = Path(cache_dir) / subdir / name
    if not target.is_file():
        import torch.hub

        torch_cached = Path(torch.hub.get_dir()) / "checkpoints" / name
        if torch_cached.is_file() and check_weight_file(torch_cached) is None:
            target = torch_cached
    prefix = _torchvision_hash_prefix(name) if check_name_hash else None
    path = fetch_url(model, url, target, how, progress=progress)
    if prefix and not sha256_of(path).startswith(prefix):
        raise WeightsUnavailableError(model, f"the file {path}", f"Its SHA-256 does not start with {prefix}, as its "
                                      "name says it should: corrupt or a different file. Delete it and run again. "
                                      + how)
    return path
