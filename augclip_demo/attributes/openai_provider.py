"""The ``openai`` provider: attributes from a multi-modal LLM behind an OpenAI-compatible API,
with the paper's two prompts (App. C.2 for the source image, C.3 for the target text).

Works with OpenAI itself and with local servers that accept images (vLLM, Ollama, LM Studio, TGI):
set ``OPENAI_API_KEY`` and/or ``OPENAI_BASE_URL``, and the model with ``AUGCLIP_MLLM_MODEL`` or
``--mllm-model`` (default ``gpt-4o``). See :mod:`augclip_demo.llm.client` for timeouts and retries.

Per sample (seed ``s``), three requests:

1. source image + caption prompt -> an objective caption (C.2, step 1);
2. caption + the paper's parse example -> Python list of source attributes (C.2, step 2);
3. target text + caption as context + the paper's example -> Python list of target attributes (C.3).

Step 2 and 3 are text-only requests that quote the caption (the paper parses "the source image
caption"; sending the image again would only add cost). With ``samples=k`` the three steps run
with seeds ``seed, seed+1, ..., seed+k-1`` and the lists are merged by frequency
(:func:`~augclip_demo.attributes.answers.merge_samples`).
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..errors import InputError, LLMError
from ..io import LoadedImage
from ..llm.client import DEFAULT_IMAGE_MAX_SIDE, OpenAICompatibleClient, redact, user_message_with_image
from .answers import DEFAULT_MAX_ATTRIBUTES, clean_attributes, merge_samples, parse_attribute_list
from .base import FIDELITY_MLLM, Attributes, ProgressCallback
from .disk_cache import AttributeCache
from .extracting import ExtractingProvider
from .prompts import CAPTION_PROMPT, PROMPT_VERSION, caption_parse_prompt, target_prompt

#: Sampling temperature when ``samples > 1`` and none is given: a sampled answer per seed is the
#: point of several samples (Sec. 4.1: the MLLM samples by empirical probability, so frequency
#: across samples indicates importance). One sample defaults to 0 (as repeatable as the server allows).
SAMPLING_TEMPERATURE = 1.0
MAX_SAMPLES = 16


class OpenAIProvider(ExtractingProvider):
    """Source and target attributes from an OpenAI-compatible multi-modal chat model.

    Args:
        model: model name (default ``settings.mllm_model``: ``AUGCLIP_MLLM_MODEL`` or ``gpt-4o``).
        settings: configuration; default: the declared defaults (``Settings()``).
        client: an existing :class:`OpenAICompatibleClient` (then ``model``/``base_url``/... are its own).
        base_url: OpenAI-compatible API root; default ``OPENAI_BASE_URL``, else the hosted API.
        timeout, max_retries: per request (default ``AUGCLIP_MLLM_TIMEOUT`` / ``AUGCLIP_MLLM_MAX_RETRIES``).
        samples: query k times with different seeds and merge by frequency (default 1).
        seed: seed of the first sample (default 0); sample i uses ``seed + i``.
        temperature: default 0.0 for one sample, :data:`SAMPLING_TEMPERATURE` for several.
        max_attributes: cap per set after cleaning and merging (default 30, Table 8's largest).
        max_tokens: answer length limit per request (default 800).
        image_max_side: the source image is sent shrunk to this longer side (default 1024 px).
        use_cache, cache, progress: see :class:`ExtractingProvider`.

    Raises :class:`~augclip_demo.errors.LLMError` when the endpoint is not configured (no key and no
    base URL), on request failures, and when an answer holds no usable list.
    """

    name = "openai"
    fidelity = FIDELITY_MLLM

    def __init__(self, model: str | None = None, *, settings: Settings | None = None,
                 client: OpenAICompatibleClient | None = None, base_url: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None, samples: int = 1, seed: int = 0,
                 temperature: float | None = None, max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
                 max_tokens: int | None = 800, image_max_side: int | None = DEFAULT_IMAGE_MAX_SIDE,
                 use_cache: bool = True, cache: AttributeCache | None = None,
                 progress: ProgressCallback | None = None):
        super().__init__(settings=settings, use_cache=use_cache, cache=cache, progress=progress)
        if not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
            raise InputError(f"samples must be an integer from 1 to {MAX_SAMPLES}, got {samples!r}")
        if not isinstance(seed, int):
            raise InputError(f"seed must be an integer, got {seed!r}")
        if not isinstance(max_attributes, int) or max_attributes < 1:
            raise InputError(f"max_attributes must be a positive integer, got {max_attributes!r}")
        self.client = client or OpenAICompatibleClient(self.settings, base_url=base_url, model=model,
                                                       timeout=timeout, max_retries=max_retries)
        self.samples = samples
        self.seed = seed
        self.temperature = float(temperature if temperature is not None
                                 else (0.0 if samples == 1 else SAMPLING_TEMPERATURE))
        self.max_attributes = max_attributes
        self.max_tokens = max_tokens
        self.image_max_side = image_max_side

    @property
    def model(self) -> str:
        return self.client.model

    def cache_identity(self) -> dict[str, Any]:
        # The base URL is part of the key: the same model name on two servers is two models.
        return {"model": self.model, "base_url": self.client.base_url, "prompt_version": PROMPT_VERSION,
                "seed": self.seed, "samples": self.samples, "temperature": self.temperature,
                "max_attributes": self.max_attributes, "image_max_side": self.image_max_side}

    def _extract(self, source: LoadedImage, target_text: str, source_text: str | None,
                 progress: ProgressCallback) -> Attributes:
        seeds = [self.seed + i for i in range(self.samples)]
        steps = 3 * len(seeds)
        done = 0
        source_lists: list[list[str]] = []
        target_lists: list[list[str]] = []
        captions: list[str] = []
        served: set[str] = set()
        failures: list[str] = []
        image_message = user_message_with_image(CAPTION_PROMPT, source, max_side=self.image_max_side)
        for seed in seeds:
            tag = f" (sample {seed - self.seed + 1}/{len(seeds)})" if len(seeds) > 1 else ""
            progress(done / steps, f"openai: describing the source image{tag}")
            caption_reply = self.client.complete([image_message], **self._sampling(seed))
            served.add(caption_reply.model)
            caption = caption_reply.text.strip()
            captions.append(caption)
            done += 1
            progress(done / steps, f"openai: listing source attributes{tag}")
            source_answer = self.client.chat([{"role": "user", "content": caption_parse_prompt(caption)}],
                                             **self._sampling(seed))
            done += 1
            progress(done / steps, f"openai: listing target attributes{tag}")
            target_answer = self.client.chat(
                [{"role": "user", "content": target_prompt(target_text, caption, source_text)}], **self._sampling(seed))
            done += 1
            src_items = clean_attributes(parse_attribute_list(source_answer), max_items=None)
            tgt_items = clean_attributes(parse_attribute_list(target_answer), max_items=None)
            problems = [(label, answer) for label, items, answer in
                        (("source", src_items, source_answer), ("target", tgt_items, target_answer)) if not items]
            if problems:
                label, answer = problems[0]
                message = (f"the answer of {self.client.base_url} (model {self.model}) to the {label}-attribute "
                           f"request (seed {seed}) holds no usable list: {_excerpt(answer)}")
                if len(seeds) == 1:
                    raise LLMError(message + "; try again, another seed, or a model that follows instructions "
                                   "better", kind="no_list", base_url=self.client.base_url, model=self.model)
                failures.append(message)
                continue
            source_lists.append(src_items)
            target_lists.append(tgt_items)
        if not source_lists:
            raise LLMError(f"none of the {len(seeds)} samples gave usable lists; first problem: {failures[0]}",
                           kind="no_list", base_url=self.client.base_url, model=self.model)
        merged_source = merge_samples(source_lists, self.max_attributes)
        merged_target = merge_samples(target_lists, self.max_attributes)
        extra: dict[str, Any] = {
            "base_url": self.client.base_url,
            "served_model": sorted(served)[0] if len(served) == 1 else sorted(served),
            "temperature": self.temperature,
            "seeds": seeds,
            "captions": captions,
        }
        if self.samples > 1:
            extra["source_counts"] = merged_source.counts
            extra["target_counts"] = merged_target.counts
            if failures:
                extra["failed_samples"] = failures
        provenance = self.provenance(model=self.model, prompt_version=PROMPT_VERSION, seed=self.seed,
                                     samples=self.samples, extra=extra)
        return Attributes(merged_source.items, merged_target.items, provenance)

    def _sampling(self, seed: int) -> dict[str, Any]:
        return {"seed": seed, "temperature": self.temperature, "max_tokens": self.max_tokens}


def _excerpt(text: str, limit: int = 160) -> str:
    flat = redact(" ".join(str(text).split()))
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
