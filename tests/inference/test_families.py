"""The model-family table: one grammar per family, one label rule, one getter; models take their arguments."""

from __future__ import annotations

import pytest

from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError
from augclip_demo.inference.families import FAMILIES, UNTRAINED, get_model
from tests.support import TINY


def test_every_family_row_names_a_wrapper_and_reads_its_own_default():
    for key, row in FAMILIES.items():
        assert row.wrapper_class.family_key == key
        assert row.canonical(row.default) == row.default
        assert not row.untrained(row.default)
        assert row.label(row.default, False).endswith(row.default) and UNTRAINED not in row.label(row.default, False)
        assert row.how_to_fix(row.default).strip()


@pytest.mark.parametrize(("key", "spelling", "canonical"), [
    ("gdino", " random: TINY ", "random:tiny"),
    ("owlvit", "RANDOM:test", "random:test"),
    ("sam2", "random:hiera-tiny ", "random:hiera-tiny"),
    ("dino", "random: dinov2-base", "random:dinov2-base"),
    ("sam", " VIT_B", "vit_b"),
    ("lpips", "Random:Alex", "random:alex"),
    ("fid", "random: inception-v3-compat", "random:inception-v3-compat"),
])
def test_spellings_of_one_model_are_one_spec(key, spelling, canonical):
    assert FAMILIES[key].canonical(spelling) == canonical
    assert FAMILIES[key].untrained(canonical) == canonical.startswith("random:")


@pytest.mark.parametrize(("key", "spec", "message"), [
    ("gdino", "random:huge", "random specs: random:tiny, random:swint"),
    ("dino", "facebook", "neither a hub id"),
    ("gdino", "a/b/c", "neither a hub id"),
    ("sam", "vit_q", "unknown SAM model 'vit_q'; use vit_b, vit_l or vit_h"),
    ("lpips", "resnet", "unknown LPIPS model"),
    ("owlvit", "   ", "the OWL-ViT model is empty; set AUGCLIP_FAST_DETECTOR_MODEL"),
])
def test_a_spec_the_grammar_refuses_is_named_in_the_error(key, spec, message):
    with pytest.raises(ConfigError, match=message):
        FAMILIES[key].canonical(spec)


def test_labels_come_from_the_spec_in_one_place(tmp_path):
    from augclip_demo.inference.clip_encoder import ClipEncoder
    from augclip_demo.inference.dino import DinoFeatures
    from augclip_demo.inference.grounding import GroundingDetector
    from augclip_demo.inference.segmenter import SamSegmenter

    assert ClipEncoder(TINY, device="cpu").label == f"{TINY}{UNTRAINED}"
    assert GroundingDetector("random:tiny", device="cpu", cache_dir=tmp_path).label == f"random:tiny{UNTRAINED}"
    assert SamSegmenter("random:tiny", device="cpu").label == f"SAM tiny{UNTRAINED}"
    assert SamSegmenter("vit_b", device="cpu").label == "SAM vit_b"
    assert DinoFeatures("facebook/dinov2-base", device="cpu").label == "DINO facebook/dinov2-base"
    assert SamSegmenter("vit_b", device="cpu").untrained is False


def test_one_wrapper_per_model_whatever_the_spelling(tmp_path):
    settings = Settings(cache_dir=tmp_path, device="cpu")
    first = get_model("lpips", settings, "random:alex")
    assert get_model("lpips", settings, " RANDOM:alex ") is first
    assert get_model("lpips", settings, "random:vgg") is not first
    assert get_model("clip", settings, TINY) is get_model("clip", settings.replace(clip_model=TINY))


def test_a_bad_unrelated_variable_does_not_stop_a_model_from_being_built(monkeypatch, tmp_path):
    """Models take explicit arguments: the environment is read at the edges (cli, ui, api), into Settings."""
    monkeypatch.setenv("AUGCLIP_SAM_SHA256", "not a checksum")
    monkeypatch.setenv("AUGCLIP_MAX_EDITS", "many")
    with pytest.raises(ConfigError):  # the variables really are bad where the environment is read
        Settings.from_env()
    from augclip_demo.inference.clip_encoder import ClipEncoder
    from augclip_demo.inference.grounding import GroundingDetector
    from augclip_demo.inference.lpips import LpipsNetwork
    from augclip_demo.inference.segmenter import SamSegmenter

    encoder = ClipEncoder(TINY, device="cpu")
    assert encoder.encode_texts(["a red cup"]).shape[0] == 1
    assert SamSegmenter("random:tiny", device="cpu").spec == "random:tiny"
    assert GroundingDetector("random:tiny", device="cpu", cache_dir=tmp_path).spec == "random:tiny"
    assert LpipsNetwork("random:alex", device="cpu").mirror is None


