"""The ``clip-vocab`` provider: attributes without network or extra model, by ranking a built-in
phrase vocabulary with the loaded CLIP model. A lower-fidelity stand-in for the paper's MLLM
extraction, labelled so everywhere (:data:`~augclip_demo.attributes.base.FIDELITY_CLIP_VOCAB`).

* Source attributes: the source text (when given), then the vocabulary phrases closest to the
  source image (cosine of CLIP embeddings), top ``source_k``, made diverse: a phrase whose text
  embedding has cosine above ``max_similarity`` with one already kept is skipped.
* Target attributes: the target text itself, then the phrases closest to the target text, top
  ``target_k``, diverse in the same way, excluding phrases that fit the source image better than
  the target text (see :func:`fits_target_better`) and phrases already chosen for the source.

Speed: the vocabulary's text embeddings are computed once per model and kept in memory and on
disk (``AUGCLIP_CACHE_DIR/clip_vocab/``); the source image and texts go through the encoder's
content-hash caches, which the pipeline's own embedding stage then reuses. Per item, extraction is
one image lookup/encoding, one text batch and two matrix-vector products over the vocabulary.
"""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import InputError
from ..inference.clip_encoder import TEXT_PASS_LENGTHS, ClipEncoder, get_encoder
from ..io import LoadedImage
from .base import FIDELITY_CLIP_VOCAB, Attributes, ProgressCallback
from .disk_cache import AttributeCache, write_atomic
from .extracting import ExtractingProvider
from .vocabulary import Vocabulary, default_vocabulary

log = logging.getLogger(__name__)

#: Forward passes of the text tower per progress step while encoding the vocabulary: on CPU (8 texts
#: a pass) a step is 32 phrases, a few seconds on 2 cores; on CUDA (256 a pass) 1,024 phrases.
VOCAB_PASSES_PER_STEP = 4
_VOCAB_CACHE_FORMAT = 1
_DEFAULT_SOURCE_K = 10
_DEFAULT_TARGET_K = 10
#: Two phrases with text-embedding cosine above this say nearly the same thing for CLIP
#: ("a red car" / "a car"); only the better-ranked one is kept.
_DEFAULT_MAX_SIMILARITY = 0.9

_MEMO: dict[str, np.ndarray] = {}
_MEMO_LOCK = threading.Lock()
#: The latest progress of the encoding in flight (fraction, message), relayed to callers that wait for it.
_BUILD_PROGRESS: list[tuple[float, str]] = []


def model_identity(encoder: ClipEncoder) -> dict[str, Any]:
    """What determines the text embeddings: spec, weights file (path, size, mtime), precision and kernels."""
    spec = encoder.spec
    identity: dict[str, Any] = {"spec": spec.raw, "arch": spec.arch, "pretrained": spec.pretrained,
                                "precision": encoder.precision_name,
                                # the kernels: oneDNN and BLAS embeddings differ at float rounding
                                "matmul": encoder.matmul,
                                # how texts are cut into passes: a store written with other passes is rebuilt
                                "text_passes": list(TEXT_PASS_LENGTHS)}
    if spec.checkpoint is not None:
        path = Path(spec.checkpoint)
        identity["checkpoint"] = str(path.resolve())
        try:
            stat = path.stat()
            identity["checkpoint_size"], identity["checkpoint_mtime_ns"] = stat.st_size, stat.st_mtime_ns
        except OSError:
            identity["checkpoint_size"] = None
    return identity


@dataclass
class VocabularyEmbeddings:
    """The vocabulary's unit text embeddings for one model, and where they came from."""

    vocabulary: Vocabulary
    matrix: np.ndarray  # (n_phrases, d), float32, unit rows, read-only
    origin: str  # "memory", "disk" or "encoded"
    seconds: float


def _memo_key(identity: dict[str, Any], vocabulary: Vocabulary) -> str:
    return json.dumps({"model": identity, "vocabulary": vocabulary.digest}, sort_keys=True)


