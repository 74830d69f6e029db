"""Relevancy maps (Chefer et al. 2021) on real open_clip ViTs with tiny random weights, and the overlay geometry."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from augclip_demo.errors import ExplanationUnavailableError, InputError
from augclip_demo.explain.geometry import model_view, place_on_image, upsample_grid
from augclip_demo.explain.relevancy import (
    augclip_relevancy,
    clip_dir_relevancy,
    clip_t_relevancy,
    modification_relevancy,
    relevancy,
    relevancy_batch,
    supports_relevancy,
)
from augclip_demo.inference import ClipEncoder
from augclip_demo.metrics.augclip import augclip_score
from tests.support import TINY, draw_scene

TEXT_CFG = {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}
VIT = {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8}
#: Tiny configs exercising every VisionTransformer option open_clip's ViT archs use.
VARIANTS = {
    "augclip-test-avgpool": dict(VIT, no_ln_pre=True, pool_type="avg", final_ln_after_pool=True),  # CLIPA
    "augclip-test-attnpool": dict(VIT, attentional_pool=True, attn_pooler_heads=2, attn_pooler_queries=4),  # CoCa
    "augclip-test-custom": dict(VIT, qk_norm=True, scale_heads=True, scale_attn_inner=True, scale_attn=True,
                                scale_fc=True, ls_init_value=0.1),  # CustomResidualAttentionBlock + LayerScale
    "augclip-test-rect": dict(VIT, image_size=[32, 48], patch_dropout=0.5),  # non-square grid, patch dropout
}
#: timm trunks behind open_clip's TimmModel (as in EVA, MobileCLIP-B, SigLIP, PE-Core), tiny versions.
TIMM_VARIANTS = {
    "augclip-test-timm-token": dict(timm_model_name="test_vit", image_size=160),  # timm Attention, class token
    "augclip-test-timm-map": dict(timm_model_name="test_vit3", image_size=160),  # latent attention pool ("map")
    "augclip-test-timm-eva": dict(timm_model_name="eva02_tiny_patch14_224", image_size=224),  # rope, avg pool
}


@pytest.fixture(scope="session")
def variant_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    import open_clip

    folder = tmp_path_factory.mktemp("model-configs")
    for name, vision in VARIANTS.items():
        (folder / f"{name}.json").write_text(json.dumps({"embed_dim": 16, "vision_cfg": vision, "text_cfg": TEXT_CFG}))
    for name, vision in TIMM_VARIANTS.items():
        vision = dict(vision, timm_model_pretrained=False, timm_pool="", timm_proj="linear")
        (folder / f"{name}.json").write_text(json.dumps({"embed_dim": 16, "vision_cfg": vision, "text_cfg": TEXT_CFG}))
    (folder / "augclip-test-resnet.json").write_text(json.dumps(
        {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": [1, 1, 1, 1], "width": 8}, "text_cfg": TEXT_CFG}))
    open_clip.add_model_config(folder)
    return {name: f"random:{name}" for name in [*VARIANTS, *TIMM_VARIANTS, "augclip-test-resnet"]}


@pytest.fixture()
def scene() -> Image.Image:
    return draw_scene((90, 70), "white", [("ellipse", (10, 10, 45, 45), "red"), ("rectangle", (50, 30, 85, 65), "blue")])


def _target(encoder: ClipEncoder, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=encoder.embed_dim).astype(np.float32)


def _model_state(encoder: ClipEncoder) -> dict:
    model = encoder.model
    return {
        "params": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "training": [m.training for m in model.modules()],
        "own_forward": [n for n, m in model.named_modules() if "forward" in m.__dict__],
        "hooks": [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks)) for m in model.modules()],
        "checkpointing": [getattr(m, "grad_checkpointing", None) for m in model.modules()],
        "fused_attn": [getattr(m, "fused_attn", None) for m in model.modules()],
    }


def _assert_same_state(before: dict, after: dict) -> None:
    assert before["params"].keys() == after["params"].keys()
    for key, value in before["params"].items():
        assert torch.equal(value, after["params"][key]), key
    for key in ("requires_grad", "training", "own_forward", "hooks", "checkpointing", "fused_attn"):
        assert before[key] == after[key], key


def test_map_shapes_ranges_and_gradient_check(tiny_encoder, scene):
    rel = relevancy(tiny_encoder, scene, _target(tiny_encoder))
    assert rel.grid_size == (4, 4)  # 64 px / patch 16, from the model
    # Gradient check: the CLS-row relevance is finite, non-negative after the clamp, and not constant.
    assert np.all(np.isfinite(rel.raw)) and np.all(rel.raw >= 0)
    assert not rel.constant and float(np.ptp(rel.raw)) > 0
    view = rel.view_map()
    assert view.shape == (64, 64) and view.min() == 0.0 and view.max() == pytest.approx(1.0)
    image_map = rel.image_map()
    assert image_map.shape == (70, 90)  # same size as the input (height, width)
    seen = ~np.isnan(image_map)
    assert seen[:, 10:80].all() and not seen[:, :9].any() and not seen[:, 81:].any()  # centre crop 70x70 at x=10
    assert np.nanmin(image_map) >= 0.0 and np.nanmax(image_map) <= 1.0
    assert rel.view.box == pytest.approx((10.0, 0.0, 80.0, 70.0), abs=0.25)  # torchvision rounds the resize


@pytest.mark.parametrize("row, col", [(0, 0), (0, 3), (3, 0), (3, 3), (1, 2), (2, 1)])
def test_map_peaks_at_the_patch_that_changed(tiny_encoder, row, col):
    """A red patch on white: for t = E(I) - E(blank), the direction the patch adds, the patch is most relevant."""
    blank = draw_scene((64, 64), "white")
    image = draw_scene((64, 64), "white", [("rectangle", (col * 16, row * 16, col * 16 + 15, row * 16 + 15), "red")])
    with_patch, without = tiny_encoder.encode_images([image, blank])
    rel = relevancy(tiny_encoder, image, with_patch - without)
    assert np.unravel_index(np.argmax(rel.raw), rel.raw.shape) == (row, col)
    peak = np.unravel_index(np.nanargmax(rel.image_map()), (64, 64))
    assert row * 16 - 8 <= peak[0] < row * 16 + 24 and col * 16 - 8 <= peak[1] < col * 16 + 24


def test_matches_an_independent_reimplementation(tiny_encoder, scene):
    """Rewrite the tiny ViT forward with explicit attention, take the gradients, propagate, compare."""
    target = _target(tiny_encoder, 1)
    rel = relevancy(tiny_encoder, scene, target)
    model = tiny_encoder.model
    visual = model.visual
    pixels = tiny_encoder.preprocess(scene)[None].clone().requires_grad_(True)
    with torch.enable_grad():
        x = visual.conv1(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([visual.class_embedding.expand(1, 1, -1), x], dim=1) + visual.positional_embedding
        x = visual.ln_pre(x)
        attentions = []
        for block in visual.transformer.resblocks:
            mha = block.attn
            q, k, v = F.linear(block.ln_1(x), mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
            n, length, width = q.shape
            heads = mha.num_heads
            q, k, v = (t.reshape(n, length, heads, width // heads).transpose(1, 2) for t in (q, k, v))
            attention = (q @ k.transpose(-1, -2) / math.sqrt(width // heads)).softmax(dim=-1)
            attentions.append(attention)
            x = x + mha.out_proj((attention @ v).transpose(1, 2).reshape(n, length, width))
            x = x + block.mlp(block.ln_2(x))
        embedding = visual.ln_post(x[:, 0]) @ visual.proj
        score = F.cosine_similarity(embedding, torch.as_tensor(target)[None])
        grads = torch.autograd.grad(score.sum(), attentions)
    relevance = torch.eye(length)[None]
    for attention, grad in zip(attentions, grads):
        relevance = relevance + (grad * attention).clamp(min=0).mean(dim=1) @ relevance
    expected = relevance[0, 0, 1:].reshape(4, 4).detach().numpy()
    np.testing.assert_allclose(rel.raw, expected, rtol=1e-4, atol=1e-9)
    assert rel.score == pytest.approx(float(score.detach()), abs=1e-6)
    np.testing.assert_allclose(rel.embedding, F.normalize(embedding, dim=-1)[0].detach().numpy(), atol=1e-5)


@pytest.mark.slow
def test_embeddings_agree_with_the_normal_forward_for_every_vit_variant(variant_specs, tiny_encoder, scene):
    grids = {"augclip-test-rect": (4, 6), "augclip-test-timm-token": (10, 10), "augclip-test-timm-map": (10, 10),
             "augclip-test-timm-eva": (16, 16)}
    readouts = {"augclip-test-avgpool": "mean", "augclip-test-attnpool": "pooler", "augclip-test-timm-map": "pooler",
                "augclip-test-timm-eva": "mean", "augclip-test-timm-token": "class token"}
    for name in ["tiny", *VARIANTS, *TIMM_VARIANTS]:
        encoder = tiny_encoder if name == "tiny" else ClipEncoder(variant_specs[name], device="cpu")
        spec = encoder.spec.raw
        normal = encoder.encode_images([scene])[0]
        target = _target(encoder)
        state = _model_state(encoder)
        rel = relevancy(encoder, scene, target)
        _assert_same_state(state, _model_state(encoder))
        np.testing.assert_allclose(rel.embedding, normal, atol=1e-5, err_msg=spec)
        assert rel.grid_size == grids.get(name, (4, 4)), spec  # the patch grid comes from the model
        assert readouts.get(name, "class token") in rel.readout, spec
        assert np.all(np.isfinite(rel.raw)) and np.all(rel.raw >= 0) and not rel.constant, spec
        assert rel.score == pytest.approx(float(np.dot(normal, target / np.linalg.norm(target))), abs=1e-5)
        assert rel.image_map().shape == (70, 90)


@pytest.mark.slow  # builds a timm trunk per case (~4 s each)
@pytest.mark.parametrize("trunk_options, prefix, readout", [
    (dict(class_token=False, reg_tokens=0, global_pool="map"), 0, "pooler"),  # SigLIP-style: no class token
    (dict(class_token=True, reg_tokens=2, global_pool="map", pool_include_prefix=False), 3, "pooler"),
    (dict(class_token=True, reg_tokens=2, global_pool="token"), 3, "class token"),  # register tokens
    # (init_values=1: LayerScale at 1, its 1e-5 default makes the map of a random average-pooled trunk constant)
    (dict(class_token=True, reg_tokens=0, global_pool="avg", pool_include_prefix=True, init_values=1.0), 1,
     "all tokens"),
])
def test_timm_trunk_options(variant_specs, scene, trunk_options, prefix, readout):
    """timm ViT options open_clip's timm towers use, on a real timm trunk with tiny random weights."""
    import timm

    encoder = ClipEncoder(variant_specs["augclip-test-timm-map"], device="cpu").load()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        trunk = timm.create_model("test_vit3", num_classes=0, **trunk_options).eval()
    for param in trunk.parameters():
        param.requires_grad_(False)
    encoder.model.visual.trunk = trunk
    assert trunk.num_prefix_tokens == prefix
    rel = relevancy(encoder, scene, _target(encoder))
    np.testing.assert_allclose(rel.embedding, encoder.encode_images([scene])[0], atol=1e-5)
    assert rel.grid_size == (10, 10) and readout in rel.readout and not rel.constant


