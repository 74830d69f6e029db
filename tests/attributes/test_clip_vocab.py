"""The offline ``clip-vocab`` provider with the tiny random CLIP model."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from augclip_demo.attributes import (
    FIDELITY_CLIP_VOCAB,
    ClipVocabProvider,
    default_vocabulary,
    make_vocabulary,
)
from augclip_demo.attributes.clip_vocab import (
    clear_memory_cache,
    fits_target_better,
    model_identity,
    select_diverse,
    standardize,
    vocabulary_cache_file,
    vocabulary_embeddings,
)
from augclip_demo.config import Settings
from augclip_demo.inference import ClipEncoder
from augclip_demo.pipeline import Evaluator
from tests.support import TINY, draw_scene

# Encoding the ~3,300-phrase vocabulary takes ~10 s on 2 cores, so the module stays out of the fast loop.
pytestmark = pytest.mark.slow

SOURCE = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
TARGET = "a red ball on green grass"


class CountingEncoder:
    """Counts the texts that reach the real text tower of ``encoder`` (a spy, not a stand-in)."""

    def __init__(self, encoder: ClipEncoder):
        self.texts = 0
        original = encoder._encode_text_batch

        def counted(texts, *length):
            # distinct texts: each pass is padded to the encoder's fixed size by repeating its last text
            self.texts += len(set(texts))
            return original(texts, *length)

        encoder._encode_text_batch = counted


@pytest.fixture()
def provider(tiny_encoder, tmp_path) -> ClipVocabProvider:
    return ClipVocabProvider(tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path), use_cache=False)


def test_structure_and_labels(provider):
    attrs = provider.extract(SOURCE, TARGET, "a red ball")
    vocab = set(default_vocabulary().phrases)
    assert attrs.source[0] == "a red ball" and len(attrs.source) == 1 + provider.source_k
    assert attrs.target[0] == TARGET and len(attrs.target) == 1 + provider.target_k
    assert set(attrs.source[1:]) <= vocab and set(attrs.target[1:]) <= vocab
    assert not set(attrs.source[1:]) & set(attrs.target[1:])
    prov = attrs.provenance
    assert prov.provider == "clip-vocab" and prov.fidelity == FIDELITY_CLIP_VOCAB and prov.lower_fidelity
    assert prov.extra["untrained"] is True and "untrained" in prov.model
    assert prov.prompt_version.startswith("clip-vocab-v1-") and prov.seed is None and prov.samples == 1
    scores = prov.extra["source_scores"]
    assert scores == sorted(scores, reverse=True)  # best first, by cosine to the source image
    assert provider.extract(SOURCE, TARGET).source == attrs.source[1:]  # no source text: phrases only


def test_deterministic_across_calls_and_instances(provider, tiny_encoder, tmp_path):
    first = provider.extract(SOURCE, TARGET)
    second = provider.extract(SOURCE, TARGET)
    fresh = ClipVocabProvider(tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path), use_cache=False)
    third = fresh.extract(SOURCE, TARGET)
    assert first.source == second.source == third.source and first.target == second.target == third.target


def test_target_phrases_fit_the_target_text_better_than_the_source_image(provider, tiny_encoder):
    attrs = provider.extract(SOURCE, TARGET)
    vocab = provider.prepare()
    index = {p: i for i, p in enumerate(vocab.vocabulary.phrases)}
    image_scores = vocab.matrix @ tiny_encoder.encode_image(SOURCE)
    text_scores = vocab.matrix @ tiny_encoder.encode_text(TARGET)
    z_img, z_txt = standardize(image_scores), standardize(text_scores)
    for phrase in attrs.target[1:]:
        assert z_txt[index[phrase]] > z_img[index[phrase]]
    better = fits_target_better(image_scores, text_scores)
    assert 0 < better.sum() < len(better)  # the rule excludes some phrases and keeps others
    best_unfiltered = int(np.argmax(text_scores))
    if not better[best_unfiltered]:
        assert vocab.vocabulary.phrases[best_unfiltered] not in attrs.target


def test_diversity_filter(tiny_encoder, tmp_path, provider):
    vocab = provider.prepare()
    order = np.argsort(-(vocab.matrix @ tiny_encoder.encode_image(SOURCE)), kind="stable")
    raw = [int(i) for i in order[:10]]
    assert select_diverse(order, vocab.matrix, 10, 1.0) == raw  # 1.0 switches the filter off
    sims = vocab.matrix[raw] @ vocab.matrix[raw].T
    threshold = float(np.max(sims[np.triu_indices(10, 1)])) - 0.02  # below the closest pair of the raw top 10
    diverse = select_diverse(order, vocab.matrix, 10, threshold)
    assert diverse != raw and len(diverse) == 10 and diverse[0] == raw[0]
    kept = vocab.matrix[diverse] @ vocab.matrix[diverse].T
    assert np.max(kept[np.triu_indices(10, 1)]) <= threshold + 1e-6
    strict = ClipVocabProvider(tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path), use_cache=False,
                               max_similarity=threshold)
    attrs = strict.extract(SOURCE, TARGET)
    phrases = {p: i for i, p in enumerate(vocab.vocabulary.phrases)}
    rows = vocab.matrix[[phrases[p] for p in attrs.source]]
    pair = rows @ rows.T
    assert np.max(pair[np.triu_indices(len(rows), 1)]) <= threshold + 1e-6


def test_vocabulary_encoded_once_then_memory_then_disk(tmp_path, caplog):
    vocab = make_vocabulary([f"a {c} {o}" for c in ("red", "blue", "green") for o in ("car", "ball", "dog", "tree")])
    encoder = ClipEncoder(TINY, device="cpu", cache_dir=tmp_path)
    spy = CountingEncoder(encoder)
    first = vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path)
    assert first.origin == "encoded" and spy.texts == len(vocab) and first.matrix.shape == (len(vocab), 64)
    second = vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path)
    assert second.origin == "memory" and spy.texts == len(vocab)
    clear_memory_cache()
    other = ClipEncoder(TINY, device="cpu", cache_dir=tmp_path)  # a new process would look like this
    other_spy = CountingEncoder(other)
    third = vocabulary_embeddings(other, vocab, cache_dir=tmp_path)
    assert third.origin == "disk" and other_spy.texts == 0
    np.testing.assert_array_equal(third.matrix, first.matrix)
    # a damaged file is reported, re-encoded and rewritten
    path = vocabulary_cache_file(tmp_path, model_identity(other), vocab)
    path.write_bytes(b"not a zip file")
    clear_memory_cache()
    caplog.set_level(logging.WARNING)
    fourth = vocabulary_embeddings(other, vocab, cache_dir=tmp_path)
    assert fourth.origin == "encoded" and other_spy.texts == len(vocab) and "unreadable" in caplog.text
    np.testing.assert_allclose(fourth.matrix, first.matrix, atol=1e-6)
    clear_memory_cache()
    assert vocabulary_embeddings(other, vocab, cache_dir=tmp_path).origin == "disk"


def test_second_extraction_encodes_no_vocabulary_and_pipeline_reuses_embeddings(tiny_encoder, tmp_path):
    settings = Settings.from_env(cache_dir=tmp_path)
    ClipVocabProvider(tiny_encoder, settings=settings, use_cache=False).extract(SOURCE, TARGET)  # warm
    spy = CountingEncoder(tiny_encoder)
    try:
        source2 = draw_scene(shapes=[("rectangle", (10, 10, 60, 60), "blue")])
        attrs = ClipVocabProvider(tiny_encoder, settings=settings, use_cache=False).extract(source2, "a blue box")
        assert spy.texts == 1  # just the new target text; not one vocabulary phrase
        assert attrs.provenance.extra["vocabulary_origin"] == "memory"
        evaluator = Evaluator(encoder=tiny_encoder, settings=settings)
        images_before = tiny_encoder.image_cache.stats()["hits"]
        report = evaluator.evaluate(source2, SOURCE, "a blue box", attributes=attrs)
        assert spy.texts == 1  # every attribute phrase and the target text came from the encoder's cache
        assert tiny_encoder.image_cache.stats()["hits"] > images_before
        assert report.attributes.provenance.fidelity == FIDELITY_CLIP_VOCAB
    finally:
        del tiny_encoder._encode_text_batch  # back to the class method


def test_evaluator_resolves_the_provider_by_name(tiny_encoder, tmp_path):
    evaluator = Evaluator(encoder=tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path))
    report = evaluator.evaluate(SOURCE, draw_scene(), TARGET, attributes="clip-vocab")
    assert report.attributes.provenance.provider == "clip-vocab"
    assert report.attributes.provenance.extra["cache"] == "miss"
    again = evaluator.evaluate(SOURCE, draw_scene(), TARGET, attributes="clip-vocab")
    assert again.attributes.provenance.extra["cache"] == "hit" and again.attributes.source == report.attributes.source


def test_vocabulary_encoding_reports_progress_per_step_with_counts(tmp_path):
    from augclip_demo.attributes.clip_vocab import VOCAB_PASSES_PER_STEP

    vocab = make_vocabulary([f"a {c} {o}" for c in ("red", "blue", "green", "pink", "gray")
                             for o in ("car", "ball", "dog", "tree", "cup", "hat", "box", "pen")])  # 40 phrases
    encoder = ClipEncoder(TINY, device="cpu", cache_dir=tmp_path)
    clear_memory_cache()
    assert vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path, build=False) is None  # nothing built yet
    calls: list[tuple[float, str]] = []
    built = vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path, progress=lambda f, m: calls.append((f, m)))
    assert built is not None and built.origin == "encoded"
    step = encoder.text_batch_size * VOCAB_PASSES_PER_STEP  # 32 phrases with the CPU pass of 8
    expected_counts = [0] + [min(n, 40) for n in range(step, 40 + step, step)]
    assert [int(m.split(": ")[-1].split("/")[0]) for _, m in calls] == expected_counts
    assert [f for f, _ in calls] == [n / 40 for n in expected_counts]
    assert all("/40 phrases" in m for _, m in calls) and "so far" in calls[-1][1]
    clear_memory_cache()
    assert vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path, build=False).origin == "disk"


def test_a_caller_waiting_for_the_encoding_sees_its_progress(tmp_path):
    import threading

    vocab = make_vocabulary([f"a {c} thing number {i}" for c in ("red", "blue") for i in range(40)])
    encoder = ClipEncoder(TINY, device="cpu", cache_dir=tmp_path)
    encoder.load()
    clear_memory_cache()
    original = encoder._encode_text_batch
    gate = threading.Event()

    def slowed(texts, *length):  # the builder's passes take > 1 s, so the waiter polls at least once
        gate.set()
        import time
        time.sleep(0.4)
        return original(texts, *length)

    encoder._encode_text_batch = slowed
    builder = threading.Thread(target=vocabulary_embeddings, args=(encoder, vocab), kwargs={"cache_dir": tmp_path})
    builder.start()
    gate.wait(10)
    seen: list[str] = []
    waited = vocabulary_embeddings(encoder, vocab, cache_dir=tmp_path, progress=lambda f, m: seen.append(m))
    builder.join()
    assert waited.origin == "memory"  # the waiter did not encode again
    assert seen and all("/80 phrases" in m for m in seen)
