"""Spec normalisation and the bounded pool of loaded models (issue 15, point 1): one wrapper per model
whatever the spelling, at most N models and M bytes loaded, least recently used out first, memory
released, models in use never evicted, oversized random architectures refused before building."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError
from augclip_demo.inference import ClipEncoder, get_encoder, parse_model_spec
from augclip_demo.inference.grounding import get_detector
from augclip_demo.inference.pool import POOL, module_bytes
from augclip_demo.inference.segmenter import get_segmenter
from augclip_demo.inference.specs import MAX_RANDOM_PARAMS, MAX_SPEC_CHARS
from tests.support import ROOT, TINY


@pytest.fixture()
def pool_limits():
    """Set the process-wide pool's limits for one test; restore them (and unload what the test left)."""
    saved = (POOL.max_models, POOL.max_bytes)

    def set_limits(max_models: int = 100, max_bytes: int = 2**40) -> None:
        POOL.configure(max_models, max_bytes)

    yield set_limits
    POOL.configure(*saved)


def _tiny(cache_dir) -> ClipEncoder:
    """A fresh random:tiny encoder: a model of its own in the pool (not shared through get_encoder)."""
    return ClipEncoder(TINY, device="cpu", cache_dir=cache_dir)


def _settings(tmp_path, **kw) -> Settings:
    return Settings.from_env({}, device="cpu", cache_dir=tmp_path, **kw)


# ---------------------------------------------------------------------- one spelling per model
@pytest.mark.parametrize("variants, canonical", [
    (["random:tiny", " random:tiny", "random: tiny", "random:tiny \t", "random:augclip-tiny-vit"], "random:tiny"),
    (["random:ViT-B-16", "random: ViT-B-16", "random:ViT-B-16 ", "\nrandom:ViT-B-16"], "random:ViT-B-16"),
    (["ViT-B-16/openai", "ViT-B-16 / openai", " ViT-B-16/OpenAI", "ViT-B-16/OPENAI "], "ViT-B-16/openai"),
    (["ViT-B-32/laion2b_s34b_b79k", "ViT-B-32/laion2b-s34b-b79k", "ViT-B-32/LAION2B_S34B_B79K"],
     "ViT-B-32/laion2b_s34b_b79k"),
    (["hf-hub:timm/vit_base_patch16_clip_224.openai", "hf-hub: timm/vit_base_patch16_clip_224.openai "],
     "hf-hub:timm/vit_base_patch16_clip_224.openai"),
])
def test_spellings_parse_to_one_canonical_spec(variants, canonical):
    specs = {parse_model_spec(v) for v in variants}
    assert len(specs) == 1
    assert specs.pop().raw == canonical


def test_architecture_names_stay_case_sensitive_as_in_open_clip():
    # open_clip looks architectures up by exact name; a different case is another (unknown) name
    with pytest.raises(ConfigError, match="unknown open_clip architecture 'vit-b-16'.*Did you mean: ViT-B-16"):
        parse_model_spec("vit-b-16/openai")


def test_spelling_variants_share_one_loaded_model(tmp_path):
    first = get_encoder(_settings(tmp_path, clip_model="random:tiny"))
    for spelling in (" random: tiny ", "random:augclip-tiny-vit", "random:tiny\n"):
        assert get_encoder(_settings(tmp_path, clip_model=spelling)) is first
    first.encode_texts(["a red ball"])
    module = first._model
    assert get_encoder(_settings(tmp_path, clip_model=" random: tiny")).model is module
    assert get_detector(_settings(tmp_path, gdino_model=" random: tiny")) is \
        get_detector(_settings(tmp_path, gdino_model="random:tiny"))
    assert get_segmenter(_settings(tmp_path, sam_model="RANDOM:TINY ")) is \
        get_segmenter(_settings(tmp_path, sam_model="random:tiny"))