def test_model_is_left_exactly_as_it_was(tiny_encoder, scene):
    encoder = ClipEncoder(tiny_encoder.spec, device="cpu").load()
    visual = encoder.model.visual
    visual.train()  # a caller's training mode and checkpointing must survive a relevancy pass
    visual.transformer.grad_checkpointing = True
    before = _model_state(encoder)
    relevancy(encoder, scene, _target(encoder))
    _assert_same_state(before, _model_state(encoder))
    assert encoder.inference_lock.acquire(blocking=False)
    encoder.inference_lock.release()


def test_model_is_restored_when_the_pass_raises(tiny_encoder, scene):
    encoder = ClipEncoder(tiny_encoder.spec, device="cpu").load()
    before = _model_state(encoder)

    def fail(*_args):
        raise RuntimeError("boom inside the forward pass")

    handle = encoder.model.visual.transformer.resblocks[-1].register_forward_hook(fail)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            relevancy(encoder, scene, _target(encoder))
    finally:
        handle.remove()
    _assert_same_state(before, _model_state(encoder))
    assert encoder.inference_lock.acquire(blocking=False)
    encoder.inference_lock.release()
    np.testing.assert_allclose(relevancy(encoder, scene, _target(encoder)).embedding,
                               encoder.encode_images([scene])[0], atol=1e-5)


