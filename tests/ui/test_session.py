"""The app's session logic without the page: a changed CLIP model is refused, not silently mixed in."""

from __future__ import annotations

from pathlib import Path

import pytest

from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.pipeline import AugCLIPOptions, Evaluator
from augclip_demo.ui.common import offered_clip_model
from augclip_demo.ui.evaluate import session as logic
from tests.support import TINY

ATTRS = ("a red ball\ngreen grass", "a blue ball")


@pytest.fixture()
def evaluated(tiny_encoder, scene_files) -> logic.Session:
    from augclip_demo.attributes import Attributes

    report = Evaluator(TINY, device="cpu", encoder=tiny_encoder).evaluate(
        scene_files["source"], [scene_files["faithful"]], "a blue ball", None,
        Attributes(logic.lines(ATTRS[0]), logic.lines(ATTRS[1])))
    return logic.Session(report=report, clip_model=TINY)


@pytest.mark.parametrize("action", ["rescore", "bpm"])
def test_a_changed_clip_model_asks_for_a_new_evaluation(evaluated, action):
    other = Settings.from_env(clip_model="random:ViT-B-16", device="cpu")
    with pytest.raises(InputError, match="CLIP model changed"):
        if action == "rescore":
            logic.rescore(other, evaluated, AugCLIPOptions(), *ATTRS)
        else:
            logic.run_bpm(other, evaluated, instruction="make the ball blue")


@pytest.mark.slow
def test_evaluate_decodes_each_upload_once(scene_files, monkeypatch):
    """The upload checks and the pipeline share one decoded image per file (a spy on the real decoder)."""
    import augclip_demo.io as image_io

    decoded: list[str] = []
    real = image_io._open_with_pil

    def counted(handle, label, *rest):
        decoded.append(label)
        return real(handle, label, *rest)

    monkeypatch.setattr(image_io, "_open_with_pil", counted)
    settings = Settings.from_env(clip_model=TINY, device="cpu")
    edits = [str(scene_files["faithful"]), str(scene_files["replaced"])]
    report, _ = logic.evaluate(settings, logic.Session(), source=str(scene_files["source"]), edits=edits,
                               target_text="a blue ball", source_text="", provider="manual",
                               source_attrs_box=ATTRS[0], target_attrs_box=ATTRS[1], options=AugCLIPOptions(),
                               progress=lambda fraction, stage: None)
    assert len(report.edits) == 2
    assert sorted(decoded) == sorted(["source: source.png", "faithful.png", "replaced.png"])


def test_only_offered_clip_models_are_loaded():
    """A spec from a web client must be one the page offers: no folders on the server, no arbitrary Hub models."""
    offered = ["ViT-B-16/openai", TINY]
    assert offered_clip_model(f"  {TINY} ", offered) == TINY
    assert offered_clip_model("", offered) is None  # the server's default
    for spec in ["local-dir:/etc", "hf-hub:someone/model", "ViT-L-14/openai"]:
        with pytest.raises(InputError, match="not offered by this server"):
            offered_clip_model(spec, offered)


def test_reference_inputs_switch_their_columns_on(scene_files, tmp_path):
    """A ground truth and an output caption given in the app add their columns to the score table."""
    from augclip_demo.ui.evaluate import views

    settings = Settings.from_env(clip_model=TINY, device="cpu")
    report, _ = logic.evaluate(settings, logic.Session(), source=str(scene_files["source"]),
                               edits=[str(scene_files["faithful"])], target_text="a blue ball", source_text="",
                               provider="manual", source_attrs_box=ATTRS[0], target_attrs_box=ATTRS[1],
                               options=AugCLIPOptions(), progress=lambda f, s: None,
                               ground_truth=str(scene_files["preserved"]), output_caption="a blue ball on grass")
    frame = views.score_frame(report)
    for key in ("l1_gt", "l2_gt", "clip_i_gt", "clip_t_caption"):
        assert views.column_label(key) in frame.columns
        assert frame[views.column_label(key)][0] == pytest.approx(report.edits[0].metrics[key])
    assert views.column_label("psnr_unedited") not in frame.columns  # no mask: that column stays off
    plain, _ = logic.evaluate(settings, logic.Session(), source=str(scene_files["source"]),
                              edits=[str(scene_files["faithful"])], target_text="a blue ball", source_text="",
                              provider="manual", source_attrs_box=ATTRS[0], target_attrs_box=ATTRS[1],
                              options=AugCLIPOptions(), progress=lambda f, s: None)
    assert views.column_label("l1_gt") not in views.score_frame(plain).columns


