"""CLIP inference: one encoder per backbone, batched, cached by content, safe to share across threads."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from ..config import DEFAULT_CLIP_MODEL, Settings, default_cache_dir
from ..errors import InputError, WeightsUnavailableError
from ..io import ImageInput, LoadedImage, open_image, prepared_pixels
from ..lru import LRUCache
from .cpu_matmul import cpu_matmul, resolve_cpu_matmul
from .device import autocast, device_description, is_out_of_memory
from .lazy import LazyModel
from .specs import ModelSpec, parse_model_spec, register_model_configs, seeded_random
from .weights.guards import compare_state_dicts, create_open_clip, describe_load_error
from .weights.resolve import ClipFiles, resolve_clip

log = logging.getLogger(__name__)

#: Token counts a text pass may read short of the full context (see ClipEncoder._encode_text_batch): a
#: text goes to the shortest that holds it, and a pass holds texts of one length only.
TEXT_PASS_LENGTHS = (8, 16, 32)


@dataclass(frozen=True)
class ModelInfo:
    """What produced the embeddings; copied into every report."""

    spec: str
    label: str
    arch: str | None
    pretrained: str | None
    checkpoint: str | None
    device: str
    device_name: str
    precision: str
    matmul: str
    embed_dim: int
    image_size: int
    untrained: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ClipEncoder(LazyModel):
    """Loads an open_clip backbone lazily and encodes images and texts into L2-normalised float32.

    Encodings are memoised in LRU caches keyed by image content hash (SHA-256 of the decoded
    pixels) and by the exact text, so an image or text is encoded once however often it is scored.
    All public methods are thread-safe: model loading is guarded, forward passes are serialised
    (one model, one device), and the caches have their own locks. Weights come from
    :func:`augclip_demo.inference.weights.resolve.resolve_clip`.

    Everything comes from the arguments (the environment is read by the callers, into
    :class:`~augclip_demo.config.Settings`): the spec (default ``ViT-B-16/openai``), the device,
    the CPU matmul kernels (``"auto"``) and the cache folder (default: the platform's user cache).
    """

    family = "CLIP"
    family_key = "clip"

    def __init__(
        self,
        spec: str | ModelSpec | None = None,
        *,
        checkpoint: str | Path | None = None,
        device: str | torch.device | None = "auto",
        precision: str = "auto",
        cpu_matmul: str = "auto",
        cache_dir: str | Path | None = None,
        image_cache_size: int = 2048,
        text_cache_size: int = 16384,
        image_batch_size: int | None = None,
        text_batch_size: int | None = None,
    ):
        self.spec: ModelSpec = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec or DEFAULT_CLIP_MODEL,
                                                                                          checkpoint)
        super().__init__(device=device, precision=precision)
        #: "onednn" or "blas": which kernels run the float32 matrix products (inference/cpu_matmul.py)
        self.matmul = resolve_cpu_matmul(cpu_matmul or "auto", self.device, self.amp_dtype)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        # Fixed forward-pass sizes (see _run_in_batches): every pass has exactly this many rows. On CPU an
        # image pass has one row: a ViT-B/16 image is already a 197 x 768 matrix product that keeps the
        # cores busy, and padding a 3-image app request to 8 rows spent 5/8 of its image encoding on
        # copies (docs/performance.md). Texts are 77 x 512 per row, so 8 rows a pass pay off on CPU.
        cuda = self.device.type == "cuda"
        self.image_batch_size = max(1, int(image_batch_size or (64 if cuda else 1)))
        self.text_batch_size = max(1, int(text_batch_size or (256 if cuda else 8)))
        self.image_cache: LRUCache[np.ndarray] = LRUCache(image_cache_size)
        self.text_cache: LRUCache[np.ndarray] = LRUCache(text_cache_size)
        self._preprocess: Callable[[Any], torch.Tensor] | None = None
        self._tokenizer: Callable[[list[str]], torch.Tensor] | None = None
        self.weights_source: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> ClipEncoder:
        return cls(
            settings.clip_model,
            checkpoint=settings.clip_checkpoint,
            device=settings.device,
            precision=settings.precision,
            cpu_matmul=settings.cpu_matmul,
            cache_dir=settings.cache_dir,
            **kwargs,
        )

    # ------------------------------------------------------------------ loading
    @property
    def model(self) -> torch.nn.Module:
        self.load()
        assert self._model is not None
        return self._model

    @property
    def preprocess(self) -> Callable[[Any], torch.Tensor]:
        self.load()
        assert self._preprocess is not None
        return self._preprocess

    @property
    def tokenizer(self) -> Callable[[list[str]], torch.Tensor]:
        self.load()
        assert self._tokenizer is not None
        return self._tokenizer

    def load(self) -> ClipEncoder:
        """Build the model and load its weights (once; later calls return immediately)."""
        super().load()
        return self

    def _release(self) -> None:
        self._preprocess = self._tokenizer = None
        for cached in ("_split_cache", "_text_lengths_cache"):
            if hasattr(self, cached):
                delattr(self, cached)

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        from .weights.resolve import clip_file_list

        return clip_file_list(resolve_clip(self.spec, self.cache_dir, self.how_to_fix(), progress=progress)), ""

    def _build(self) -> torch.nn.Module:
        import open_clip

        register_model_configs()
        spec = self.spec
        how = self.how_to_fix()
        files = resolve_clip(spec, self.cache_dir, how)
        local = str(files.checkpoint or files.folder)
        where = files.source + (f" ({local})" if local != files.source else "")
        kwargs: dict[str, Any] = {"device": "cpu", "force_quick_gelu": files.quick_gelu}
        for key, arg in (("mean", "image_mean"), ("std", "image_std"), ("interpolation", "image_interpolation"),
                         ("resize_mode", "image_resize_mode")):
            if key in files.preprocess:  # the tag's preprocessing, also when its weights come from a file
                kwargs[arg] = files.preprocess[key]
        model_label = f"CLIP {spec.raw}"
        try:
            if spec.kind == "random":
                with seeded_random():
                    model, _, preprocess = open_clip.create_model_and_transforms(files.model_name, **kwargs)
            else:
                pretrained = str(files.checkpoint) if files.checkpoint is not None else None
                model, _, preprocess = create_open_clip(open_clip.create_model_and_transforms, files.model_name,
                                                        model=model_label, where=where, how_to_fix=how,
                                                        pretrained=pretrained, **kwargs)
            tok_kwargs = {"cache_dir": str(files.tokenizer_cache)} if files.tokenizer_cache else {}
            tokenizer = open_clip.get_tokenizer(files.tokenizer_name or files.model_name, **tok_kwargs)
        except WeightsUnavailableError:
            raise
        except Exception as exc:  # file-format and key-mismatch errors end here
            reason = describe_load_error(exc, files.checkpoint)
            if files.checkpoint is not None and not reason.startswith("the file "):
                reason = self._architecture_mismatch(files, kwargs) or reason
            raise WeightsUnavailableError(model_label, f"{where}: {reason}", how) from exc
        self._preprocess, self._tokenizer = preprocess, tokenizer
        self.weights_source = files.source
        return model

    def _architecture_mismatch(self, files: ClipFiles, kwargs: dict[str, Any]) -> str | None:
        """"the file is for a different architecture: ..." when the file's tensors do not fit the model."""
        import open_clip
        from open_clip.factory import load_state_dict

        try:
            file_state = load_state_dict(str(files.checkpoint))
            model = open_clip.create_model(files.model_name, pretrained_text=False, device="cpu",
                                           force_quick_gelu=files.quick_gelu)
            expected = model.state_dict()
        except Exception:  # noqa: BLE001 - the caller reports the original error instead
            return None
        summary = compare_state_dicts(expected, file_state)
        if summary.startswith("the tensors match"):
            return None
        return f"the file is for a different architecture than {files.model_name}: {summary}"

    def warmup(self) -> ClipEncoder:
        """Load the model and run one tiny forward pass of each tower (compiles kernels, allocates)."""

        with self.in_use():
            size = self.image_size
            self._encode_image_batch([Image.new("RGB", (size, size), (127, 127, 127))])
            self._encode_text_batch(["warm up"])
        return self

    @property
    def precision_name(self) -> str:
        """``fp32``, ``float16`` or ``bfloat16``: the autocast dtype of the forward passes."""
        return str(self.amp_dtype).replace("torch.", "") if self.amp_dtype else "fp32"

    @contextlib.contextmanager
    def compute(self) -> Iterator[None]:
        """The numerics of every forward pass: autocast for the precision, :attr:`matmul`'s kernels."""
        with autocast(self.device, self.amp_dtype), cpu_matmul(self.matmul):
            yield

    # ------------------------------------------------------------------ info
    @property
    def embed_dim(self) -> int:
        model = self.model
        proj = getattr(model.visual, "output_dim", None)
        if proj is None:
            proj = getattr(model, "embed_dim", None)
        if proj is None:
            proj = int(self._encode_text_batch(["x"]).shape[1])
        return int(proj)

    @property
    def image_size(self) -> int:
        size = getattr(self.model.visual, "image_size", 224)
        return int(size[0] if isinstance(size, (tuple, list)) else size)

    def info(self) -> ModelInfo:
        return ModelInfo(
            spec=self.spec.raw,
            label=self.spec.label,
            arch=self.spec.arch,
            pretrained=self.spec.pretrained,
            checkpoint=str(self.spec.checkpoint) if self.spec.checkpoint else None,
            device=str(self.device),
            device_name=device_description(self.device),
            precision=self.precision_name,
            matmul=self.matmul,
            embed_dim=self.embed_dim,
            image_size=self.image_size,
            untrained=self.untrained,
        )

    # ------------------------------------------------------------------ encoding
    def encode_images(
        self, images: Sequence[ImageInput | LoadedImage], batch_size: int | None = None
    ) -> np.ndarray:
        """Embeddings of ``images`` as an ``(n, d)`` float32 array of unit rows, in input order.

        Images already seen (same decoded pixels) come from the cache; the rest are encoded in
        forward passes of exactly :attr:`image_batch_size` rows (see :meth:`_run_in_batches`), so an
        embedding is bit-identical whichever call, batch or cache state produced it. ``batch_size`` is
        accepted for compatibility and does not change the forward passes.
        """
        loaded = [open_image(item) for item in images]
        with self.in_use():
            return self._encode_cached(
                keys=[item.sha256 for item in loaded],
                items=[item.image for item in loaded],
                cache=self.image_cache,
                batch_fn=self._encode_image_batch,
                batch_size=self.image_batch_size,
            )

    def encode_image(self, image: ImageInput | LoadedImage) -> np.ndarray:
        return self.encode_images([image])[0]

    def preprocess_image(self, image: ImageInput | LoadedImage) -> np.ndarray | torch.Tensor:
        """One image prepared for :meth:`encode_preprocessed`, without touching the model.

        open_clip's eval transform is resize -> centre crop -> RGB -> to-tensor -> normalise. The
        PIL steps run here and give an ``(H, W, 3)`` uint8 array (a quarter of the float tensor's
        memory, and no torch ops, which contend for the intra-op thread pool when run from several
        threads); :meth:`encode_preprocessed` converts and normalises whole batches at once with the
        same arithmetic, so embeddings are identical to ``preprocess`` + encode. A transform of any
        other shape is applied whole and gives the float tensor. Thread-safe once loaded.
        """
        pil = open_image(image).image
        split = self._split_preprocess()
        return self.preprocess(pil) if split is None else prepared_pixels(pil, split[0], self.preprocess)

    def _split_preprocess(self) -> tuple[list[Callable[[Any], Any]], torch.Tensor, torch.Tensor] | None:
        """(PIL steps, mean, std) when :attr:`preprocess` ends in to-tensor + normalise, else None."""
        if not hasattr(self, "_split_cache"):
            from torchvision.transforms import Compose, Normalize, ToTensor

            steps = getattr(self.preprocess, "transforms", None)
            split = None
            if (isinstance(self.preprocess, Compose) and steps and len(steps) >= 2
                    and isinstance(steps[-2], ToTensor) and isinstance(steps[-1], Normalize)):
                dtype = torch.get_default_dtype()
                mean = torch.as_tensor(steps[-1].mean, dtype=dtype).view(1, -1, 1, 1)
                std = torch.as_tensor(steps[-1].std, dtype=dtype).view(1, -1, 1, 1)
                split = (list(steps[:-2]), mean, std)
            self._split_cache = split
        return self._split_cache

    def encode_preprocessed(
        self, pixels: Sequence[np.ndarray | torch.Tensor], keys: Sequence[str] | None = None,
        batch_size: int | None = None,
    ) -> np.ndarray:
        """Embeddings of images prepared by :meth:`preprocess_image` (e.g. in decode workers).

        ``keys`` are the images' content hashes (:attr:`LoadedImage.sha256`); with them the results
        share the image cache with :meth:`encode_images`, so an image is encoded once either way.
        Forward passes have :attr:`image_batch_size` rows whatever ``batch_size`` says (as in
        :meth:`encode_images`), so both paths give bit-identical embeddings.
        """
        tensors = list(pixels)
        if keys is None:
            with self.in_use():
                return self._run_in_batches(tensors, self._encode_pixel_batch, self.image_batch_size) \
                    if tensors else np.zeros((0, self.embed_dim), dtype=np.float32)
        if len(keys) != len(tensors):
            raise ValueError(f"{len(keys)} keys for {len(tensors)} images")
        with self.in_use():
            return self._encode_cached(
                keys=list(keys),
                items=tensors,
                cache=self.image_cache,
                batch_fn=self._encode_pixel_batch,
                batch_size=self.image_batch_size,
            )

    def encode_texts(self, texts: Sequence[str], batch_size: int | None = None,
                     token_rows: Mapping[str, Any] | None = None) -> np.ndarray:
        """Embeddings of ``texts`` as an ``(n, d)`` float32 array of unit rows, in input order.

        Forward passes have exactly :attr:`text_batch_size` rows whatever ``batch_size`` says, so a
        text's embedding does not depend on which texts it was encoded with (see
        :meth:`_run_in_batches`). ``token_rows`` maps stripped texts to rows this encoder's tokenizer
        gave elsewhere (a batch run's decode processes, :meth:`preparation_recipe`); the other texts
        are tokenized here.
        """
        cleaned = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"text #{i + 1} is a {type(text).__name__}, not a string")
            cleaned.append(text.strip())
        with self.in_use():
            # Each text not cached is tokenized once, in one call: its row gives both its pass length
            # and the pass input (tokenizing twice, per text, cost ~5 s of CPU per 32k texts).
            rows = self._token_rows([t for t in dict.fromkeys(cleaned) if t not in self.text_cache], token_rows)

            def encode_pass(chunk: list[str], length: int | None = None) -> np.ndarray:
                if all(text in rows for text in chunk):  # else (evicted from the cache meanwhile) tokenize
                    tokens = torch.from_numpy(np.stack([rows[text] for text in chunk]))
                    return self._encode_text_batch(chunk, length, tokens)
                return self._encode_text_batch(chunk, length)

            if not self._text_lengths():
                return self._encode_cached(keys=cleaned, items=cleaned, cache=self.text_cache,
                                           batch_fn=encode_pass, batch_size=self.text_batch_size)

            lengths = self._pass_lengths_of_rows(rows)

            def pass_length(text: str) -> int:
                length = lengths.get(text)
                return self._text_pass_length(text) if length is None else length

            return self._encode_cached(keys=cleaned, items=cleaned, cache=self.text_cache, batch_fn=encode_pass,
                                       batch_size=self.text_batch_size, group_of=pass_length)

    def encode_text(self, text: str) -> np.ndarray:
        return self.encode_texts([text])[0]

    @property
    def context_length(self) -> int:
        """Tokens the text tower reads (77 for CLIP); longer texts are cut by the tokenizer."""
        return int(getattr(self.tokenizer, "context_length", None) or getattr(self.model, "context_length", 77))

    def token_count(self, text: str) -> int | None:
        """Tokens of ``text`` including the start / end tokens, before any truncation (None: unknown tokenizer)."""
        tokenizer = self.tokenizer
        if hasattr(tokenizer, "encode"):  # open_clip's BPE tokenizer: ids without start / end
            return len(tokenizer.encode(text.strip())) + 2
        inner = getattr(tokenizer, "tokenizer", None)  # open_clip's wrapper of a Hugging Face tokenizer
        if callable(inner):
            return len(inner(text.strip())["input_ids"])
        return None

    def truncated_texts(self, texts: Sequence[str]) -> list[str]:
        """The texts (once each, in order) that the tokenizer cuts to :attr:`context_length` tokens."""
        limit = self.context_length
        out: list[str] = []
        for text in dict.fromkeys(t for t in texts if t):
            count = self.token_count(text)
            if count is not None and count > limit:
                out.append(text)
        return out

    def _encode_cached(
        self,
        keys: list[Any],
        items: list[Any],
        cache: LRUCache[np.ndarray],
        batch_fn: Callable[..., np.ndarray],
        batch_size: int,
        group_of: Callable[[Any], Any] | None = None,
    ) -> np.ndarray:
        """Cached rows for ``keys``; the missing ones encoded in fixed-size passes.

        With ``group_of``, the missing items are encoded group by group (in order of first
        appearance), each group in its own passes, with ``batch_fn(items, group)``: a pass then only
        holds items of one group, so a group-dependent pass shape (the text length of a pass, see
        :meth:`_text_pass_length`) depends on the item alone, never on its batch mates.
        """
        if not items:
            return np.zeros((0, self.embed_dim), dtype=np.float32)
        found: dict[Any, np.ndarray] = {}
        todo: dict[Any, Any] = {}  # key -> item, in order of first appearance (a dict: a list's `in` was O(n^2))
        for key, item in zip(keys, items):
            if key in found or key in todo:
                continue
            cached = cache.get(key)
            if cached is not None:
                found[key] = cached
            else:
                todo[key] = item
        todo_keys, todo_items = list(todo), list(todo.values())
        if todo_items:
            if group_of is None:
                encoded = list(self._run_in_batches(todo_items, batch_fn, batch_size))
            else:
                groups: dict[Any, list[int]] = {}
                for index, item in enumerate(todo_items):
                    groups.setdefault(group_of(item), []).append(index)
                rows: list[np.ndarray | None] = [None] * len(todo_items)
                for group, indices in groups.items():
                    done = self._run_in_batches([todo_items[i] for i in indices],
                                                lambda chunk, group=group: batch_fn(chunk, group), batch_size)
                    for i, row in zip(indices, done):
                        rows[i] = row
                encoded = rows
            for key, row in zip(todo_keys, encoded):
                row = np.ascontiguousarray(row, dtype=np.float32)
                row.setflags(write=False)  # shared between callers through the cache
                cache.put(key, row)
                found[key] = row
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=True)

    def _run_in_batches(self, items: list[Any], batch_fn: Callable[[list[Any]], np.ndarray], batch_size: int) -> np.ndarray:
        """Encode ``items`` in forward passes of exactly ``batch_size`` rows, in order.

        The last, short chunk is padded by repeating its last item and the padding rows are dropped.
        Why: matrix kernels pick their blocking from the batch shape, so the same input encoded in a
        batch of another size moves by ~1e-7 (float32 on CPU), enough to change which of two edits
        ranks higher after the classifier fit. With one fixed shape, a row depends on its own input
        only (checked across positions and batch mates by tests/inference/test_reproducible.py).
        Out-of-memory halves the size and says that bit-identity with other runs is then lost.
        """
        outputs: list[np.ndarray] = []
        start, size = 0, max(1, batch_size)
        while start < len(items):
            chunk = items[start:start + size]
            padded = chunk + [chunk[-1]] * (size - len(chunk))
            try:
                outputs.append(batch_fn(padded)[:len(chunk)])
            except Exception as exc:
                if not is_out_of_memory(exc) or size == 1:
                    if is_out_of_memory(exc):
                        raise RuntimeError(
                            f"out of GPU memory even for a single input on {self.device}; "
                            "free GPU memory, use a smaller model, or run with --device cpu"
                        ) from exc
                    raise
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                size = max(1, size // 2)
                log.warning("out of memory on %s; retrying with batch size %d (embeddings of this run may differ "
                            "from other runs in the last float32 bits)", self.device, size)
                continue
            start += len(chunk)
        return np.concatenate(outputs, axis=0)

    def _encode_image_batch(self, images: list[Any]) -> np.ndarray:
        # A pass is padded by repeating its last image (_run_in_batches): each distinct image is
        # prepared once, not once per row (a 64-row CUDA pass for a source and one edit had spent
        # ~0.13 s preprocessing 62 copies on the CPU). On CUDA the uint8 pixels travel and are
        # normalised on the device, as in encode_preprocessed (the same float32 operations).
        prepared: dict[int, Any] = {}
        for image in images:
            if id(image) not in prepared:
                prepared[id(image)] = self._prepare_for_pass(image)
        # _pixel_batch takes uint8 arrays, preprocessed tensors or a mix of them
        return self._encode_pixel_batch([prepared[id(image)] for image in images])

    def _prepare_for_pass(self, image: Any) -> np.ndarray | torch.Tensor:
        """uint8 pixels for the device-side normalisation on CUDA, else :attr:`preprocess`'s tensor."""
        split = self._split_preprocess() if self.device.type == "cuda" else None
        return self.preprocess(image) if split is None else prepared_pixels(image, split[0], self.preprocess)

    def _pixel_batch(self, items: list[np.ndarray | torch.Tensor]) -> torch.Tensor:
        """The model input on :attr:`device` for prepared images.

        uint8 arrays travel to the device as uint8 (a quarter of the bytes; pinned on CUDA so the copy
        overlaps with running kernels) and get to-tensor + normalise there, batched, with the same
        float32 operations torchvision applies per image, so the embeddings are identical.
        """
        split = self._split_preprocess()
        if split is None or not all(isinstance(x, np.ndarray) for x in items):
            tensors = [self._pixel_batch([x])[0].cpu() if isinstance(x, np.ndarray) else x for x in items]
            stacked = torch.stack(tensors)
            if self.device.type == "cuda":
                stacked = stacked.pin_memory()
            return stacked.to(self.device, non_blocking=True)
        batch = torch.from_numpy(np.stack(items))
        if self.device.type == "cuda":
            batch = batch.pin_memory()
        batch = batch.to(self.device, non_blocking=True).permute(0, 3, 1, 2).contiguous()
        # by a 0-dim tensor on the device, not the number 255: CUDA multiplies by the reciprocal of a
        # CPU scalar (one bit off for about half of the uint8 values), a tensor divides as torchvision does
        dtype = torch.get_default_dtype()
        batch = batch.to(dtype=dtype).div(torch.full((), 255.0, dtype=dtype, device=self.device))
        return batch.sub_(split[1].to(self.device)).div_(split[2].to(self.device))

    def _encode_pixel_batch(self, tensors: list[np.ndarray | torch.Tensor]) -> np.ndarray:
        model = self.model
        pixels = self._pixel_batch(tensors)
        with self._infer_lock, torch.inference_mode(), self.compute():
            features = model.encode_image(pixels)
        return _normalize(features)

    def _encode_text_batch(self, texts: list[str], length: int | None = None,
                           tokens: torch.Tensor | None = None) -> np.ndarray:
        """Unit embeddings of ``texts``; with ``length``, the text tower reads only the first ``length`` tokens.

        ``length`` is used only where :meth:`_text_lengths` says reading fewer tokens is exact: a causal
        text tower pooled at the end-of-text token never lets a later (padding) position reach the
        pooled one, so cutting the padding after the end token leaves the embedding unchanged (to the
        float rounding of the shorter matrix products) and saves most of the work: attribute phrases
        are 5 to 15 tokens of the 77 a CLIP text pass reads.
        """
        model = self.model
        if tokens is None:  # ``tokens``: the texts' rows, tokenized ahead by encode_texts
            tokens = self.tokenizer(list(texts))
        with self._infer_lock, torch.inference_mode(), self.compute():
            tokens = tokens.to(self.device, non_blocking=True)
            if length is None or length >= tokens.shape[1]:
                features = model.encode_text(tokens)
            else:
                features = _encode_text_prefix(model, tokens[:, :length])
        return _normalize(features)

    def _text_lengths(self) -> tuple[int, ...]:
        """Token counts a text pass may read (ascending, the last = the full context); () when only the full one is exact."""
        if not hasattr(self, "_text_lengths_cache"):
            # computed into a local and assigned once: a thread that read a provisional () here
            # encoded its texts with the full pass, 2.6e-7 away from the short one (found in review)
            context = self.context_length
            lengths: tuple[int, ...] = ()
            if _prefix_is_exact(self.model, context):
                lengths = (*(n for n in TEXT_PASS_LENGTHS if n < context), context)
            self._text_lengths_cache = lengths
        return self._text_lengths_cache

    def _token_rows(self, texts: list[str], given: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Token rows of ``texts`` as int64 arrays (``given`` rows, the rest from one tokenizer call); {}
        unless the tokenizer is open_clip's own BPE.

        Only there is a row's length exact: ids, start and end tokens, then zeros (:meth:`_pass_lengths_of_rows`).
        Rows stay numpy arrays until a pass stacks them: a torch op per row (a conversion, a nonzero)
        cost ~25 us of the encoder's thread each, ~0.8 ms per batch item of 16 texts on a GPU host.
        """
        import open_clip

        if not texts or not isinstance(self.tokenizer, open_clip.tokenizer.SimpleTokenizer):
            return {}
        given = given or {}
        rows = {text: np.asarray(given[text], dtype=np.int64) for text in texts if text in given}
        rest = [text for text in texts if text not in rows]
        if rest:
            rows.update(zip(rest, self.tokenizer(rest).numpy()))
        return rows

    def preparation_recipe(self) -> tuple[list[Any], Any, Any] | None:
        """What another process needs to prepare inputs exactly as this encoder does: (the PIL steps
        of :meth:`preprocess_image`, the whole transform, the tokenizer when it is open_clip's BPE, else
        None); None when the transform does not end in to-tensor + normalise (then only this process
        prepares images)."""
        import open_clip

        split = self._split_preprocess()
        if split is None:
            return None
        tokenizer = self.tokenizer if isinstance(self.tokenizer, open_clip.tokenizer.SimpleTokenizer) else None
        return list(split[0]), self.preprocess, tokenizer

    def _pass_lengths_of_rows(self, rows: Mapping[str, np.ndarray]) -> dict[str, int]:
        """:meth:`_text_pass_length` of the texts SimpleTokenizer rows came from, all rows in one array operation.

        A row is start, ids, end, then zero padding; the last non-zero position is the end token
        (an id 0 can occur inside a text, never after its end token), so it gives the count that
        :meth:`token_count` gives, and a cut text (end token at the last position) the full context.
        """
        if not rows:
            return {}
        stacked = np.stack(list(rows.values()))
        # the last non-zero position: the first non-zero of the reversed row, counted from the end
        counts = stacked.shape[1] - np.argmax(stacked[:, ::-1] != 0, axis=1)
        return {text: self._pass_length_for(int(count)) for text, count in zip(rows, counts)}

    def _text_pass_length(self, text: str) -> int:
        """The shortest allowed pass length that holds all of ``text``'s tokens (start and end included)."""
        return self._pass_length_for(self.token_count(text))

    def _pass_length_for(self, count: int | None) -> int:
        """The shortest allowed pass length holding ``count`` tokens; the full context for None or more."""
        lengths = self._text_lengths()
        return lengths[-1] if count is None else next((n for n in lengths if count <= n), lengths[-1])


def _prefix_is_exact(model: torch.nn.Module, context: int) -> bool:
    """Whether reading a token prefix that holds the end token gives the full pass's text embedding.

    True for open_clip's ``CLIP`` class (OpenAI / LAION / DataComp / MetaCLIP text towers): learned
    absolute positions, a causal mask and pooling at the end token (``argmax`` or ``eos``). Not for
    towers that pool the last position or attend both ways over padding (SigLIP, CoCa, HF towers).
    """
    import open_clip

    if type(model) is not open_clip.model.CLIP or getattr(model, "text_pool_type", None) not in ("argmax", "eos"):
        return False
    mask = getattr(model, "attn_mask", None)
    positions = getattr(model, "positional_embedding", None)
    if mask is None or positions is None or positions.shape[0] != context or tuple(mask.shape) != (context, context):
        return False
    causal = torch.triu(torch.ones(context, context, dtype=torch.bool, device=mask.device), diagonal=1)
    return bool(torch.all(torch.isneginf(mask[causal])) and torch.all(mask[~causal] == 0))


def _encode_text_prefix(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """open_clip's ``CLIP.encode_text`` over the first ``tokens.shape[1]`` positions (see _prefix_is_exact)."""
    from open_clip.transformer import text_global_pool

    length = tokens.shape[1]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast_dtype) + model.positional_embedding[:length].to(cast_dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = text_global_pool(x, tokens, model.text_pool_type, eos_token_id=getattr(model, "text_eos_id", None))
    projection = model.text_projection
    if projection is not None:
        x = projection(x) if isinstance(projection, torch.nn.Linear) else x @ projection
    return x


def _normalize(features: torch.Tensor) -> np.ndarray:
    features = features.float()
    features = features / features.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return features.cpu().numpy().astype(np.float32)


def get_encoder(settings: Settings, **overrides: Any) -> ClipEncoder:
    """The process-wide encoder for these settings (:func:`augclip_demo.inference.families.get_model`).

    ``overrides`` are :class:`Settings` fields (``clip_model``, ``device``, ``clip_checkpoint``...).
    """
    from .families import get_model

    return get_model("clip", settings.replace(**overrides) if overrides else settings)
