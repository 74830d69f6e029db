"""Hyperplane views (exact and UMAP), ranking charts, figures, explain_report and the ``explain`` CLI."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest

from augclip_demo.cli import main
from augclip_demo.errors import InputError
from augclip_demo.explain import complete_relevancy, explain_report
from augclip_demo.explain.figures import UNTRAINED_BANNER, ranking_figure
from augclip_demo.explain.grid_pictures import relevancy_tiles
from augclip_demo.explain.hyperplane import (
    exact_coordinates,
    exact_view,
    umap_coordinates,
    umap_view,
    warm_up_umap,
)
from augclip_demo.explain.rankings import edit_rankings, top_bottom
from augclip_demo.inference import ClipEncoder
from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.pipeline import Attributes, AugCLIPOptions, Evaluator

ATTRIBUTES = Attributes(source=["a red ball", "a white background", "a round shape"],
                        target=["green grass", "a red ball on grass", "a lawn under the ball"])


@pytest.fixture(scope="session")
def umap_warm_seconds() -> float:
    """One UMAP warm-up (numba compile) shared by every test that fits UMAP; its duration is measured."""
    return warm_up_umap()


@pytest.fixture()
def report(tiny_encoder, scene_files):
    evaluator = Evaluator(encoder=tiny_encoder)
    return evaluator.evaluate(scene_files["source"], [scene_files["faithful"], scene_files["replaced"]],
                              "a red ball on green grass", "a red ball", ATTRIBUTES)


def _synthetic_fit(seed: int = 0):
    """Embeddings where the source image sits clearly on the source side, so c > 0."""
    rng = np.random.default_rng(seed)
    dim = 32
    src_dir, tgt_dir = np.eye(dim)[0], np.eye(dim)[1]
    src_attrs = src_dir + 0.3 * rng.normal(size=(4, dim))
    tgt_attrs = tgt_dir + 0.3 * rng.normal(size=(3, dim))
    src_img = src_dir + 0.2 * rng.normal(size=dim)
    edit_img = 0.6 * src_dir + 0.6 * tgt_dir + 0.2 * rng.normal(size=dim)
    result = augclip_score(src_img, edit_img, src_attrs, tgt_attrs, include_images=False)
    unit = lambda m: m / np.linalg.norm(m, axis=-1, keepdims=True)  # noqa: E731
    return result, unit(src_attrs), unit(tgt_attrs), unit(src_img), unit(edit_img)


def test_exact_coordinates_put_the_ideal_on_the_hyperplane():
    result, src_attrs, tgt_attrs, src_img, edit_img = _synthetic_fit()
    assert result.c > 0
    vectors = np.vstack([src_attrs, tgt_attrs, src_img, edit_img, result.ideal])
    x, y, explained = exact_coordinates(vectors, result.w, result.b)
    source, edit, ideal = len(vectors) - 3, len(vectors) - 2, len(vectors) - 1
    assert abs(x[ideal]) < 1e-6  # the ideal edit lies on g(x) = 0
    assert x[source] < 0 and x[source] == pytest.approx(-np.linalg.norm(result.v))  # |v| away, source side
    assert y[ideal] == pytest.approx(y[source], abs=1e-9)  # v is parallel to w: same height
    assert x[edit] == pytest.approx(result.signed_distance(edit_img), abs=1e-9)  # the metric's own distance
    assert 0 < explained <= 1
    # y is orthogonal to w: moving any point along w changes x only.
    moved = vectors + 0.5 * result.w / np.linalg.norm(result.w)
    x2, y2, _ = exact_coordinates(moved, result.w, result.b)
    np.testing.assert_allclose(x2 - x, 0.5, atol=1e-9)
    np.testing.assert_allclose(y2, y, atol=1e-9)


def test_exact_view_of_a_report_has_one_panel_per_fit(report, tiny_encoder):
    view = exact_view(report)
    assert len(view.panels) == 2 and "own fit" in view.caption  # include_images: one hyperplane per edit
    for panel, res in zip(view.panels, report.arrays.augclip):
        points = panel.points
        src = int(points.indices("source_image")[0])
        ideal = int(points.indices("ideal")[0])
        assert panel.c == res.c
        if res.c > 0:
            assert abs(panel.x[ideal]) < 1e-6 and panel.x[src] < 0
        assert len(points.indices("edit")) == 2 and len(points.indices("ideal")) == 1
        assert len(points.indices("source_attribute")) == 3 and len(points.indices("target_attribute")) == 3
    shared = Evaluator(encoder=tiny_encoder).rescore(report, AugCLIPOptions(include_images=False))
    view = exact_view(shared)
    assert len(view.panels) == 1 and view.panels[0].edits == [0, 1] and "share one fit" in view.caption
    assert json.dumps(view.to_dict())


@pytest.mark.slow
def test_umap_on_five_points_is_deterministic(umap_warm_seconds):
    result, src_attrs, tgt_attrs, src_img, edit_img = _synthetic_fit(1)
    points = np.vstack([src_attrs[:1], tgt_attrs[:1], src_img, edit_img, result.ideal])  # S, T, source, edit, ideal
    start = time.perf_counter()
    first = umap_coordinates(points, n_neighbors=15, seed=0)  # n_neighbors is capped at n - 1
    warm_call = time.perf_counter() - start
    again = umap_coordinates(points, n_neighbors=15, seed=0)
    assert first.shape == (5, 2) and np.all(np.isfinite(first))
    np.testing.assert_allclose(first, again)
    assert umap_warm_seconds > 0 and warm_call < umap_warm_seconds  # the compile happened once, in the warm-up
    with pytest.raises(InputError, match="at least 4"):
        umap_coordinates(points[:3])


@pytest.mark.slow
def test_umap_view_draws_one_line_per_fit(report, umap_warm_seconds):
    view = umap_view(report, seed=0)
    assert view.coords.shape == (len(view.points), 2) and np.all(np.isfinite(view.coords))
    assert view.points.kinds.count("ideal") == 2 and len(view.lines) == 2
    assert view.n_neighbors == len(view.points) - 1  # 11 points: capped below the default 15
    assert "illustrative" in view.caption and "refitted" in view.caption
    for line in view.lines:
        assert line.w.shape == (2,) and np.isfinite(line.b) and 0 <= line.accuracy <= 1
    np.testing.assert_allclose(umap_view(report, seed=0).coords, view.coords)


def test_rankings_sort_and_cut_long_lists(tiny_encoder, scene_files):
    many = Attributes(source=[f"source attribute number {i}" for i in range(20)], target=["grass", "lawn", "green"])
    report = Evaluator(encoder=tiny_encoder).evaluate(scene_files["source"], scene_files["faithful"],
                                                      "a red ball on grass", attributes=many)
    charts = edit_rankings(report, 0, top_k=3)
    source = charts.source
    assert source.total == 20 and len(source.items) == 6 and source.omitted == 14 and source.split_after == 2
    ranks = [item.rank for item in source.items]
    assert ranks == [1, 2, 3, 18, 19, 20]
    magnitudes = [abs(item.value) for item in source.items]
    assert magnitudes == sorted(magnitudes, reverse=True)
    assert charts.target.omitted == 0 and len(charts.target.items) == 3
    # Alpha: the image samples go to their sets, each set sorted by value.
    assert charts.alpha_source.total == 21 and charts.alpha_target.total == 4  # attributes + the image sample
    values = [item.value for item in charts.alpha_target.items]
    assert values == sorted(values, reverse=True)
    items, omitted = top_bottom([("a", 3.0), ("b", 2.0), ("c", 1.0)], 1, 1)
    assert [i.text for i in items] == ["a", "c"] and omitted == 1
    with pytest.raises(InputError):
        edit_rankings(report, 5)


PER_EDIT_FIGURES = ["relevancy_augclip", "relevancy_clip_dir", "relevancy_clip_t", "source_changes", "target_changes",
                    "alpha"]


def _figure_texts(fig) -> list[str]:
    return [t.get_text() for sub in [fig, *fig.subfigs] for t in sub.texts]


@pytest.mark.slow
def test_explain_report_end_to_end(report, tiny_encoder, umap_warm_seconds):
    explanations = explain_report(report, tiny_encoder)
    assert not explanations.unavailable
    figures = explanations.all_figures()
    assert set(figures) == {"hyperplane_exact", "hyperplane_umap"} | {f"E{i}_{k}" for i in (1, 2)
                                                                      for k in PER_EDIT_FIGURES}
    for stem, fig in figures.items():
        assert UNTRAINED_BANNER in _figure_texts(fig), stem  # random weights are labelled on every figure
    buffer = io.BytesIO()
    figures["E2_relevancy_clip_dir"].savefig(buffer, format="png")  # the CLI test renders every kind to files
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
    edit = explanations.edits[1]
    assert edit.augclip.score == pytest.approx(report.edits[1].metrics["augclip"], abs=1e-5)
    assert edit.clip_t.score == pytest.approx(report.edits[1].metrics["clip_t"], abs=1e-5)
    assert edit.clip_dir.clip_dir == pytest.approx(report.edits[1].metrics["clip_dir"], abs=1e-4)
    # the map along v explains cs(E(I_edit), v), written out here from the report's own vectors
    v, edit_embedding = report.arrays.augclip[1].v, report.arrays.edit_embeddings[1].astype(np.float64)
    assert edit.augclip_v.score == pytest.approx(float(edit_embedding @ v / np.linalg.norm(edit_embedding)
                                                       / np.linalg.norm(v)), abs=1e-5)
    data = json.loads(explanations.to_json())
    assert data["untrained"] is True and "warning" in data
    assert set(data["edits"][0]["relevancy"]) == {"augclip", "augclip_v", "clip_t", "clip_dir"}
    # the comparison grid's tiles: every map of the edit, AugCLIP's two first
    assert [tile.title for tile in relevancy_tiles(report.arrays.edits[1].image, edit)] == [
        "AugCLIP map (toward the ideal edit)", "AugCLIP map (along the modification v)",
        "CLIP-T map (toward the target text)", "CLIPdir map, edit minus source"]
    assert len(data["edits"][0]["relevancy"]["augclip"]["grid"]) == 4
    assert data["hyperplane_exact"]["panels"][0]["points"][0]["kind"] == "source_attribute"
    assert len(data["hyperplane_umap"]["points"]) == 11


def test_trained_figures_carry_no_banner_and_missing_parts_say_why(report, tiny_encoder):
    chart = edit_rankings(report, 0).source
    chart.untrained = False
    assert UNTRAINED_BANNER not in _figure_texts(ranking_figure(chart))
    no_text = Evaluator(encoder=tiny_encoder).evaluate(report.arrays.source, report.arrays.edits[:1],
                                                       "a red ball on green grass", None, ATTRIBUTES)
    explanations = explain_report(no_text, tiny_encoder, umap=False, figures=False)
    edit = explanations.edits[0]
    assert edit.clip_dir is None and "source text" in edit.unavailable["clip_dir_relevancy"]
    assert edit.augclip is not None and explanations.umap is None
    only_second = explain_report(report, tiny_encoder, umap=False, figures=False, relevancy_edits=[1])
    assert only_second.edits[0].augclip is None and only_second.edits[1].clip_dir is not None
    with pytest.raises(InputError, match="out of range"):
        explain_report(report, tiny_encoder, umap=False, figures=False, relevancy_edits=[2])
    first = explain_report(report, tiny_encoder, umap=False, figures=False, relevancy_edits=[1],
                           relevancy_maps=["augclip"])
    assert (first.edits[1].augclip is not None, first.edits[1].clip_t, first.edits[0].augclip) == (True, None, None)
    with pytest.raises(InputError, match="relevancy_maps.*unknown"):
        explain_report(report, tiny_encoder, umap=False, figures=False, relevancy_maps=["clipdir"])
    # the maps left out are added later, equal to those computed in one call
    assert complete_relevancy(report, tiny_encoder, only_second) == [0]
    assert complete_relevancy(report, tiny_encoder, first, [1]) == [1] and first.options.relevancy_edits == (1,)
    assert complete_relevancy(report, tiny_encoder, first) == [0]
    for late in (only_second, first):
        assert complete_relevancy(report, tiny_encoder, late) == []
        assert (late.options.relevancy_edits, late.options.relevancy_maps) == (None, None)
    fresh = ClipEncoder(tiny_encoder.spec, device="cpu")  # no map cache: computed anew, in one call
    every = explain_report(report, fresh, umap=False, figures=False)
    for late_a, late_b, once in zip(only_second.edits, first.edits, every.edits):
        for late in (late_a, late_b):
            np.testing.assert_array_equal(late.augclip.raw, once.augclip.raw)
            np.testing.assert_array_equal(late.augclip_v.raw, once.augclip_v.raw)
            np.testing.assert_array_equal(late.clip_t.raw, once.clip_t.raw)
            np.testing.assert_array_equal(late.clip_dir.grid_difference(), once.clip_dir.grid_difference())
    with pytest.raises(InputError, match="unknown explanation option"):
        explain_report(report, tiny_encoder, umaps=False)
    without_encoder = explain_report(no_text, None, umap=False, figures=False)
    assert "no encoder" in without_encoder.unavailable["relevancy"]
    assert without_encoder.exact is not None and without_encoder.edits[0].rankings is not None


def test_explain_refuses_a_report_without_arrays_or_from_another_model(report, variant_specs_free_encoder):
    from augclip_demo.report import Report

    loaded = Report.from_json(report.to_json())
    with pytest.raises(InputError, match="in-memory"):
        explain_report(loaded, None)
    with pytest.raises(InputError, match="was computed with"):
        explain_report(report, variant_specs_free_encoder, umap=False, figures=False)
    with pytest.raises(InputError, match="clip_dir_difference"):
        explain_report(report, None, clip_dir_difference="ratio")


@pytest.fixture()
def variant_specs_free_encoder():
    """An encoder for another spec (never loaded: the mismatch is caught before any model work)."""
    from augclip_demo.inference import ClipEncoder

    return ClipEncoder("random:ViT-B-32", device="cpu")


@pytest.mark.slow
def test_cli_explain_writes_pngs_and_json(scene_files, tmp_path, capsys, umap_warm_seconds):
    """Every kind of figure rendered headless to a PNG file, through the real command."""
    import matplotlib

    backend = matplotlib.get_backend()
    attrs = tmp_path / "attrs.json"
    ATTRIBUTES.save(attrs)
    out = tmp_path / "explained"
    code = main(["explain", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 "--target", "a red ball on green grass", "--source-text", "a red ball", "--attributes", str(attrs),
                 "--clip-model", "random:tiny", "--device", "cpu", "--out", str(out), "--top-k", "2"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "UNTRAINED" in printed.upper() and "explanations.json" in printed
    names = {p.name for p in out.iterdir()}
    assert {"hyperplane_exact.png", "hyperplane_umap.png", "E1_relevancy_augclip.png", "E1_relevancy_clip_dir.png",
            "E1_relevancy_clip_t.png", "E1_source_changes.png", "E1_target_changes.png", "E1_alpha.png",
            "explanations.json", "report.json", "comparison.html"} == names
    for path in out.glob("*.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path.name
    assert matplotlib.get_backend() == backend  # figures use the object API: no pyplot, no backend switch
    data = json.loads((out / "explanations.json").read_text())
    assert data["options"]["top_k"] == 2 and data["edits"][0]["rankings"]["source_changes"]["omitted"] == 0
    assert json.loads((out / "report.json").read_text())["edits"][0]["name"] == "faithful.png"
    grid = (out / "comparison.html").read_text(encoding="utf-8")
    assert "faithful.png" in grid and grid.count('<img src="data:image/png;base64,') == 2 + 4  # images, 4 maps


def test_cli_explain_errors_are_one_line(tmp_path, capsys):
    code = main(["explain", "--source", str(tmp_path / "missing.png"), "--edited", str(tmp_path / "gone.png"),
                 "--target", "x", "--clip-model", "random:tiny", "--device", "cpu", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.png: file not found" in err[0]


def test_a_zero_modification_says_why_every_delta_is_zero():
    from augclip_demo.explain.rankings import RankedItem, RankingChart

    def axes_texts(fig) -> str:
        return " ".join(t.get_text() for sub in fig.subfigs for ax in sub.axes for t in ax.texts)

    zero = RankingChart(kind="source", title="Source attributes", xlabel="delta", total=2, omitted=0, caption="",
                        items=[RankedItem("a red box", 0.0, 1), RankedItem("a wall", 0.0, 2)])
    assert "v = 0" in axes_texts(ranking_figure(zero))
    moved = RankingChart(kind="source", title="Source attributes", xlabel="delta", total=2, omitted=0, caption="",
                         items=[RankedItem("a red box", -0.05, 1), RankedItem("a wall", 0.0, 2)])
    assert "v = 0" not in axes_texts(ranking_figure(moved))


def _fit_on_target_side(projection: str):
    """The source image placed inside the target cluster: c < 0."""
    result, src_attrs, tgt_attrs, src_img, edit_img = _synthetic_fit()
    inside = tgt_attrs.mean(axis=0)
    res = augclip_score(inside, edit_img, src_attrs, tgt_attrs, include_images=False, projection=projection)
    return res, np.vstack([src_attrs, tgt_attrs, inside / np.linalg.norm(inside), edit_img, res.ideal])


@pytest.mark.parametrize("case", ["source side", "target side, Eq. 8", "target side, App. B plain"])
def test_exact_caption_says_what_the_geometry_shows(case):
    """Each caption claim is checked against the coordinates: on the line, or v = 0 at the source."""
    from augclip_demo.explain.hyperplane import FitGroup, exact_caption

    if case == "source side":
        res, *parts = _synthetic_fit()
        vectors = np.vstack([*parts[:2], parts[2], parts[3], res.ideal])
    else:
        res, vectors = _fit_on_target_side("clamped" if "Eq. 8" in case else "plain")
    x, _, _ = exact_coordinates(vectors, res.w, res.b)
    source, ideal = len(vectors) - 3, len(vectors) - 1
    caption = exact_caption([FitGroup([0], res)], 1, include_images=False)
    if case == "source side":
        assert res.c > 0 and x[source] < 0 and abs(x[ideal]) < 1e-6
        assert "lies on the line" in caption and "v = 0" not in caption
    elif "Eq. 8" in case:
        assert res.c < 0 and x[source] > 0 and x[ideal] == pytest.approx(x[source], abs=1e-12)
        assert "v = 0" in caption and "lies on the line" not in caption
    else:
        assert res.c < 0 and x[source] > 0 and abs(x[ideal]) < 1e-6
        assert "back onto the line" in caption and "v = 0" not in caption
    assert "share one fit (attributes only)" in caption


def test_exact_caption_matches_the_fit_options_with_one_edit(tiny_encoder, scene_files):
    evaluator = Evaluator(encoder=tiny_encoder)
    one = evaluator.evaluate(scene_files["source"], [scene_files["faithful"]], "a red ball on green grass",
                             "a red ball", ATTRIBUTES)
    assert one.options["include_images"]
    caption = exact_view(one).caption
    assert "attributes only" not in caption and "One edit, one fit" in caption
    attributes_only = evaluator.rescore(one, AugCLIPOptions(include_images=False))
    assert "share one fit (attributes only)" in exact_view(attributes_only).caption


def test_2d_line_is_mapped_back_to_view_coordinates():
    from augclip_demo.explain.hyperplane import fit_line_2d

    # Two clusters far from the origin, split by the vertical line x = 100 (hand-placed).
    left = np.array([[90.0, 40.0], [92.0, 60.0], [94.0, 50.0], [91.0, 45.0]])
    right = np.array([[106.0, 42.0], [108.0, 58.0], [110.0, 50.0], [107.0, 55.0]])
    coords = np.vstack([left, right])
    labels = np.array([-1] * 4 + [1] * 4)
    w, b, accuracy = fit_line_2d(coords, labels, np.ones(8), C=1000.0)
    assert accuracy == 1.0
    assert abs(w[1]) < 0.15 * abs(w[0])  # the line is near vertical (within ~9 degrees)
    crossing = -b / w[0]  # where the line meets y = 0, in the view's coordinates
    assert 94.0 < crossing < 106.0
    np.testing.assert_array_equal(np.sign(coords @ w + b), labels)


def test_2d_line_on_overlapping_points_returns():
    from augclip_demo.explain.hyperplane import fit_line_2d

    # Overlapping classes: libsvm at the metric's 1e-12 tolerance took ~30 s on data like this.
    rng = np.random.default_rng(1)
    for _ in range(4):
        coords = rng.normal(size=(22, 2)) * rng.choice([0.3, 1, 3, 10]) + rng.normal(size=2) * 5
        w, b, accuracy = fit_line_2d(coords, np.array([-1] * 11 + [1] * 11), rng.uniform(0.01, 3, 22))
        assert np.all(np.isfinite(w)) and np.isfinite(b) and 0.0 <= accuracy <= 1.0


def test_an_edit_whose_modification_is_zero_has_no_map_along_v_and_says_why(tiny_encoder, scene_files):
    """A source list inside the target list leaves the source on the target side (c <= 0): v is zero, the ideal
    edit is the source, and the map along v is left out with the reason; the map toward the ideal stays."""
    attributes = Attributes(source=["a red ball"], target=["a red ball", "a white background"])
    report = Evaluator(encoder=tiny_encoder).evaluate(scene_files["source"], [scene_files["faithful"]],
                                                      "a red ball on white", "a red ball", attributes)
    assert not np.any(report.arrays.augclip[0].v)
    edit = explain_report(report, tiny_encoder, umap=False, rankings=False).edits[0]
    assert edit.augclip is not None and edit.augclip_v is None
    assert "modification v is zero" in edit.unavailable["augclip_v_relevancy"]
    assert "relevancy_augclip" in edit.figures  # the one-panel figure toward the ideal edit