@pytest.mark.parametrize("spec, message", [
    ("hf-hub:../../etc", "does not name a Hugging Face Hub repository"),
    ("hf-hub:org/name/extra", "does not name a Hugging Face Hub repository"),
    ("hf-hub:org/re..po", "no '..'"),
    ("random:ViT-B-16\x00", "contains control characters"),
    ("ViT-B-16/openai\nrandom:tiny", "contains control characters"),
    ("x" * 5000, f"too long: at most {MAX_SPEC_CHARS} characters"),
])
def test_malformed_specs_get_one_clean_line(spec, message):
    with pytest.raises(ConfigError, match=message) as info:
        parse_model_spec(spec)
    text = str(info.value)
    assert "\n" not in text and len(text) < 400  # never the whole spec echoed back


@pytest.mark.parametrize("spec, message", [
    ("hf-hub:../../etc", "does not name a Hugging Face Hub repository"),
    ("random:" + "ViT" * 1700, "(5107 characters) is too long"),
])
def test_cli_refuses_malformed_specs_in_one_line(spec, message, capsys):
    examples = ROOT / "assets" / "examples" / "flower-pink"
    code = main(["score", "--source", str(examples / "source.png"), "--edited", str(examples / "well_edited.png"),
                 "--target", "a pink dahlia", "--clip-model", spec, "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err and "HFValidationError" not in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 500


# ---------------------------------------------------------------------- random architecture size
def test_random_architectures_within_the_limit_still_build(tmp_path):
    assert parse_model_spec("random:ViT-B-16").arch == "ViT-B-16"  # 150 M parameters, under the limit
    assert parse_model_spec("random:ViT-L-14").arch == "ViT-L-14"  # 428 M


@pytest.mark.parametrize("arch, millions", [("ViT-bigG-14", 2540), ("ViT-H-14", 986)])
def test_big_random_architectures_are_refused(arch, millions):
    with pytest.raises(ConfigError, match=f"random:{arch} has {millions:,} M parameters.*more than the "
                                          f"{MAX_RANDOM_PARAMS // 10**6} M"):
        parse_model_spec(f"random:{arch}")


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_big_random_architecture_is_refused_without_allocating_it():
    """In a fresh interpreter (so earlier tests' memory cannot hide an allocation): the peak resident
    memory grows by less than 200 MB while random:ViT-bigG-14 (2.5 G parameters, ~9.5 GiB) is refused."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    script = """
import open_clip, torch
from augclip_demo.errors import ConfigError
from augclip_demo.inference.specs import parse_model_spec, register_model_configs
def peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
register_model_configs()
before = peak()
try:
    parse_model_spec('random:ViT-bigG-14')
    print('BUILT')
except ConfigError as exc:
    print('REFUSED', peak() - before, exc)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    words = proc.stdout.split()
    assert words[0] == "REFUSED", proc.stdout
    assert int(words[1]) < 200 * 2**20, f"peak memory grew by {int(words[1]) / 2**20:.0f} MB"


# ---------------------------------------------------------------------- the bounded pool
@pytest.mark.slow
def test_module_bytes_counts_parameters_and_buffers(tmp_path):
    encoder = _tiny(tmp_path).load()
    model = encoder.model
    expected = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    assert module_bytes(model) == expected
    encoder.unload()


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_pool_keeps_at_most_n_models_evicting_the_least_recently_used(tmp_path, pool_limits):
    pool_limits(max_models=2)
    a, b, c = (_tiny(tmp_path) for _ in range(3))
    a.encode_texts(["one"])
    b.encode_texts(["two"])
    module_of_b = weakref.ref(b._model)
    a.encode_texts(["three"])  # a is now more recently used than b
    c.encode_texts(["four"])
    assert a.is_loaded and c.is_loaded and not b.is_loaded
    gc.collect()
    assert module_of_b() is None  # the evicted network is gone, not just forgotten
    loaded = POOL.loaded_models()
    assert b not in loaded and a in loaded and c in loaded
    assert sum(1 for m in loaded if m in (a, b, c)) == 2
    # the evicted wrapper still works: it loads again (and another model goes)
    before = b.encode_texts(["again"])
    assert b.is_loaded and not a.is_loaded
    np.testing.assert_allclose(before, c.encode_texts(["again"]), atol=1e-6)  # same seed, same weights
    for model in (a, b, c):
        model.unload()


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_pool_keeps_at_most_m_bytes(tmp_path, pool_limits):
    one = _tiny(tmp_path).load()
    size = module_bytes(one.model)
    one.unload()
    pool_limits(max_models=100, max_bytes=int(2.5 * size))
    models = [_tiny(tmp_path) for _ in range(4)]
    refs = []
    for model in models:
        model.encode_texts(["x"])
        refs.append(weakref.ref(model._model))
        ours = [m for m in POOL.loaded_models() if m in models]
        assert sum(module_bytes(m._model) for m in ours) <= 2.5 * size
    assert [m.is_loaded for m in models] == [False, False, True, True]
    gc.collect()
    assert [r() is None for r in refs] == [True, True, False, False]
    for model in models:
        model.unload()


@pytest.mark.slow
def test_a_model_larger_than_the_byte_limit_is_refused(tmp_path, pool_limits):
    pool_limits(max_bytes=1000)
    encoder = _tiny(tmp_path)
    with pytest.raises(ConfigError, match="more than the 0 MB allowed.*AUGCLIP_MAX_MODEL_MEMORY_MB"):
        encoder.load()
    assert not encoder.is_loaded


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_a_model_in_use_is_not_evicted(tmp_path, pool_limits):
    pool_limits(max_models=1)
    busy, other, third = (_tiny(tmp_path) for _ in range(3))
    started, finish = threading.Event(), threading.Event()

    def request() -> None:  # a running request holds the model across several calls
        with busy.in_use():
            busy.encode_texts(["first"])
            started.set()
            finish.wait(60)
            busy.encode_texts(["second"])

    thread = threading.Thread(target=request)
    thread.start()
    assert started.wait(60)
    other.encode_texts(["x"])
    third.encode_texts(["y"])
    module = busy._model
    assert busy.is_loaded  # pinned: the pool went over its limit rather than evict it
    assert not other.is_loaded  # unpinned and least recently used
    finish.set()
    thread.join(60)
    assert busy._model is module  # never reloaded in between
    # released: the pool is back within its limit of one model
    assert sum(1 for m in POOL.loaded_models() if m in (busy, other, third)) == 1
    for model in (busy, other, third):
        model.unload()


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_concurrent_loads_and_evictions_are_safe(tmp_path, pool_limits):
    pool_limits(max_models=2)
    models = [_tiny(tmp_path) for _ in range(4)]
    texts = [f"text {i}" for i in range(6)]
    expected = _tiny(tmp_path).encode_texts(texts)
    errors, results = [], []

    def worker(k: int) -> None:
        try:
            for step in range(6):
                model = models[(k + step) % len(models)]
                model.text_cache.clear()  # encode for real every time
                results.append(model.encode_texts(texts))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert len(results) == 24
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-6)
    assert sum(1 for m in POOL.loaded_models() if m in models) <= 2
    assert POOL.stats()["pinned"] == 0
    for model in models:
        model.unload()


def test_limits_come_from_the_settings(tmp_path, pool_limits):
    env = {"AUGCLIP_MAX_LOADED_MODELS": "3", "AUGCLIP_MAX_MODEL_MEMORY_MB": "700", "AUGCLIP_DEVICE": "cpu",
           "AUGCLIP_CACHE_DIR": str(tmp_path)}
    settings = Settings.from_env(env)
    assert (settings.max_loaded_models, settings.max_model_memory_mb) == (3, 700)
    get_encoder(settings, clip_model=TINY)
    assert (POOL.max_models, POOL.max_bytes) == (3, 700 * 2**20)
    with pytest.raises(ConfigError, match="max_loaded_models must be a positive integer"):
        Settings.from_env({"AUGCLIP_MAX_LOADED_MODELS": "0"})
    with pytest.raises(ConfigError, match="AUGCLIP_MAX_MODEL_MEMORY_MB must be an integer"):
        Settings.from_env({"AUGCLIP_MAX_MODEL_MEMORY_MB": "lots"})
