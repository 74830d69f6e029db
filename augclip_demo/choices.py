"""Named choices that the command line's ``--help`` lists and the code that uses them checks.

Declared here, with the standard library alone, so that building the argument parser imports no
model stack (torch, scikit-learn, numpy...); each module that acts on a choice imports it from here
under its usual name (``augclip_demo.batch.runner.ENGINES`` is this ``ENGINES``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from .errors import InputError

#: Attribute provider names in the order the UI and ``--help`` list them.
PROVIDER_NAMES: tuple[str, ...] = ("manual", "openai", "clip-vocab")

#: Where a batch run executes: this process (threads, pools) or a Ray cluster (``pip install 'augclip-demo[ray]'``).
ENGINES: tuple[str, ...] = ("local", "ray")

#: Instruction parsers, and the states a parsed instruction can ask of an object.
PARSERS: tuple[str, ...] = ("rules", "llm")
SIZE_STATES: tuple[str, ...] = ("larger", "smaller", "unchanged")
POSITION_STATES: tuple[str, ...] = ("left", "right", "up", "down", "inside", "near", "unchanged")

#: AugCLIP's hyperplane classifiers, attribute weight scalings and projections (metrics/augclip.py).
CLASSIFIERS: tuple[str, ...] = ("svm", "logistic", "lda")
#: ``raw``: alpha as App. B passes it (floored); ``mean``: floored alpha rescaled to mean 1.
WEIGHT_SCALINGS: tuple[str, ...] = ("raw", "mean")
#: ``clamped``: v = max(c, 0) w (Eq. 8); ``plain``: v = c w (App. B lines 23-25).
PROJECTIONS: tuple[str, ...] = ("clamped", "plain")

#: ``raw`` (default): App. D.5's difference of the relevancy maps as computed; ``normalized``: each map
#: min-max normalised to [0, 1] before subtracting (our earlier default).
CLIP_DIR_DIFFERENCES: tuple[str, ...] = ("raw", "normalized")

@dataclass(frozen=True)
class _FeatureNetwork:
    """One network that feature metrics load: the field of :class:`FeatureNetworks` that names it, its model
    family, the benchmark's own spec (the default), the command-line flag that chooses it, the offline demo's
    spec, the feature metrics that use it (the metric table's keys), the item inputs it needs, and how it runs.

    ``runner`` names a function ``(item, spec) -> FeatureOutput`` as ``"module:function"`` (the module relative
    to this package; :func:`augclip_demo.pipeline.features.feature_inputs` imports it when the network runs),
    so this table imports no model code. A new feature network is a row here, its field in
    :class:`FeatureNetworks`, and its runner."""

    field: str
    family: str
    default: str
    flag: str
    what: str  # the flag's help, before "(default ...)"
    demo: str | None  # None: the demo's own CLIP model
    metrics: tuple[str, ...]
    benchmark: str  # whose network it is
    runner: str  # "module:function" that runs it on one item (see above)
    needs: tuple[str, ...] = ()  # item inputs without which it does not run: ground_truth, edit_mask, target_text
    options: tuple[str, ...] = ()  # other FeatureNetworks fields that change its metrics (compared on resume)


_RUNNERS = ".pipeline.features"

#: Every feature network, in the order the flags and the docs list them (the one place for each fact).
FEATURE_NETWORKS: tuple[_FeatureNetwork, ...] = (
    _FeatureNetwork("dino", "dino", "facebook/dino-vits16", "--dino-model", "DINO for dino_gt", "random:tiny",
                    ("dino_gt",), "MagicBrush", f"{_RUNNERS}:run_dino_gt", needs=("ground_truth",)),
    _FeatureNetwork("structure", "dino", "facebook/dino-vitb8", "--structure-model", "DINO for structure_distance",
                    "random:tiny", ("structure_distance",), "PIE-Bench", f"{_RUNNERS}:run_structure",
                    options=("structure_pixel_scale",)),
    _FeatureNetwork("lpips", "lpips", "squeeze", "--lpips-net", "LPIPS backbone (alex, squeeze or vgg) for "
                    "lpips_unedited", "random:squeeze", ("lpips_unedited",), "PIE-Bench", f"{_RUNNERS}:run_lpips",
                    needs=("edit_mask",)),
    _FeatureNetwork("pie_clip", "clip", "ViT-L-14/openai", "--pie-clip-model", "CLIP for clip_score_whole / "
                    "clip_score_edited", None, ("clip_score_whole", "clip_score_edited"), "PIE-Bench",
                    f"{_RUNNERS}:run_pie_clip", needs=("target_text",)),
)

#: Metrics that load a feature network of their own (computed only when asked for, ``feature_metrics``), and
#: the network each loads.
FEATURE_METRICS: dict[str, str] = {
    metric: f"{net.family.upper()} ({net.benchmark}: {net.default})"
    for net in FEATURE_NETWORKS for metric in net.metrics}


#: Each network's default by its field (by name, so the rows' order stays free).
_NETWORK_DEFAULTS: dict[str, str] = {net.field: net.default for net in FEATURE_NETWORKS}


@dataclass(frozen=True)
class FeatureNetworks:
    """Which network each feature metric loads (defaults: the benchmarks' own, :data:`FEATURE_NETWORKS`;
    ``random:`` ones for tests)."""

    dino: str = _NETWORK_DEFAULTS["dino"]
    structure: str = _NETWORK_DEFAULTS["structure"]
    lpips: str = _NETWORK_DEFAULTS["lpips"]
    structure_pixel_scale: float = 255.0  # PIE-Bench's script feeds 0-255 pixels to the key extractor
    pie_clip: str = _NETWORK_DEFAULTS["pie_clip"]

    @classmethod
    def demo(cls, clip_model: str) -> FeatureNetworks:
        """The offline demo's networks (the rows' demo specs; the CLIP ones are the demo's ``clip_model``)."""
        return cls(**{net.field: net.demo or clip_model for net in FEATURE_NETWORKS})

    def spec_of(self, metric: str) -> str:
        """The spec of the network ``metric`` (a feature metric) loads."""
        return getattr(self, _network_of(metric).field)


def _network_of(metric: str) -> _FeatureNetwork:
    """The feature network ``metric`` loads (a KeyError for a metric that loads none)."""
    return next(net for net in FEATURE_NETWORKS if metric in net.metrics)


#: HATIE's edit types.
EDIT_TYPES: tuple[str, ...] = ("add", "remove", "replace", "resize", "attribute", "background", "style")

#: How the MLLM judge asks for structured answers.
STRUCTURED_MODES: tuple[str, ...] = ("auto", "json_schema", "off")

#: ``bench speed``: the largest ratio of AugCLIP's batch scoring time to bare CLIP encoding it accepts.
TARGET_RATIO = 1.15

#: BPM's weight of S_semantic (the BPM paper's Table 9: best human alignment).
DEFAULT_BPM_ALPHA = 0.7
#: GroundingDINO's box score threshold in BPM's standard preset (Grounded-SAM's 0.3).
DEFAULT_BPM_BOX_THRESHOLD = 0.3
#: Where BPM's regions come from: detected by the detector and the segmenter, or read from given masks.
REGION_SOURCES: tuple[str, ...] = ("detected", "masks")


@dataclass(frozen=True)
class RegionThresholds:
    """The Region-Aware Judge's saliency thresholds (the paper names them, gives no values; ours).

    * ``size_change_ratio`` 1.2: "larger" needs the edited mask at least 20 % bigger than the
      original, "smaller" at most 1/1.2 of it.
    * ``size_unchanged_ratio`` 1.33: "unchanged" allows the area to move within [0.75, 1.33]x,
      so a replaced object of similar size (a cat for a dog) keeps its size score.
    * ``move_iou_max`` 0.5: a moved or placed object overlaps its anchor by IoU < 0.5.
    * ``unchanged_iou_min`` 0.5: an object that stays put keeps IoU > 0.5 with its old box
      (the usual detection match threshold).
    * ``direction_ratio`` 1.0: the displacement is mostly along the asked axis (off-axis <= on-axis).
    * ``inside_min_fraction`` 0.8: at least 80 % of the edited box lies within the anchor box.
    * ``near_max_gap`` 0.5: the gap between the boxes is at most half their mean diagonal.
    """

    size_change_ratio: float = 1.2
    size_unchanged_ratio: float = 1.33
    move_iou_max: float = 0.5
    unchanged_iou_min: float = 0.5
    direction_ratio: float = 1.0
    inside_min_fraction: float = 0.8
    near_max_gap: float = 0.5

    def __post_init__(self) -> None:
        for name in ("size_change_ratio", "size_unchanged_ratio"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 1.0):
                raise InputError(f"{name} must be a ratio >= 1, got {value!r}")
        for name in ("move_iou_max", "unchanged_iou_min", "inside_min_fraction"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise InputError(f"{name} must be between 0 and 1, got {value!r}")
        for name in ("direction_ratio", "near_max_gap"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
                raise InputError(f"{name} must be a non-negative number, got {value!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


#: ``protocol`` / ``study agree``: bootstrap resamples, confidence level and seed of the agreement intervals.
DEFAULT_BOOTSTRAP = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_AGREEMENT_SEED = 0

#: ``triplets``: noise level and seed of the generated triplets.
DEFAULT_TRIPLET_SIGMA = 0.02
DEFAULT_TRIPLET_SEED = 0

#: The synthetic world's edit kinds, in the order a world set cycles through them.
EDIT_KINDS: tuple[str, ...] = ("recolour", "resize", "move", "add", "remove", "replace", "background")
#: What a world item's target attribute list holds: ``scene``, every phrase of the target scene; ``changed``,
#: only what the edit brings (the phrases true of the target and not of the source; a removal, which brings
#: none, lists the target scene's). The source list is always every phrase of the source scene.
TARGET_ATTRIBUTE_STYLES: tuple[str, ...] = ("scene", "changed")

#: ``manifest parquet``: roles a column can play: images (source, ground truth, an edited image, an edit mask) and texts.
PARQUET_IMAGE_ROLES = ("source", "ground_truth", "edit", "mask")
PARQUET_TEXT_ROLES = ("id", "instruction", "source_caption", "target_caption", "edit_type", "model")
#: Roles of human-vote sets: ``candidates`` (several image columns, the edits people compared, in order),
#: ``models`` (the editing model of each candidate, in the same order) and ``vote`` (people's verdict, read
#: in one of :data:`VOTE_FORMATS`).
_PARQUET_GROUP_ROLES = ("candidates", "models", "vote", "comparison")
PARQUET_ROLES = PARQUET_IMAGE_ROLES + PARQUET_TEXT_ROLES + _PARQUET_GROUP_ROLES

#: How a ``vote`` column is read. ``arena``: GenAI-Bench's labels ``leftvote`` / ``rightvote`` / ``tievote`` /
#: ``bothbad_vote`` over two candidates. ``ranking``: EditReward-Bench's orderings of candidates named A, B, C, D
#: (``A>B``, ``B>A``, ``A=B``, ``C>A>B``, ``A=B=Good`` / ``A=B=Bad``); with a ``comparison`` column (``AvsC``)
#: the row's two candidates are the letters it names.
VOTE_FORMATS = ("arena", "ranking")
#: ``manifest parquet --rating``: which of ImagenHub's ratings becomes an edit's human score: ``overall``
#: (sqrt(SC x PQ), ImagenHub's overall score), ``sc`` (semantic consistency) or ``pq`` (perceptual quality).
RATING_PARTS = ("overall", "sc", "pq")


@dataclass(frozen=True)
class ParquetColumns:
    """Which column plays each role (``id`` may join several columns with ``-``); ``optional`` may be absent.

    ``vote_format``: how the ``vote`` column reads (:data:`VOTE_FORMATS`). ``output_name``: the file stem a
    ``--method-dir`` output of a row has, as a format string over the row's columns (default: the item id).
    """

    columns: Mapping[str, tuple[str, ...]]
    optional: frozenset[str] = field(default_factory=frozenset)
    vote_format: str | None = None
    output_name: str | None = None


#: Presets from the datasets' cards on the Hugging Face Hub.
PARQUET_PRESETS: dict[str, ParquetColumns] = {
    # osunlp/MagicBrush: img_id, turn_index, source_img, mask_img, instruction, target_img. mask_img is not
    # mapped: it is an RGBA masked image (the region marked by its transparency) at its own resolution, not
    # a white = edit mask (the maintainers, OSU-NLP-Group/MagicBrush issue #10); MagicBrush's evaluation uses none
    "magicbrush": ParquetColumns({"id": ("img_id", "turn_index"), "source": ("source_img",),
                             "ground_truth": ("target_img",), "instruction": ("instruction",)}),
    # facebook/emu_edit_test_set: instruction, image, task, split, idx, hash, input_caption, output_caption;
    # facebook/emu_edit_test_set_generations adds edited_image and model
    "emu-edit": ParquetColumns({"id": ("idx",), "source": ("image",), "instruction": ("instruction",),
                           "source_caption": ("input_caption",), "target_caption": ("output_caption",),
                           "edit_type": ("task",), "edit": ("edited_image",), "model": ("model",)},
                          optional=frozenset({"edit", "model"})),
    # UCSC-VLAA/HQ-Edit: input, input_image, edit, inverse_edit, output, output_image
    "hq-edit": ParquetColumns({"source": ("input_image",), "ground_truth": ("output_image",), "instruction": ("edit",),
                          "source_caption": ("input",), "target_caption": ("output",)}),
    # TIGER-Lab/GenAI-Bench, config image_edition (splits test, test_v1): source_prompt, target_prompt,
    # instruct_prompt, source_image, left_model, left_output_image, right_model, right_output_image, vote_type
    # (leftvote / rightvote / tievote / bothbad_vote: GenAI-Bench's inference.py reads these four)
    "genai-bench": ParquetColumns({"source": ("source_image",), "instruction": ("instruct_prompt",),
                                   "source_caption": ("source_prompt",), "target_caption": ("target_prompt",),
                                   "candidates": ("left_output_image", "right_output_image"),
                                   "models": ("left_model", "right_model"), "vote": ("vote_type",)},
                                  vote_format="arena"),
    # TIGER-Lab/EditReward-Bench (folders 2pair, 3pair, 4pair; one row per compared pair): id, instruction,
    # source_image, candidate_1, candidate_2, ranking (A>B, B>A, A=B; C>A in a 4pair AvsC row), comparison_type
    # (AvsB, AvsC, ...; absent or empty: A and B), score_1, score_2, model_1, model_2 (EditReward's
    # evaluate/inference_{2,3,4}pair_hf.py read these)
    "editreward-bench": ParquetColumns({"id": ("id",), "source": ("source_image",), "instruction": ("instruction",),
                                        "candidates": ("candidate_1", "candidate_2", "candidate_3", "candidate_4"),
                                        "models": ("model_1", "model_2", "model_3", "model_4"),
                                        "vote": ("ranking",), "comparison": ("comparison_type",)},
                                       optional=frozenset({"models", "comparison"}), vote_format="ranking"),
    # ImagenHub/Text_Guided_Image_Editing (splits dev, filtered, extra): img_id, turn_index, source_img, mask_img,
    # instruction, source_global_caption, target_global_caption, target_local_caption, target_img. The edited
    # images are ImagenMuseum's, sample_<img_id>_<turn_index>.jpg per model folder; the human ratings are
    # ImagenHub's eval/human_ratings/Text-Guided_IE/*_rater<k>.tsv (read with --ratings)
    "imagenhub-edit": ParquetColumns({"id": ("img_id", "turn_index"), "source": ("source_img",),
                                      "instruction": ("instruction",), "source_caption": ("source_global_caption",),
                                      "target_caption": ("target_global_caption",)},
                                     output_name="sample_{img_id}_{turn_index}"),
}
