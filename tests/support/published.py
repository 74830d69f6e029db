"""Random weights written in the published file layouts, for :class:`tests.support.hub_server.HubServer`.

Each builder seeds its own generator (``PUBLISHED_SEED``, not the ``random:`` seed), so a test can
check that the model it loaded holds exactly the published tensors and not a fresh initialisation.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.support.hub_server import HubServer

PUBLISHED_SEED = 1234
TINY_CLIP_CONFIG = Path(__file__).resolve().parents[2] / "augclip_demo" / "inference" / "model_configs" / \
    "augclip-tiny-vit.json"
#: open_clip's repository for ViT-B-16/openai (its pretrained table: hf_hub "timm/vit_base_patch16_clip_224.openai/").
OPENAI_B16_REPO = "timm/vit_base_patch16_clip_224.openai"
HF_HUB_CLIP_REPO = "test-org/tiny-clip"
GDINO_REPO = "IDEA-Research/grounding-dino-tiny"
SAM2_REPO = "facebook/sam2.1-hiera-tiny"
OWL_REPO = "google/owlvit-base-patch32"  # the tests serve a tiny OWL-ViT under the fast preset's default name
SAM_FILE = "sam_vit_b_01ec64.pth"  # the official file name; the tests serve a tiny SAM under it


def _seeded(build):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(PUBLISHED_SEED)
        return build()


def _redraw(model: torch.nn.Module) -> None:
    """Move every parameter by seeded noise: "published" tensors differ from those of the ``random:`` build."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(PUBLISHED_SEED)
        with torch.no_grad():
            for param in model.parameters():
                param.add_(torch.randn_like(param) * 0.02)


def tiny_clip_state() -> dict[str, torch.Tensor]:
    """State dict of the tiny registered ViT, seeded with :data:`PUBLISHED_SEED`."""
    import open_clip

    from augclip_demo.inference.specs import TINY_ARCH, register_model_configs

    register_model_configs()
    model = _seeded(lambda: open_clip.create_model(TINY_ARCH))
    return {k: v.contiguous() for k, v in model.state_dict().items()}


def save_safetensors(state: dict[str, torch.Tensor], path: Path) -> Path:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    return path


def write_hf_hub_clip(folder: Path) -> Path:
    """An ``hf-hub:`` open_clip repository: ``open_clip_config.json`` + ``open_clip_model.safetensors``."""
    folder.mkdir(parents=True, exist_ok=True)
    model_cfg = json.loads(TINY_CLIP_CONFIG.read_text())
    config = {"model_cfg": model_cfg,
              "preprocess_cfg": {"mean": [0.48145466, 0.4578275, 0.40821073], "std": [0.26862954, 0.26130258, 0.27577711],
                                 "interpolation": "bicubic", "resize_mode": "shortest"}}
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2))
    save_safetensors(tiny_clip_state(), folder / "open_clip_model.safetensors")
    return folder


def write_hf_hub_clip_weights_only(folder: Path) -> Path:
    """The tiny CLIP's published safetensors alone, in ``folder`` (for loader-level tests)."""
    return save_safetensors(tiny_clip_state(), folder / "open_clip_model.safetensors")


def write_gdino(folder: Path) -> Path:
    """GroundingDINO in transformers' layout (config, model.safetensors, preprocessor, tokenizer files), tiny config."""
    from augclip_demo.inference.grounding import build_random_grounding

    model, processor = _seeded(lambda: build_random_grounding("tiny", folder))
    _redraw(model)  # build_random_grounding seeds itself with the random: seed; ours must differ
    model.save_pretrained(str(folder))
    # The hub repositories keep the image processor in preprocessor_config.json and the tokenizer beside it.
    processor.image_processor.save_pretrained(str(folder))
    processor.tokenizer.save_pretrained(str(folder))
    return folder