def test_batching_is_exact_and_works_inside_inference_mode(tiny_encoder, scene):
    other = draw_scene((64, 64), "black", [("rectangle", (8, 8, 40, 40), "yellow")])
    targets = np.stack([_target(tiny_encoder, 2), _target(tiny_encoder, 3)])
    with torch.inference_mode():  # e.g. called from code that is encoding
        together = relevancy_batch(tiny_encoder, [scene, other], targets)
    alone = [relevancy(tiny_encoder, img, t) for img, t in zip([scene, other], targets)]
    for a, b in zip(together, alone):
        np.testing.assert_allclose(a.raw, b.raw, rtol=1e-5, atol=1e-10)
    # The map depends on the objective: another target vector gives another map.
    assert not np.allclose(together[0].normalized_grid(), relevancy(tiny_encoder, scene, targets[1]).normalized_grid())


def test_several_targets_per_image_share_one_forward_pass(tiny_encoder, scene):
    """Images with 3, 1 and 2 targets: each map equals the map computed alone; each image is encoded once."""
    other = draw_scene((64, 64), "black", [("rectangle", (8, 8, 40, 40), "yellow")])
    third = draw_scene((64, 64), "navy", [("ellipse", (20, 4, 60, 30), "white")])
    images = [scene, other, scene, third, scene, third]
    targets = np.stack([_target(tiny_encoder, 10 + i) for i in range(len(images))])
    rows_forwarded: list[int] = []
    hook = tiny_encoder.model.visual.register_forward_hook(lambda module, args, out: rows_forwarded.append(len(out)))
    try:
        together = relevancy_batch(tiny_encoder, images, targets)
    finally:
        hook.remove()
    assert sum(rows_forwarded) == 3  # one image row per distinct image, not one per map
    for image, target, got in zip(images, targets, together):
        alone = relevancy(tiny_encoder, image, target)
        np.testing.assert_allclose(got.raw, alone.raw, rtol=1e-5, atol=1e-10)
        assert got.score == pytest.approx(alone.score, abs=1e-6)
        np.testing.assert_allclose(got.embedding, alone.embedding, atol=1e-6)
    assert not np.allclose(together[0].raw, together[2].raw)  # same image, other target: another map


