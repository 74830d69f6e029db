"""The embedding store of a batch run: each image and text encoded once, kept exactly as long as needed.

The plan counts, for each image key and each text, how many pending items use it. An embedding
enters the store when it is encoded (or found in the encoder's cache) and leaves it when the last
item that uses it is scored or fails, so memory follows the items in flight, not the manifest.
Images are queued as prepared pixels and encoded a batch at a time; content duplicates under
other paths share one encoding (by content hash).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..inference.clip_encoder import ClipEncoder
from .item_steps import DecodedItem, encode_images, encode_texts, unit_row


class EmbeddingStore:
    """Unit embeddings by image key and by text, with their remaining uses; not thread-safe (one loop owns it)."""

    def __init__(self, image_uses: Counter[str], text_uses: Counter[str]):
        self.images: dict[str, np.ndarray] = {}
        self.texts: dict[str, np.ndarray] = {}
        self.image_uses = image_uses
        self.text_uses = text_uses
        self.failed_images: dict[str, str] = {}  # image key -> why it could not be opened
        self.claimed: set[str] = set()  # keys a decode task is preparing
        self.image_queue: list[tuple[str, Any]] = []  # (content hash, prepared pixels) in encode order
        self.queued_keys_by_sha: dict[str, list[str]] = {}  # content hash -> keys waiting for that content
        self.queued_keys: set[str] = set()
        self.text_queue: dict[str, None] = {}  # texts to encode, in order
        self.text_tokens: dict[str, Any] = {}  # queued text -> its token row, when a decode process made it

    # ------------------------------------------------------------------ images
    def claim(self, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` that nobody has produced, is producing or has queued: the caller prepares them."""
        claim = {key for key in keys if key not in self.images and key not in self.claimed
                 and key not in self.failed_images and key not in self.queued_keys}
        self.claimed |= claim
        return claim

    def add_decoded(self, decoded: DecodedItem) -> None:
        """Take a decode task's prepared images (queued), cached embeddings (stored) and failures."""
        for key, (sha, pixels, cached) in decoded.images.items():
            self.claimed.discard(key)
            if cached is not None:
                if self.image_uses.get(key, 0) > 0:
                    self.images[key] = unit_row(cached, "image embedding")
            elif sha in self.queued_keys_by_sha:
                self.queued_keys_by_sha[sha].append(key)
                self.queued_keys.add(key)
            else:
                self.image_queue.append((sha, pixels))
                self.queued_keys_by_sha[sha] = [key]
                self.queued_keys.add(key)
        for key, message in decoded.failed_images.items():
            self.claimed.discard(key)
            self.failed_images[key] = message

    def abandon_claims(self, keys: Iterable[str], reason: str) -> None:
        """A decode task crashed before producing these claimed keys: nobody else will, so they fail."""
        for key in keys:
            if key in self.claimed:
                self.claimed.discard(key)
                self.failed_images[key] = reason

    def failure(self, keys: Iterable[str]) -> str | None:
        return next((self.failed_images[key] for key in keys if key in self.failed_images), None)

    # ------------------------------------------------------------------ texts
    def add_text_uses(self, texts: Iterable[str]) -> None:
        """Texts known only after decoding (a provider's attributes) get their uses here."""
        for text in texts:
            self.text_uses[text] += 1

    def request_texts(self, texts: Iterable[str], encoder: ClipEncoder, tokens: dict[str, Any] | None = None) -> None:
        """Queue the texts that are neither stored nor queued (the encoder's cache answers at once);
        ``tokens``: token rows by stripped text, kept with the texts they queue."""
        for text in texts:
            if text in self.texts or text in self.text_queue:
                continue
            cached = encoder.text_cache.get(text)
            if cached is not None:
                self.texts[text] = unit_row(cached, "text embedding")  # the requesting item holds a use
            else:
                self.text_queue[text] = None
                row = tokens.get(text.strip()) if tokens else None
                if row is not None:
                    self.text_tokens[text] = row

    # ------------------------------------------------------------------ encode
    def encode(self, encoder: ClipEncoder, image_batch: int, text_batch: int, flush: bool) -> None:
        """Encode full batches of queued images and texts (everything queued when ``flush``)."""
        n_images = len(self.image_queue) if flush else len(self.image_queue) // image_batch * image_batch
        if n_images:
            take, self.image_queue = self.image_queue[:n_images], self.image_queue[n_images:]
            shas = [sha for sha, _ in take]
            rows = encode_images(encoder, [pixels for _, pixels in take], shas, image_batch)
            for sha, row in zip(shas, rows):
                row.setflags(write=False)
                for key in self.queued_keys_by_sha.pop(sha, []):
                    self.queued_keys.discard(key)
                    if self.image_uses.get(key, 0) > 0:  # its users may all have failed meanwhile
                        self.images[key] = row
        queued = list(self.text_queue)
        n_texts = len(queued) if flush else len(queued) // text_batch * text_batch
        if n_texts:
            texts = queued[:n_texts]
            self.text_queue = dict.fromkeys(queued[n_texts:])
            rows = {text.strip(): self.text_tokens.pop(text) for text in texts if text in self.text_tokens}
            for text, row in zip(texts, encode_texts(encoder, texts, text_batch, rows)):
                row.setflags(write=False)
                if self.text_uses.get(text, 0) > 0:
                    self.texts[text] = row

    @property
    def has_queued(self) -> bool:
        return bool(self.image_queue or self.text_queue)

    # ------------------------------------------------------------------ use
    def has_all(self, image_keys: Iterable[str], texts: Iterable[str]) -> bool:
        return all(key in self.images for key in image_keys) and all(text in self.texts for text in texts)

    def release(self, image_keys: Iterable[str], texts: Iterable[str]) -> None:
        """One item is done with these: each embedding goes when its last user is done."""
        for key in set(image_keys):
            self.image_uses[key] -= 1
            if self.image_uses[key] <= 0:
                self.images.pop(key, None)
                del self.image_uses[key]
        for text in texts:
            self.text_uses[text] -= 1
            if self.text_uses[text] <= 0:
                self.texts.pop(text, None)
                del self.text_uses[text]

    def sizes(self) -> dict[str, int]:
        return {"image_embeddings": len(self.images), "text_embeddings": len(self.texts),
                "queued_images": len(self.image_queue), "queued_token_rows": len(self.text_tokens)}