def write_owlvit(folder: Path) -> Path:
    """OWL-ViT as its hub repositories hold it: config.json, model.safetensors, preprocessor_config.json and the
    CLIP tokenizer files (tokenizer_config.json, vocab.json, merges.txt, special_tokens_map.json; no
    tokenizer.json), tiny config, every tensor re-drawn with :data:`PUBLISHED_SEED`; no marker file."""
    from augclip_demo.inference.owl_detector import build_random_owlvit

    folder = Path(folder)
    model, processor = build_random_owlvit("test", folder)
    _redraw(model)
    model.save_pretrained(str(folder))
    processor.image_processor.save_pretrained(str(folder))
    processor.tokenizer.save_pretrained(str(folder))
    (folder / "tokenizer.json").unlink(missing_ok=True)
    specials = {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "pad_token": "!",
                "unk_token": "<|endoftext|>"}
    (folder / "special_tokens_map.json").write_text(json.dumps(specials), encoding="utf-8")
    return folder


def write_sam_tiny(path: Path) -> Path:
    from augclip_demo.inference.segmenter import build_tiny_sam

    model = _seeded(build_tiny_sam)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return path


def write_sam2(folder: Path) -> Path:
    """SAM 2 in transformers' layout (config.json, model.safetensors, preprocessor_config.json), test config,
    every tensor re-drawn with :data:`PUBLISHED_SEED`; no marker file, as on the hub."""
    from augclip_demo.inference.sam2_segmenter import build_random_sam2

    model, processor = build_random_sam2("test")
    _redraw(model)
    model.save_pretrained(str(folder))
    processor.image_processor.save_pretrained(str(folder))  # the hub repositories keep preprocessor_config.json
    return folder


def publish_all(hub: HubServer, folder: Path) -> dict[str, object]:
    """The hf-hub: CLIP repo, GroundingDINO tiny and the tiny SAM file on ``hub``; returns the names and paths."""
    clip = write_hf_hub_clip(folder / "clip")
    gdino = write_gdino(folder / "gdino")
    sam = write_sam_tiny(folder / "sam" / SAM_FILE)
    hub.add_folder(HF_HUB_CLIP_REPO, clip)
    hub.add_folder(GDINO_REPO, gdino)
    sam_url = hub.add_file(SAM_FILE, sam)
    return {"clip_repo": HF_HUB_CLIP_REPO, "clip_folder": clip, "gdino_repo": GDINO_REPO, "gdino_folder": gdino,
            "sam_url": sam_url, "sam_path": sam}


# ---------------------------------------------------------------------- feature networks (DINO, LPIPS, FID)
DINO_REPO = "facebook/dino-vits16"  # the tests serve a tiny ViT under the MagicBrush network's name
DINOV2_REPO = "facebook/dinov2-base"  # and a tiny DINOv2 under HATIE's
LPIPS_SQUEEZE_FILE = "squeezenet1_1-b8a52dc0.pth"  # torchvision's file name (full SqueezeNet 1.1 state dict)
FID_FILE = "weights-inception-2015-12-05-6726825d.pth"  # torch-fidelity's file name


def write_dino(folder: Path, architecture: str = "tiny") -> Path:
    """A DINO / DINOv2 repository as transformers saves it (config.json + model.safetensors), seeded."""
    from augclip_demo.inference.dino import save_random_dino

    return save_random_dino(architecture, folder, seed=PUBLISHED_SEED)


def write_torchvision_squeezenet(path: Path) -> Path:
    """torchvision's SqueezeNet 1.1 state dict (features and classifier), seeded: the LPIPS squeeze backbone file."""
    import torchvision

    model = _seeded(lambda: torchvision.models.squeezenet1_1(weights=None))
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return path


def write_fid_inception(path: Path) -> Path:
    """torch-fidelity's Inception-v3 state dict layout with seeded random tensors (about 91 MB)."""
    from augclip_demo.inference.fid import build_inception

    model = build_inception(None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(PUBLISHED_SEED)
        state = {k: (v + 0.01 * torch.randn_like(v)) if v.is_floating_point() else v
                 for k, v in model.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    return path