def vocabulary_cache_slug(spec: str) -> str:
    """The readable part of an embedding cache file name for a model spec."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", spec)[:60]


def vocabulary_cache_file(cache_dir: Path, identity: dict[str, Any], vocabulary: Vocabulary) -> Path:
    import hashlib

    slug = vocabulary_cache_slug(identity["spec"])
    digest = hashlib.sha256(_memo_key(identity, vocabulary).encode()).hexdigest()[:16]
    return cache_dir / "clip_vocab" / f"{slug}-{vocabulary.version}-{digest}.npz"


def vocabulary_embeddings(encoder: ClipEncoder, vocabulary: Vocabulary | None = None, *,
                          cache_dir: Path | None = None, progress: ProgressCallback | None = None,
                          build: bool = True) -> VocabularyEmbeddings | None:
    """The vocabulary's text embeddings for ``encoder``: from memory, else disk, else encoded once.

    Encoding happens at most once per (model, vocabulary) per machine: the result is written to
    ``cache_dir/clip_vocab/`` (atomically) and memoised in the process. An unreadable cache file is
    ignored with a warning and rewritten. With ``build=False`` nothing is encoded: None when the
    store holds no embeddings for this model and vocabulary (the app's start-up preload).
    ``progress(fraction, message)`` is called before the first and after every
    :data:`VOCAB_PASSES_PER_STEP` forward passes, with the phrase counts and the seconds spent.
    """
    vocabulary = vocabulary or default_vocabulary()
    cache_dir = Path(cache_dir) if cache_dir is not None else encoder.cache_dir
    identity = model_identity(encoder)
    key = _memo_key(identity, vocabulary)
    start = time.perf_counter()
    # One encoding at a time: a concurrent first call waits instead of repeating it, and sees the
    # encoding's progress meanwhile (e.g. a request arriving while the app's start-up builds the store).
    while not _MEMO_LOCK.acquire(timeout=1.0):
        if progress is not None and _BUILD_PROGRESS:
            progress(*_BUILD_PROGRESS[-1])
    try:
        matrix = _MEMO.get(key)
        if matrix is not None:
            return VocabularyEmbeddings(vocabulary, matrix, "memory", time.perf_counter() - start)
        path = vocabulary_cache_file(cache_dir, identity, vocabulary)
        matrix = _load(path, key, len(vocabulary))
        origin = "disk"
        if matrix is None and not build:
            return None
        if matrix is None:
            matrix = _encode(encoder, vocabulary, progress)
            _save(path, key, matrix)
            origin = "encoded"
        matrix.setflags(write=False)
        _MEMO[key] = matrix
    finally:
        _BUILD_PROGRESS.clear()
        _MEMO_LOCK.release()
    seconds = time.perf_counter() - start
    log.info("clip-vocab: %d phrase embeddings for %s (%s, %.2fs)", len(vocabulary), identity["spec"], origin, seconds)
    return VocabularyEmbeddings(vocabulary, matrix, origin, seconds)


def build_vocabulary_store(settings: Settings, clip_model: str | None = None, *,
                           progress: ProgressCallback | None = None, build: bool = True) -> VocabularyEmbeddings | None:
    """The built-in vocabulary's embeddings for ``clip_model`` (default: the configured one), from the
    store in ``settings.cache_dir`` or encoded into it now (``augclip-demo download --vocab``; the
    app's start-up with ``build=False`` only loads a store built ahead)."""
    encoder = get_encoder(settings, **({"clip_model": clip_model} if clip_model else {}))
    return vocabulary_embeddings(encoder, default_vocabulary(), cache_dir=settings.cache_dir, progress=progress,
                                 build=build)


def build_store_in_background(settings: Settings) -> threading.Thread:
    """:func:`build_vocabulary_store` in a daemon thread (a Space's start-up); failures are logged.

    A request that needs the embeddings meanwhile waits for this encoding and shows its progress."""
    def work() -> None:
        try:
            build_vocabulary_store(settings)
        except Exception as exc:  # noqa: BLE001 - the request that needs the vocabulary reports it again
            log.warning("could not build the clip-vocab embedding store: %s", exc)

    thread = threading.Thread(target=work, name="augclip-vocab-store", daemon=True)
    thread.start()
    return thread


def clear_memory_cache() -> None:
    """Forget the in-process vocabulary embeddings (the disk cache stays)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def _encode(encoder: ClipEncoder, vocabulary: Vocabulary, progress: ProgressCallback | None) -> np.ndarray:
    phrases = list(vocabulary.phrases)
    total = len(phrases)
    step = max(1, int(encoder.text_batch_size)) * VOCAB_PASSES_PER_STEP
    def report(fraction: float, message: str) -> None:
        _BUILD_PROGRESS[:] = [(fraction, message)]
        if progress is not None:
            progress(fraction, message)

    start = time.perf_counter()
    report(0.0, f"clip-vocab: encoding the vocabulary once for this model: 0/{total} phrases")
    chunks = []
    for first in range(0, total, step):
        chunks.append(encoder.encode_texts(phrases[first:first + step]))
        report(min(first + step, total) / total, _encoding_message(min(first + step, total), total,
                                                                  time.perf_counter() - start))
    return np.ascontiguousarray(np.concatenate(chunks, axis=0), dtype=np.float32)


def _encoding_message(done: int, total: int, seconds: float) -> str:
    """"clip-vocab: ... 96/3279 phrases, 9 s so far, about 5 min left" (the estimate from the rate so far)."""
    left = seconds / done * (total - done) if done else 0.0
    eta = "" if done >= total or not done else f", about {_duration(left)} left"
    return f"clip-vocab: encoding the vocabulary once for this model: {done}/{total} phrases, {_duration(seconds)} so far{eta}"


def _duration(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def _load(path: Path, key: str, n_phrases: int) -> np.ndarray | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            matrix = np.asarray(data["embeddings"], dtype=np.float32)
        if meta.get("format") != _VOCAB_CACHE_FORMAT or meta.get("key") != key:
            raise ValueError("it was written for another model or vocabulary")
        if matrix.ndim != 2 or matrix.shape[0] != n_phrases or not np.all(np.isfinite(matrix)):
            raise ValueError(f"unexpected embeddings of shape {matrix.shape}")
        norms = np.linalg.norm(matrix, axis=1)
        if not np.allclose(norms, 1.0, atol=1e-3):
            raise ValueError("rows are not unit vectors")
    except Exception as exc:  # any unreadable file (zip, json, shape) means: encode again
        log.warning("clip-vocab embedding cache %s is unreadable (%s); encoding the vocabulary again",
                    path, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
        return None
    return np.ascontiguousarray(matrix)


def _save(path: Path, key: str, matrix: np.ndarray) -> None:
    try:
        buffer = io.BytesIO()
        np.savez(buffer, embeddings=matrix, meta=np.array(json.dumps({"format": _VOCAB_CACHE_FORMAT, "key": key})))
        write_atomic(path, buffer.getvalue())
    except OSError as exc:
        log.warning("could not write the clip-vocab embedding cache %s (%s)", path, exc)


# ---------------------------------------------------------------------- selection
def standardize(scores: np.ndarray) -> np.ndarray:
    """z-scores over the vocabulary."""
    std = float(scores.std())
    return (scores - scores.mean()) / (std if std > 1e-12 else 1.0)


def fits_target_better(image_scores: np.ndarray, text_scores: np.ndarray) -> np.ndarray:
    """Which phrases fit the target text better than the source image.

    Image-text and text-text cosines live on different scales in CLIP (the modality gap: a
    phrase's cosine to another text is typically far higher than to any image), so raw cosines
    cannot be compared. Each score is standardised over the whole vocabulary first; a phrase fits
    the target better when its z-score for the target text exceeds its z-score for the source image.
    """
    return standardize(text_scores) > standardize(image_scores)


def select_diverse(order: np.ndarray, embeddings: np.ndarray, k: int, max_similarity: float,
                   already: np.ndarray | None = None) -> list[int]:
    """Walk ``order`` (best first) and keep up to ``k`` indices whose embedding has cosine at most
    ``max_similarity`` with every kept one and with every row of ``already``."""
    dim = embeddings.shape[1]
    kept_vectors = np.zeros((k + (0 if already is None else len(already)), dim), dtype=np.float32)
    count = 0
    if already is not None and len(already):
        kept_vectors[: len(already)] = already
        count = len(already)
    kept: list[int] = []
    for index in order:
        vector = embeddings[index]
        if count and float(np.max(kept_vectors[:count] @ vector)) > max_similarity:
            continue
        kept.append(int(index))
        kept_vectors[count] = vector
        count += 1
        if len(kept) == k:
            break
    return kept


class ClipVocabProvider(ExtractingProvider):
    """Offline attributes by ranking a phrase vocabulary with CLIP (lower fidelity than an MLLM).

    Args:
        encoder: the :class:`ClipEncoder` to use (default: the shared one for ``settings``); pass
            the evaluator's encoder so image and text embeddings are computed once.
        settings: configuration (model, cache directory); default: the declared defaults (``Settings()``).
        source_k, target_k: vocabulary phrases per set (default 10 each; the paper's Table 8
            found 10 short attributes competitive).
        max_similarity: diversity threshold on text-embedding cosine (default 0.9; 1.0 disables).
        include_source_text: put the source text (when given) first in the source attributes.
        vocabulary: a custom :class:`Vocabulary` (default: the built-in one).
        use_cache, cache, progress: see :class:`ExtractingProvider`.
    """

    name = "clip-vocab"
    fidelity = FIDELITY_CLIP_VOCAB

    def __init__(self, encoder: ClipEncoder | None = None, *, settings: Settings | None = None,
                 source_k: int = _DEFAULT_SOURCE_K, target_k: int = _DEFAULT_TARGET_K,
                 max_similarity: float = _DEFAULT_MAX_SIMILARITY, include_source_text: bool = True,
                 vocabulary: Vocabulary | None = None, use_cache: bool = True, cache: AttributeCache | None = None,
                 progress: ProgressCallback | None = None):
        super().__init__(settings=settings, use_cache=use_cache, cache=cache, progress=progress)
        for label, value in (("source_k", source_k), ("target_k", target_k)):
            if not isinstance(value, int) or value < 1:
                raise InputError(f"{label} must be a positive integer, got {value!r}")
        if not -1.0 <= float(max_similarity) <= 1.0:
            raise InputError(f"max_similarity must be a cosine in [-1, 1], got {max_similarity!r}")
        self.encoder = encoder or get_encoder(self.settings)
        self.source_k = source_k
        self.target_k = target_k
        self.max_similarity = float(max_similarity)
        self.include_source_text = include_source_text
        self.vocabulary = vocabulary or default_vocabulary()
        if not len(self.vocabulary):
            raise InputError("the clip-vocab vocabulary is empty")

    @property
    def prompt_version(self) -> str:
        return f"clip-vocab-{self.vocabulary.version}-{self.vocabulary.digest[:12]}"

    def cache_identity(self) -> dict[str, Any]:
        return {"model": model_identity(self.encoder), "prompt_version": self.prompt_version, "seed": None,
                "samples": 1, "source_k": self.source_k, "target_k": self.target_k,
                "max_similarity": self.max_similarity, "include_source_text": self.include_source_text}

    def prepare(self, progress: ProgressCallback | None = None) -> VocabularyEmbeddings:
        """Load the model and the vocabulary embeddings now (the app calls this before the first item)."""
        vocab = vocabulary_embeddings(self.encoder, self.vocabulary, cache_dir=self.settings.cache_dir,
                                      progress=progress or self.progress)
        assert vocab is not None  # build=True always gives embeddings
        return vocab

    def _extract(self, source: LoadedImage, target_text: str, source_text: str | None,
                 progress: ProgressCallback) -> Attributes:
        vocab = self.prepare(progress)
        phrases = vocab.vocabulary.phrases
        matrix = vocab.matrix
        progress(0.9, "clip-vocab: ranking the vocabulary")
        image = self.encoder.encode_images([source])[0]
        texts = [target_text] + ([source_text] if source_text else [])
        text_emb = self.encoder.encode_texts(texts)
        target_emb = text_emb[0]
        image_scores = matrix @ image
        text_scores = matrix @ target_emb

        use_source_text = bool(source_text) and self.include_source_text
        src_order = np.argsort(-image_scores, kind="stable")
        src_idx = select_diverse(src_order, matrix, self.source_k, self.max_similarity,
                                 already=text_emb[1:2] if use_source_text else None)

        eligible = fits_target_better(image_scores, text_scores)
        eligible[src_idx] = False
        by_text = np.argsort(-text_scores, kind="stable")
        tgt_order = by_text[eligible[by_text]]
        tgt_idx = select_diverse(tgt_order, matrix, self.target_k, self.max_similarity, already=target_emb[None, :])

        source_attrs = ([source_text] if use_source_text else []) + [phrases[i] for i in src_idx]
        target_attrs = [target_text] + [phrases[i] for i in tgt_idx]
        extra = {
            "vocabulary_size": len(phrases),
            "vocabulary_origin": vocab.origin,
            "source_scores": [round(float(image_scores[i]), 4) for i in src_idx],
            "target_scores": [round(float(text_scores[i]), 4) for i in tgt_idx],
            "source_categories": [vocab.vocabulary.categories[i] for i in src_idx],
            "target_categories": [vocab.vocabulary.categories[i] for i in tgt_idx],
            "max_similarity": self.max_similarity,
            "untrained": self.encoder.untrained,
        }
        provenance = self.provenance(model=self.encoder.spec.label, prompt_version=self.prompt_version, seed=None,
                                     samples=1, extra=extra)
        return Attributes(source_attrs, target_attrs, provenance)
