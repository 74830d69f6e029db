"""Every documented real-weights path, end to end, through the local hub, then offline from the filled cache.

No ``random:`` spec anywhere: CLIP is an ``hf-hub:`` open_clip repository, GroundingDINO the default
hub id (``IDEA-Research/grounding-dino-tiny``, here in its published layout with a tiny config), SAM
the checkpoint at a URL (``AUGCLIP_SAM_URL``, checked with ``AUGCLIP_SAM_SHA256``). SAM's only small
architecture is the ``tiny`` test one, which is untrained by definition, so BPM's SAM part says so;
the full-size SAM layout is loaded in :func:`test_full_size_sam_from_the_url`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from augclip_demo.inference.weights.fetch import sha256_of
from tests.support import ROOT, draw_scene, free_port, published
from tests.support.app_process import AppProcess, spawn_app
from tests.support.hub_fixtures import subprocess_env

pytestmark = pytest.mark.slow

HF_CLIP = f"hf-hub:{published.HF_HUB_CLIP_REPO}"
NOISE = ("Loading weights", "it/s]", "Retrying in", "initialized randomly")


@pytest.fixture(scope="module")
def world(hub, hub_gdino, tmp_path_factory):
    root = tmp_path_factory.mktemp("real-weights")
    images = {}
    for name, shapes in {"source": [("ellipse", (20, 20, 70, 70), "red")],
                         "edit1": [("ellipse", (20, 20, 70, 70), "blue")],
                         "edit2": [("rectangle", (10, 10, 40, 40), "red")]}.items():
        images[name] = root / f"{name}.png"
        draw_scene(shapes=shapes).save(images[name])
    attrs = root / "attrs.json"
    attrs.write_text(json.dumps({"source_attributes": ["a red ball", "a white background"],
                                 "target_attributes": ["a blue ball", "a white background"]}))
    sam_url = f"{hub.url}/files/{published.SAM_FILE}"
    env = subprocess_env(hub, root, AUGCLIP_CLIP_MODEL=HF_CLIP, AUGCLIP_SAM_MODEL="tiny", AUGCLIP_SAM_URL=sam_url,
                         AUGCLIP_SAM_SHA256=sha256_of(hub.published["sam_path"]))
    return {"root": root, "images": images, "attrs": attrs, "env": env}


def cli(world, *args: str, offline: bool = False) -> subprocess.CompletedProcess:
    env = {**world["env"], "HF_HUB_OFFLINE": "1" if offline else "0"}
    proc = subprocess.run([sys.executable, "-m", "augclip_demo", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for noise in NOISE:
        assert noise not in proc.stderr, (noise, proc.stderr[-2000:])
    return proc


def score_args(world) -> list[str]:
    im = world["images"]
    return ["score", "--source", str(im["source"]), "--edited", str(im["edit1"]), str(im["edit2"]), "--target",
            "a blue ball", "--source-text", "a red ball", "--attributes", str(world["attrs"]), "--instruction",
            "make the ball blue", "--json"]


def test_cli_score_explain_bpm_and_batch_online_then_offline(world, hub):
    before = hub.count()
    online = json.loads(cli(world, *score_args(world)).stdout)
    assert hub.count() > before  # the weights came from the hub
    assert online["untrained"] is False and online["model"]["spec"] == HF_CLIP
    assert "warning" not in online or "untrained" not in str(online.get("warning"))
    bpm = online["edits"][0]["bpm"]
    assert isinstance(online["edits"][0]["metrics"]["bpm"], float)
    models = json.dumps(bpm)
    assert "IDEA-Research/grounding-dino-tiny" in models

    im = world["images"]
    out = world["root"] / "explain"
    cli(world, "explain", "--source", str(im["source"]), "--edited", str(im["edit1"]), "--target", "a blue ball",
        "--attributes", str(world["attrs"]), "--out", str(out), "--no-umap")
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else None
    assert any(out.glob("*.png"))
    if report is not None:
        assert report["untrained"] is False

    bpm_out = json.loads(cli(world, "bpm", "--source", str(im["source"]), "--edited", str(im["edit1"]),
                             "--instruction", "make the ball blue", "--json").stdout)
    assert "IDEA-Research/grounding-dino-tiny" in json.dumps(bpm_out) and HF_CLIP in json.dumps(bpm_out)

    manifest = world["root"] / "manifest.jsonl"
    manifest.write_text(json.dumps({"id": "one", "source": "source.png", "target_text": "a blue ball",
                                    "edits": ["edit1.png", "edit2.png"],
                                    "attributes": {"source": ["a red ball"], "target": ["a blue ball"]}}) + "\n")
    summary = json.loads(cli(world, "batch", str(manifest), "--out", str(world["root"] / "r.jsonl"), "--json",
                             "--no-progress").stdout)
    assert summary["untrained"] is False and summary["n_ok"] == 1

    # Offline, from the filled cache: not one request, the same numbers.
    before = hub.count()
    offline = json.loads(cli(world, *score_args(world), offline=True).stdout)
    assert hub.count() == before
    assert [e["metrics"] for e in offline["edits"]] == [e["metrics"] for e in online["edits"]]
    cli(world, "bpm", "--source", str(im["source"]), "--edited", str(im["edit1"]), "--instruction",
        "make the ball blue", "--json", offline=True)
    assert hub.count() == before


def test_refused_weights_fail_the_cli_with_one_clear_line(world, hub, tmp_path):
    hub.refuse(published.HF_HUB_CLIP_REPO, "open_clip_model.safetensors", 403)
    try:
        env = {**world["env"], "AUGCLIP_CACHE_DIR": str(tmp_path / "empty"), "HF_HUB_CACHE": str(tmp_path / "hf")}
        im = world["images"]
        proc = subprocess.run([sys.executable, "-m", "augclip_demo", "score", "--source", str(im["source"]),
                               "--edited", str(im["edit1"]), "--target", "a blue ball", "--attributes",
                               str(world["attrs"])], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    finally:
        hub.clear_faults()
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "open_clip_model.safetensors" in lines[0] and "HTTP 403" in lines[0], proc.stderr


def _start_app(world, offline: bool) -> AppProcess:
    port = free_port()
    log_path = world["root"] / f"app-{'offline' if offline else 'online'}.log"
    env = {**world["env"], "HF_HUB_OFFLINE": "1" if offline else "0", "GRADIO_SERVER_NAME": "127.0.0.1",
           "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    return spawn_app(env, log_path, port)


@pytest.mark.parametrize("offline", [False, True], ids=["online", "offline"])
def test_the_app_evaluates_with_hub_weights(world, hub, offline):
    from gradio_client import Client, handle_file

    if offline:  # the online run (or the CLI test) filled the cache
        cli(world, "score", "--source", str(world["images"]["source"]), "--edited", str(world["images"]["edit1"]),
            "--target", "a blue ball", "--attributes", str(world["attrs"]))
    before = hub.count()
    app = _start_app(world, offline)
    try:
        client = Client(app.url, verbose=False)
        im = world["images"]
        result = client.predict(handle_file(str(im["source"])), [handle_file(str(im["edit1"]))], "a blue ball",
                                "a red ball", "make the ball blue", "manual", "a red ball\na white background",
                                "a blue ball\na white background", "svm", 1.0, True, True, HF_CLIP,
                                api_name="/evaluate")
        verdict, report = result[0], result[5]
        assert report["untrained"] is False and report["model"]["spec"] == HF_CLIP
        assert "untrained" not in verdict.lower()
    finally:
        app.stop()
    if offline:
        assert hub.count() == before, app.log.read_text()[-2000:]


def test_full_size_sam_from_the_url(hub, online, tmp_path):
    """The one full-size layout per family that the tests build: SAM ViT-B under its official file name."""
    import torch
    from segment_anything import sam_model_registry

    from augclip_demo.inference.segmenter import SamSegmenter

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(published.PUBLISHED_SEED)
        state = sam_model_registry["vit_b"](checkpoint=None).state_dict()
    path = tmp_path / "sam_vit_b_01ec64.pth"
    torch.save(state, path)
    url = hub.add_file("full/sam_vit_b_01ec64.pth", path)
    segmenter = SamSegmenter("vit_b", url=url, sha256=sha256_of(path), device="cpu", cache_dir=online).load()
    assert not segmenter.untrained and "untrained" not in segmenter.label
    loaded = segmenter._model.state_dict()
    for name in ("image_encoder.patch_embed.proj.weight", "mask_decoder.iou_prediction_head.layers.0.weight"):
        torch.testing.assert_close(loaded[name], state[name], rtol=0, atol=0)


REFERENCE = """
import sys, numpy as np, open_clip, torch
from PIL import Image
# OpenAI's weights were trained with QuickGELU; open_clip only warns unless told (as our loader tells it).
model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-16", pretrained="openai", cache_dir=sys.argv[1],
                                                             force_quick_gelu=True)