def test_a_weights_file_given_apart_from_the_spec_is_in_every_familys_label(tmp_path):
    """One rule (LazyModel.label_detail): no wrapper switches it off, so LPIPS and FID name their file as SAM does."""
    from augclip_demo.inference.fid import FidInception
    from augclip_demo.inference.lpips import LpipsNetwork
    from augclip_demo.inference.segmenter import SamSegmenter

    path = tmp_path / "weights.pth"
    assert LpipsNetwork("alex", checkpoint=path, device="cpu").label == f"LPIPS alex (weights: {path})"
    assert FidInception(checkpoint=path, device="cpu").label == f"FID inception-v3-compat (weights: {path})"
    assert SamSegmenter("vit_b", checkpoint=path, device="cpu").label == f"SAM vit_b (weights: {path})"
    assert LpipsNetwork("alex", device="cpu").label == "LPIPS alex"
    for row in FAMILIES.values():
        assert all("label_detail" not in vars(cls) for cls in row.wrapper_class.__mro__[:-1]
                   if cls.__name__ != "LazyModel"), row.key


def test_every_transformers_folder_family_shares_the_hub_folder_base():
    from augclip_demo.inference.hub_folder import HubFolderModel
    from augclip_demo.inference.weights import table

    hub = [row.key for row in FAMILIES.values() if row.grammar == "hub"]
    assert sorted(hub) == ["dino", "gdino", "owlvit", "sam2"]
    assert all(issubclass(FAMILIES[key].wrapper_class, HubFolderModel) for key in hub)
    # one name for the weight file of such a folder
    assert [name for name in vars(table) if name.endswith("WEIGHT_ALTERNATIVES")] == []
    for files in (table.GDINO_FILES, table.DINO_FILES, table.SAM2_FILES, table.OWL_FILES):
        assert (table.TRANSFORMERS_WEIGHT_FILES, True) in files


def test_each_row_says_which_settings_become_its_arguments_and_its_wrapper_takes_them(tmp_path):
    import inspect

    from augclip_demo.inference.families import settings_arguments

    settings = Settings(cache_dir=tmp_path, file_mirror="https://mirror.example/w", sam_url="https://example/sam.pth")
    for key, row in FAMILIES.items():
        args = settings_arguments(key, settings, device="cpu")
        accepted = inspect.signature(row.wrapper_class).parameters
        assert set(args) <= set(accepted), key
        assert str(args["device"]) == "cpu" and args["cache_dir"] == tmp_path
    assert settings_arguments("lpips", settings, device="cpu")["mirror"] == "https://mirror.example/w"
    assert settings_arguments("sam", settings, device="cpu")["url"] == "https://example/sam.pth"
    assert "mirror" not in settings_arguments("dino", settings, device="cpu")


def test_an_unknown_family_has_no_arguments_it_is_refused_by_name(tmp_path):
    from augclip_demo.inference.families import settings_arguments

    with pytest.raises(ConfigError, match="unknown model family 'vae'; one of clip, gdino"):
        settings_arguments("vae", Settings(cache_dir=tmp_path), device="cpu")


def test_the_features_that_load_a_family_are_read_from_its_row():
    from augclip_demo.inference.needs import FEATURES, models_needed

    settings = Settings(clip_model="random:tiny", hatie_clip="")
    for feature in FEATURES:
        region = {"clip", "gdino", "sam", "sam2", "owlvit"}  # the run's CLIP (and HATIE's own) and BPM's models
        loaded = {need.family for need in models_needed(settings, feature, with_clip=False)} - region
        assert loaded == {key for key, row in FAMILIES.items() if feature in row.needed_by}, feature
    assert [n.family for n in models_needed(settings, "hatie")][-2:] == ["dino", "lpips"]