@pytest.mark.slow
def test_computed_maps_are_reused_bit_for_bit(scene):
    """A second request for a (image, target) pair runs no pass and returns what a fresh encoder computes."""

    encoder = ClipEncoder(TINY, device="cpu")
    other = draw_scene((64, 64), "black", [("rectangle", (8, 8, 40, 40), "yellow")])
    targets = np.stack([_target(encoder, 20), _target(encoder, 21), _target(encoder, 22)])
    first = relevancy_batch(encoder, [scene, scene, other], targets)
    rows_forwarded: list[int] = []
    hook = encoder.model.visual.register_forward_hook(lambda module, args, out: rows_forwarded.append(len(out)))
    try:
        again = relevancy_batch(encoder, [other, scene], targets[[2, 1]], start_layer=0)
        assert rows_forwarded == []
        relevancy_batch(encoder, [other], targets[[2]], start_layer=-1)  # another start layer: computed
        assert rows_forwarded == [1]
    finally:
        hook.remove()
    fresh = ClipEncoder(TINY, device="cpu")
    for got, expected in zip(again, relevancy_batch(fresh, [other, scene], targets[[2, 1]])):
        np.testing.assert_array_equal(got.raw, expected.raw)
        np.testing.assert_array_equal(got.embedding, expected.embedding)
        assert got.score == expected.score
    np.testing.assert_array_equal(again[1].raw, first[1].raw)