@pytest.mark.slow
def test_the_first_result_draws_the_shown_maps_and_the_rest_follows(scene_files, tmp_path):
    """explain draws only the selected edit's relevancy maps; explain_rest adds the UMAP view; every
    other figure is drawn once, when asked for (figures.zip), as a readable PNG of its own."""
    from PIL import Image

    from augclip_demo.attributes import Attributes
    from augclip_demo.inference import get_encoder

    settings = Settings.from_env(clip_model=TINY, device="cpu")
    report = Evaluator(settings=settings, encoder=get_encoder(settings)).evaluate(
        scene_files["source"], [scene_files["faithful"], scene_files["replaced"]], "a blue ball", "a red ball",
        Attributes(logic.lines(ATTRS[0]), logic.lines(ATTRS[1])))
    state = logic.Session(report=report, clip_model=TINY, output_dir=str(tmp_path))
    files, _, state = logic.explain(settings, state)
    folder = Path(state.figures_dir)  # this result's own folder under the session's
    assert folder.parent == tmp_path / "figures"
    shown = logic.selected_edit(report)
    tag = f"E{shown + 1}"
    # the first result: the shown edit's AugCLIP maps only (toward the ideal edit and along v, one figure), drawn; the rankings and exact view of all
    assert set(files) == {f"{tag}_relevancy_augclip"} == set(state.figures)
    assert [(edit.augclip is not None, edit.augclip_v is not None, edit.clip_t, edit.clip_dir)
            for edit in state.explained.edits] == [(i == shown, i == shown, None, None) for i in range(2)]
    assert all(edit.rankings is not None for edit in state.explained.edits)
    assert state.explained.umap is None and state.explained.exact is not None
    # then its other two maps, drawn
    expected = {f"{tag}_relevancy_{kind}" for kind in ("augclip", "clip_t", "clip_dir")}
    assert set(logic.shown_maps(settings, state)) == expected == set(state.figures)
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{stem}.png" for stem in expected)
    assert state.explained.edits[1 - shown].augclip is None

    state = logic.explain_rest(settings, state, figures=False)
    assert state.explained.umap is not None and len(list(folder.iterdir())) == 3
    assert all(edit.augclip is not None and edit.clip_t is not None and edit.clip_dir is not None
               for edit in state.explained.edits)
    assert state.explained.options.relevancy_edits is None

    every = logic.figure_files(state)
    per_edit = ("relevancy_augclip", "relevancy_clip_dir", "relevancy_clip_t", "source_changes", "target_changes",
                "alpha")
    assert set(every) == {f"E{i}_{kind}" for i in (1, 2) for kind in per_edit} | {"hyperplane_exact",
                                                                                   "hyperplane_umap"}
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{stem}.png" for stem in every)  # no partial files
    for path in every.values():
        with Image.open(path) as image:
            assert image.format == "PNG" and image.width > 300 and image.height > 200
    stamps = {stem: Path(path).stat().st_mtime_ns for stem, path in every.items()}
    assert logic.figure_files(state) == every
    assert {stem: Path(path).stat().st_mtime_ns for stem, path in every.items()} == stamps  # drawn once
    # A new result (a re-score) writes to a new folder: a figure still being drawn for this one can
    # never replace the new result's file of the same name; this result's folder is removed.
    newer_files, _, newer = logic.explain(settings, state)
    assert newer.figures_dir != state.figures_dir and not folder.exists()
    assert {Path(path).parent for path in newer_files.values()} == {Path(newer.figures_dir)}
    with pytest.raises(InputError, match="no figure named"):
        from augclip_demo.explain.explanations import make_figure

        make_figure(report, state.explained, "E9_alpha")


@pytest.mark.slow
def test_an_edit_picked_before_the_rest_stage_gets_its_maps(scene_files, tmp_path):
    from augclip_demo.attributes import Attributes
    from augclip_demo.inference import get_encoder

    settings = Settings.from_env(clip_model=TINY, device="cpu")
    report = Evaluator(settings=settings, encoder=get_encoder(settings)).evaluate(
        scene_files["source"], [scene_files["faithful"], scene_files["replaced"], scene_files["preserved"]],
        "a blue ball", "a red ball", Attributes(logic.lines(ATTRS[0]), logic.lines(ATTRS[1])))
    _, _, state = logic.explain(settings, logic.Session(report=report, clip_model=TINY, output_dir=str(tmp_path)),
                                edit=0)
    assert state.explained.edits[2].augclip is None and state.explained.edits[0].clip_t is None
    logic.edit_maps(settings, state, 2)
    assert state.explained.edits[2].clip_dir is not None and state.explained.edits[1].augclip is None
    assert state.explained.edits[0].clip_t is None and state.explained.options.relevancy_maps == ("augclip",)
    assert set(logic.figure_files(state, ["E3_relevancy_augclip", "E3_relevancy_clip_dir"])) == \
        {"E3_relevancy_augclip", "E3_relevancy_clip_dir"}


def test_bpm_on_a_shipped_world_example_takes_its_regions_from_the_examples_masks(tiny_encoder):
    """A world example's objects are known: BPM on the page reads its masks (whatever order the edits come in),
    with no detector; any other image is left to the detector."""
    import numpy as np
    from PIL import Image

    from augclip_demo.attributes import Attributes
    from augclip_demo.io import image_content_hash
    from augclip_demo.ui.examples import known_object_masks, load_examples

    example = next(e for e in load_examples() if e.id == "world-recolour")
    edits = example.edits[::-1]
    settings = Settings.from_env(clip_model=TINY, device="cpu", gdino_model="no/such-detector")
    report = Evaluator(TINY, device="cpu", encoder=tiny_encoder).evaluate(
        example.source, edits, example.target_text, example.source_text,
        Attributes(example.source_attributes, example.target_attributes))
    report, message = logic.run_bpm(settings, logic.Session(report=report, clip_model=TINY),
                                    instruction=example.instruction)
    assert message == "" and any("given masks" in note for note in report.notes), report.notes
    correct = [Path(p).stem for p in edits].index("correct")
    region = report.edits[correct].bpm["regions"]["edit"]  # the recoloured ring, in the correct edit
    assert region["provenance"] == "given mask" and region["found"]
    mask = np.asarray(Image.open(Path(example.source).parent / "masks" / "correct" / "ring.png")) > 127
    ys, xs = np.nonzero(mask)
    assert region["box"] == [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
    other = next(e for e in load_examples() if e.object_masks is None)
    key = lambda path: image_content_hash(Image.open(path))  # noqa: E731
    assert known_object_masks(key(other.source), [key(p) for p in other.edits]) is None
    # one edit that is not the example's: no known masks
    assert known_object_masks(key(example.source), [key(other.source)]) is None
