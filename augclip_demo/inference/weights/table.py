"""The weights table: for every model this tool knows by name, where its files come from, which files
they are, roughly how large, under which licence and (where published) their checksum.

Also the file layouts the resolvers check (which files a transformers folder or an open_clip
repository holds) and the official URLs of the weights that are not on the Hub.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PretrainedWeights:
    """Facts about one published set of weights."""

    family: str  # "clip", "gdino", "owlvit", "sam" or "sam2" (and the feature networks)
    spec: str  # what the user types (--clip-model / --gdino-model / --sam-model)
    source: str  # "hf-hub:ORG/REPO" or a URL
    files: tuple[str, ...]  # the weight file(s) first, then configs
    size_mb: float  # the weight file, MiB (parameters x 4 bytes, rounded; approximate)
    licence: str
    sha256: str | None = None  # of the weight file, where published
    note: str = ""

    @property
    def repo_id(self) -> str | None:
        return self.source[len("hf-hub:"):] if self.source.startswith("hf-hub:") else None


#: SAM's official checkpoints (segment-anything's README), by architecture.
SAM_CHECKPOINT_URLS: dict[str, str] = {
    "vit_h": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_h_4b8939.pth",
    "vit_l": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_l_0b3195.pth",
    "vit_b": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_b_01ec64.pth",
}

#: The weight file of a folder in transformers' layout, either name (every transformers family: GroundingDINO,
#: OWL-ViT, SAM 2, DINO).
TRANSFORMERS_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
#: Files a GroundingDINO folder in transformers' layout holds: (alternatives, required). The hub
#: repositories have preprocessor_config.json; transformers 5's save_pretrained writes processor_config.json.
GDINO_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (TRANSFORMERS_WEIGHT_FILES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
    (("tokenizer_config.json",), True),
    (("vocab.txt",), False),
    (("tokenizer.json",), False),
    (("special_tokens_map.json",), False),
)
#: open_clip looks for these weight files in a hub repository, in this order.
OPEN_CLIP_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
OPEN_CLIP_CONFIG = "open_clip_config.json"

#: Files of a transformers ViT / DINOv2 repository: (alternatives, required).
DINO_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (TRANSFORMERS_WEIGHT_FILES, True),
)
_DINO_PUBLISHED = ("model.safetensors", "config.json")
#: torchvision's ImageNet weights for the LPIPS backbones (torchvision's own weight tables; the file
#: name's 8 hex digits are the start of its SHA-256, which torchvision checks and so do we).
TORCHVISION_BACKBONE_URLS: dict[str, str] = {
    "alex": "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
    "squeeze": "https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth",
    "vgg": "https://download.pytorch.org/models/vgg16-397923af.pth",
}
#: torch-fidelity's Inception-v3 (TensorFlow FID weights, converted): torch_fidelity.URL_INCEPTION_V3.
FID_INCEPTION_URL = ("https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/"
                     "weights-inception-2015-12-05-6726825d.pth")

_GDINO_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json", "tokenizer_config.json",
                    "vocab.txt", "tokenizer.json", "special_tokens_map.json")

#: A SAM 2 folder in transformers' layout (Sam2Model + Sam2Processor): (alternatives, required).
SAM2_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (TRANSFORMERS_WEIGHT_FILES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
)
_SAM2_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json")

#: An OWL-ViT folder in transformers' layout (OwlViTForObjectDetection + OwlViTProcessor with CLIP's tokenizer).
OWL_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (TRANSFORMERS_WEIGHT_FILES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
    (("tokenizer_config.json",), True),
    (("vocab.json",), True),
    (("merges.txt",), True),
    (("tokenizer.json",), False),
    (("special_tokens_map.json",), False),
)
# the hub repositories: model.safetensors (and the older pytorch_model.bin), no tokenizer.json
_OWL_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json", "tokenizer_config.json",
                  "vocab.json", "merges.txt", "special_tokens_map.json")

PRETRAINED: tuple[PretrainedWeights, ...] = (
    PretrainedWeights("clip", "ViT-B-16/openai", "hf-hub:timm/vit_base_patch16_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 571.0, "MIT (OpenAI CLIP)",
                      note="the AugCLIP paper's backbone; the default"),
    PretrainedWeights("clip", "ViT-B-32/openai", "hf-hub:timm/vit_base_patch32_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 577.0, "MIT (OpenAI CLIP)",
                      note="HATIE's CLIP (every HATIE CLIP measure; AUGCLIP_HATIE_CLIP)"),
    PretrainedWeights("clip", "shapes:tiny", "package:augclip_demo/inference/shipped/shapes-tiny",
                      OPEN_CLIP_WEIGHT_FILES[:1] + (OPEN_CLIP_CONFIG,), 4.4, "MIT (this project)",
                      note="toy model trained on the synthetic shapes world (training/train_shapes_clip.py writes its files)"),
    PretrainedWeights("clip", "ViT-L-14/openai", "hf-hub:timm/vit_large_patch14_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 1632.0, "MIT (OpenAI CLIP)",
                      note="PIE-Bench's CLIP score (clip_score_whole / clip_score_edited)"),
    PretrainedWeights("gdino", "IDEA-Research/grounding-dino-tiny", "hf-hub:IDEA-Research/grounding-dino-tiny",
                      _GDINO_PUBLISHED, 657.0, "Apache-2.0",
                      note="Swin-T; the BPM paper's detector; the default"),
    PretrainedWeights("gdino", "IDEA-Research/grounding-dino-base", "hf-hub:IDEA-Research/grounding-dino-base",
                      _GDINO_PUBLISHED, 890.0, "Apache-2.0"),
    PretrainedWeights("sam2", "facebook/sam2.1-hiera-tiny", "hf-hub:facebook/sam2.1-hiera-tiny", _SAM2_PUBLISHED,
                      149.0, "Apache-2.0", note="SAM 2.1 Hiera-Tiny in transformers' layout; the BPM fast preset"),
    PretrainedWeights("owlvit", "google/owlvit-base-patch32", "hf-hub:google/owlvit-base-patch32", _OWL_PUBLISHED,
                      585.0, "Apache-2.0", note="OWL-ViT ViT-B/32 at 768 px; the BPM fast preset's detector"),
    PretrainedWeights("owlvit", "google/owlvit-base-patch16", "hf-hub:google/owlvit-base-patch16", _OWL_PUBLISHED,
                      583.0, "Apache-2.0", note="ViT-B/16: finer boxes, ~4x the compute of B/32"),
    PretrainedWeights("sam", "vit_b", SAM_CHECKPOINT_URLS["vit_b"], ("sam_vit_b_01ec64.pth",), 358.0, "Apache-2.0",
                      note="the default"),
    PretrainedWeights("sam", "vit_l", SAM_CHECKPOINT_URLS["vit_l"], ("sam_vit_l_0b3195.pth",), 1192.0, "Apache-2.0"),
    PretrainedWeights("sam", "vit_h", SAM_CHECKPOINT_URLS["vit_h"], ("sam_vit_h_4b8939.pth",), 2445.0, "Apache-2.0",
                      note="Grounded-SAM's choice"),
    # perceptual feature networks (reference, preservation and distribution metrics; docs/metrics.md)
    PretrainedWeights("dino", "facebook/dino-vits16", "hf-hub:facebook/dino-vits16", _DINO_PUBLISHED, 83.0,
                      "Apache-2.0", note="MagicBrush's DINO similarity"),
    PretrainedWeights("dino", "facebook/dino-vitb8", "hf-hub:facebook/dino-vitb8", _DINO_PUBLISHED, 327.0,
                      "Apache-2.0", note="PIE-Bench's structure distance"),
    PretrainedWeights("dino", "facebook/dinov2-base", "hf-hub:facebook/dinov2-base", _DINO_PUBLISHED, 330.0,
                      "Apache-2.0", note="HATIE's feature similarities"),
    PretrainedWeights("lpips", "alex", TORCHVISION_BACKBONE_URLS["alex"], ("alexnet-owt-7be5be79.pth",), 233.0,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone (HATIE); LPIPS' linear heads ship in torchmetrics"),
    PretrainedWeights("lpips", "squeeze", TORCHVISION_BACKBONE_URLS["squeeze"], ("squeezenet1_1-b8a52dc0.pth",), 4.7,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone (PIE-Bench)"),
    PretrainedWeights("lpips", "vgg", TORCHVISION_BACKBONE_URLS["vgg"], ("vgg16-397923af.pth",), 528.0,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone"),
    PretrainedWeights("fid", "inception-v3-compat", FID_INCEPTION_URL, ("weights-inception-2015-12-05-6726825d.pth",),
                      91.2, "Apache-2.0 (TensorFlow weights, converted by torch-fidelity)",
                      note="FID's Inception (torchmetrics / torch-fidelity)"),
)


def pretrained_entry(family: str, spec: str) -> PretrainedWeights | None:
    """The table row for ``spec`` of ``family``, if this tool knows it by name."""
    for entry in PRETRAINED:
        if entry.family == family and entry.spec == spec:
            return entry
    return None