def test_objectives_reproduce_the_metric_values(tiny_encoder, scene):
    edit = draw_scene((90, 70), "white", [("ellipse", (10, 10, 45, 45), "red"), ("rectangle", (0, 50, 90, 70), "green")])
    src_emb, edit_emb = tiny_encoder.encode_images([scene, edit])
    texts = tiny_encoder.encode_texts(["a red ball", "a red ball on grass", "a ball", "white", "grass", "lawn"])
    result = augclip_score(src_emb, edit_emb, texts[2:4], texts[4:6])
    aug = augclip_relevancy(tiny_encoder, edit, result)
    assert aug.score == pytest.approx(result.score, abs=1e-5)  # the map explains exactly the AugCLIP score
    v = (texts[1] - src_emb).astype(np.float64)  # a modification vector (this fit's own v is zero: the error below)
    along = modification_relevancy(tiny_encoder, edit, v)
    assert along.score == pytest.approx(float(np.dot(edit_emb, v) / np.linalg.norm(v)), abs=1e-5)
    with pytest.raises(InputError, match="zero"):
        modification_relevancy(tiny_encoder, edit, result)
    clip_t = clip_t_relevancy(tiny_encoder, edit, texts[1])
    assert clip_t.score == pytest.approx(float(np.dot(edit_emb, texts[1])), abs=1e-5)
    clip_dir = clip_dir_relevancy(tiny_encoder, scene, edit, texts[0], texts[1])
    direction = texts[1] - texts[0]
    image_dir = edit_emb - src_emb
    expected = float(np.dot(image_dir, direction) / np.linalg.norm(image_dir) / np.linalg.norm(direction))
    assert clip_dir.clip_dir == pytest.approx(expected, abs=1e-4)
    diff = clip_dir.image_difference()
    assert diff.shape == (70, 90) and np.nanmin(diff) >= -1 and np.nanmax(diff) <= 1
    # Default (App. D.5): the raw relevance subtracted, one scale factor for display. Written out here
    # from the two component grids: bilinear upsampling is linear, so it commutes with the subtraction.
    assert clip_dir.difference_mode == "raw"
    raw_grid = clip_dir.edit.raw - clip_dir.source.raw
    np.testing.assert_allclose(clip_dir.grid_difference(), raw_grid / np.abs(raw_grid).max(), atol=1e-6)  # float32 maps
    assert np.nanmax(np.abs(clip_dir.view_difference())) == pytest.approx(1.0)
    up = upsample_grid(clip_dir.edit.raw, clip_dir.edit.model_input_size) - upsample_grid(
        clip_dir.source.raw, clip_dir.edit.model_input_size)
    np.testing.assert_allclose(clip_dir.view_difference(), up / np.abs(up).max(), atol=1e-6)
    normalized = clip_dir_relevancy(tiny_encoder, scene, edit, texts[0], texts[1], difference="normalized")
    np.testing.assert_allclose(normalized.view_difference(), normalized.edit.view_map() - normalized.source.view_map())
    src_min_max = (normalized.source.raw - normalized.source.raw.min()) / np.ptp(normalized.source.raw)
    edit_min_max = (normalized.edit.raw - normalized.edit.raw.min()) / np.ptp(normalized.edit.raw)
    np.testing.assert_allclose(normalized.grid_difference(), edit_min_max - src_min_max, atol=1e-6)
    assert not np.allclose(normalized.grid_difference(), clip_dir.grid_difference(), atol=1e-3)
    with pytest.raises(InputError, match="same embedding"):
        clip_dir_relevancy(tiny_encoder, scene, edit, texts[0], texts[0])


def test_start_layer_and_bad_inputs(tiny_encoder, scene):
    last = relevancy(tiny_encoder, scene, _target(tiny_encoder), start_layer=-1)
    assert last.start_layer == 1 and last.num_layers == 2
    assert not np.allclose(last.raw, relevancy(tiny_encoder, scene, _target(tiny_encoder)).raw)
    with pytest.raises(InputError, match="start_layer"):
        relevancy(tiny_encoder, scene, _target(tiny_encoder), start_layer=2)
    with pytest.raises(InputError, match="dimension"):
        relevancy(tiny_encoder, scene, np.ones(3))
    with pytest.raises(InputError, match="zero"):
        relevancy(tiny_encoder, scene, np.zeros(tiny_encoder.embed_dim))


def test_a_cnn_tower_gets_a_clear_reason(variant_specs, scene):
    encoder = ClipEncoder(variant_specs["augclip-test-resnet"], device="cpu")
    reason = supports_relevancy(encoder)
    assert reason and "ModifiedResNet" in reason and "no attention maps" in reason
    with pytest.raises(ExplanationUnavailableError, match="VisionTransformer"):
        relevancy(encoder, scene, _target(encoder))


@pytest.mark.parametrize("mode", ["shortest", "longest", "squash"])
@pytest.mark.parametrize("size", [(120, 80), (70, 110)])
def test_model_view_follows_the_real_preprocessing(mode, size):
    """Find a marker in the real preprocessed tensor and map it back through the computed view box."""
    from open_clip.transform import image_transform

    preprocess = image_transform(32, is_train=False, resize_mode=mode)
    width, height = size
    image = Image.new("RGB", size, "white")
    box = (int(width * 0.45), int(height * 0.45), int(width * 0.45) + 12, int(height * 0.45) + 12)
    image.paste((255, 0, 0), box)
    tensor = preprocess(image)
    redness = (tensor[0] - tensor[1]).numpy()  # normalised red minus green: high only on the marker
    ys, xs = np.nonzero(redness > redness.max() / 2)
    view = model_view(preprocess, size)
    assert view.exact
    left, top, right, bottom = view.box
    found_x = left + (xs.mean() + 0.5) * (right - left) / 32
    found_y = top + (ys.mean() + 0.5) * (bottom - top) / 32
    assert found_x == pytest.approx((box[0] + box[2]) / 2, abs=2.0)
    assert found_y == pytest.approx((box[1] + box[3]) / 2, abs=2.0)
    placed = place_on_image(np.ones((4, 4)), view)
    assert placed.shape == (height, width)
    assert np.isnan(placed).any() == (mode == "shortest")  # only the centre crop leaves parts unseen