tokenizer = open_clip.get_tokenizer("ViT-B-16")
with torch.inference_mode():
    image = model.encode_image(preprocess(Image.open(sys.argv[2]).convert("RGB"))[None])
    text = model.encode_text(tokenizer(["a blue ball"]))
rows = torch.cat([image, text]).float()
np.save(sys.argv[3], (rows / rows.norm(dim=-1, keepdim=True)).numpy())
"""


def test_full_size_openai_tag_equals_open_clips_own_loading_and_the_checkpoint_route(world, hub, online, tmp_path):
    """ViT-B-16/openai in its published layout (open_clip_model.safetensors in timm/vit_base_patch16_clip_224.openai):
    our resolver, the README's tag + --clip-checkpoint route and open_clip's own tag download give the same numbers."""
    import numpy as np
    import open_clip
    import torch

    from augclip_demo.inference import ClipEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(published.PUBLISHED_SEED)
        state = open_clip.create_model("ViT-B-16", force_quick_gelu=True).state_dict()
    weights_file = published.save_safetensors(state, tmp_path / "open_clip_model.safetensors")
    del state
    hub.add_repo(published.OPENAI_B16_REPO, {"open_clip_model.safetensors": weights_file,
                                             "open_clip_config.json": "{}"})
    image = world["images"]["source"]
    env = {**subprocess_env(hub, tmp_path / "reference")}
    out = tmp_path / "reference.npy"
    subprocess.run([sys.executable, "-c", REFERENCE, str(tmp_path / "oc-cache"), str(image), str(out)], env=env,
                   check=True, timeout=600, capture_output=True)
    expected = np.load(out)
    for encoder in (ClipEncoder("ViT-B-16/openai", device="cpu", cache_dir=online),
                    ClipEncoder("ViT-B-16/openai", checkpoint=weights_file, device="cpu")):
        assert not encoder.untrained
        got = np.concatenate([encoder.encode_images([image]), encoder.encode_texts(["a blue ball"])])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        encoder.unload()
