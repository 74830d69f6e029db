"""What the metrics and explanations mean, checked where the answer is known: the toy CLIP trained on the
shapes world (``shapes:tiny``) on world scenes it never saw (random streams the training never drew).

Every figure here is computed by the test from the public entry points' outputs (the results file, the
report, the explanation maps, the encoder's embeddings), never by the code that produced them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.attributes import Attributes
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.explain.explanations import ExplainOptions, explain_report
from augclip_demo.inference.clip_encoder import get_encoder
from augclip_demo.pipeline import Evaluator
from augclip_demo.world import CONCEPTS, draw_scene, random_scene, write_world
from augclip_demo.world.concepts import BACKGROUND_PHRASES, POSITION_WORDS, article

MODEL = "shapes:tiny"
#: A seed no training or zero-shot stream uses (training: [0, i, 1]; its zero-shot check: [0, i, 2]).
HELD_OUT_SEED = 20261129


@pytest.fixture(scope="module")
def encoder():
    return get_encoder(Settings.from_env(), clip_model=MODEL, device="cpu")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return write_world(tmp_path_factory.mktemp("world") / "set", 70, seed=HELD_OUT_SEED)


def _items(manifest: Path) -> list[dict]:
    return [json.loads(line) for line in manifest.read_text().splitlines()]


def test_the_shipped_model_is_labelled_a_toy_and_loads_from_its_folder(encoder):
    info = encoder.info()
    assert "toy model trained on synthetic shapes" in info.label and not info.untrained
    assert encoder.weights_source.endswith("shipped/shapes-tiny")


@pytest.mark.slow
def test_held_out_zero_shot_accuracy_per_concept(encoder):
    """Each object's colour, shape, size and position, and the background, named by the closest prompt among
    prompts that change only that concept (a shape only where the object's colour is unique in its scene)."""
    scenes = [random_scene(np.random.default_rng([HELD_OUT_SEED, i, 2])) for i in range(300)]
    images = encoder.encode_images([draw_scene(s).image for s in scenes]).astype(np.float64)
    hits: dict[str, list[bool]] = {c: [] for c in CONCEPTS}

    def closest(prompts: list[str], image: np.ndarray) -> int:
        return int(np.argmax(encoder.encode_texts(prompts).astype(np.float64) @ image))

    for image, scene in zip(images, scenes):
        colours = [o.colour for o in scene.objects]
        for obj in scene.objects:
            hits["colour"].append(closest([f"{article(c)} {c} {obj.shape}" for c in CONCEPTS["colour"]], image)
                                  == CONCEPTS["colour"].index(obj.colour))
            hits["size"].append(closest([f"{article(z)} {z} {obj.shape}" for z in CONCEPTS["size"]], image)
                                == CONCEPTS["size"].index(obj.size))
            hits["position"].append(closest([f"the {obj.shape} is {POSITION_WORDS[p]}" for p in CONCEPTS["position"]],
                                            image) == CONCEPTS["position"].index(obj.position))
            if colours.count(obj.colour) == 1:
                hits["shape"].append(closest([f"{article(obj.colour)} {obj.colour} {s}" for s in CONCEPTS["shape"]],
                                             image) == CONCEPTS["shape"].index(obj.shape))
        hits["background"].append(closest([BACKGROUND_PHRASES[b] for b in CONCEPTS["background"]], image)
                                  == CONCEPTS["background"].index(scene.background))
    accuracy = {c: float(np.mean(h)) for c, h in hits.items()}
    # The targets: 0.9 for colour and shape, 0.8 for position and background. The shipped weights:
    # colour 0.901 (528 of 586 objects), shape 0.920, size 0.959, position 0.962, background 1.00 here (chance
    # 0.11, 0.17, 0.33, 0.20, 0.20). The other floors are the shipped accuracy less about 0.02, so a change that
    # costs the model what it knows fails here.
    assert accuracy["colour"] >= 0.9 and accuracy["shape"] >= 0.9, accuracy
    assert accuracy["size"] >= 0.94 and accuracy["position"] >= 0.94 and accuracy["background"] >= 0.99, accuracy


@pytest.fixture(scope="module")
def results(world, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results") / "results.jsonl"
    assert main(["batch", str(world), "--clip-model", MODEL, "--metrics", "augclip,clip_dir,clip_i,clip_t,l2",
                 "--out", str(out)]) == 0
    return out


def _scores(results: Path) -> list[dict[str, dict[str, float]]]:
    """Per item: edit name -> metric -> value (lower-is-better L2 negated, so higher is better everywhere)."""
    rows = []
    for line in results.read_text().splitlines():
        record = json.loads(line)
        rows.append({e["name"]: {k: (-v if k == "l2" else v) for k, v in e["metrics"].items() if v is not None}
                     for e in record["edits"]})
    return rows


def _preference_rate(rows, metric: str, better: str, worse: str) -> float:
    """Share of the items in which ``metric`` ranks ``better`` above ``worse`` (a missing value never does)."""
    def prefers(row) -> bool:
        a, b = row[better].get(metric), row[worse].get(metric)
        return a is not None and b is not None and a > b

    return float(np.mean([prefers(r) for r in rows]))


#: Where the shipped weights do not reach a target yet (measured on this seed's set; docs/world.md): each such test
#: is expected to fail, strictly, so the day a model reaches the target the suite says so.
_BELOW_TARGET = pytest.mark.xfail(strict=True, reason="shapes:tiny does not reach this target yet (docs/world.md)")


@pytest.mark.slow
@_BELOW_TARGET
def test_augclip_prefers_the_correct_edit_over_the_unchanged_copy_and_the_over_edit(results):
    """The issue's target: 90% over the unchanged copy, 80% over the over-edit (measured: 0.71 over the unchanged
    copy, 0.81 over the over-edit)."""
    rows = _scores(results)
    assert _preference_rate(rows, "augclip", "correct", "unchanged") >= 0.9
    assert _preference_rate(rows, "augclip", "correct", "over_edit") >= 0.8


@pytest.mark.slow
def test_augclip_prefers_the_correct_edit_to_the_over_edit_and_the_wrong_edit(results):
    """What AugCLIP does meet with the world's scene lists (shipped weights: 0.81 over the over-edit, 0.81 over
    the wrong edit; a perfect encoder: 1.00 and 0.86, docs/world.md)."""
    rows = _scores(results)
    assert _preference_rate(rows, "augclip", "correct", "over_edit") >= 0.75
    assert _preference_rate(rows, "augclip", "correct", "wrong") >= 0.65


@pytest.mark.slow
def test_the_papers_claims_that_hold_here_and_the_protocol_counts_them(results, capsys):
    """CLIP-I and L2 prefer the unchanged copy to the correct edit (the failure AugCLIP's paper describes),
    CLIPdir and CLIP-T prefer the correct edit to the unchanged copy; `protocol`'s AccBoth equals a count
    made here from the results file."""
    rows = _scores(results)
    assert len(rows) == 70
    for metric in ("clip_i", "l2"):
        assert _preference_rate(rows, metric, "unchanged", "correct") >= 0.9, metric
    for metric in ("clip_dir", "clip_t"):
        assert _preference_rate(rows, metric, "correct", "unchanged") >= 0.8, metric
    # the protocol's figures over the same run agree with a count made here
    assert main(["protocol", str(results), "--json", str(results.with_suffix(".protocol.json"))]) == 0
    capsys.readouterr()
    figures = json.loads(results.with_suffix(".protocol.json").read_text())["datasets"]["world"]["metrics"]
    for metric in ("augclip", "clip_dir", "clip_i", "clip_t", "l2"):
        # AccBoth counts the items whose three edits all have the metric (as the protocol leaves the others out)
        full = [r for r in rows if all(metric in r[role] for role in ("correct", "unchanged", "over_edit"))]
        both = np.mean([r["correct"][metric] > r["unchanged"][metric] and r["correct"][metric] > r["over_edit"][metric]
                        for r in full])
        assert figures[metric]["acc_both"]["n"] == len(full)
        assert figures[metric]["acc_both"]["value"] == pytest.approx(both, abs=1e-12)
        assert figures[metric]["acc_both"]["ci_low"] <= both <= figures[metric]["acc_both"]["ci_high"]


def _recolour_items(world: Path) -> list[dict]:
    return [i for i in _items(world / "manifest.jsonl" if world.is_dir() else world)
            if i["meta"]["world"]["kind"] == "recolour"]


def _object_mask(world: Path, item: dict) -> np.ndarray:
    edited = item["meta"]["world"]["edited"]
    names = item["meta"]["world"]["roles"]
    path = item["object_masks"]["edits"][names.index("correct")][edited]
    return np.asarray(Image.open(world.parent / path)) > 127


def _correct_edit(world: Path, item: dict) -> Path:
    """The path of ``item``'s correct edit."""
    return world.parent / item["edits"][item["meta"]["world"]["roles"].index("correct")]["path"]


def _score_correct(evaluator: Evaluator, world: Path, item: dict):
    """The report of ``item``'s correct edit, scored with the item's own attribute lists."""
    return evaluator.evaluate(world.parent / item["source"], [_correct_edit(world, item)], item["target_text"],
                              item["source_text"], Attributes(item["attributes"]["source"],
                                                              item["attributes"]["target"]))


def _hit(values: np.ndarray, mask: np.ndarray, grid: int) -> bool:
    """Whether the map's maximum lies on the object, within the pointing game's tolerance: half a patch of the
    model's ``grid`` x ``grid`` map, in pixels of the scene."""
    y, x = np.unravel_index(int(np.nanargmax(values)), values.shape)
    ys, xs = np.nonzero(mask)
    return bool(np.min(np.hypot(ys - y, xs - x)) <= 0.5 * mask.shape[0] / grid)


#: The maps of the pointing game: AugCLIP's toward the ideal edit and along its modification v, and CLIP-T's.
_POINTING_MAPS = ("augclip", "augclip_v", "clip_t")


def _pointing_rates(hits: dict[str, list[bool]]) -> dict[str, float]:
    assert all(len(h) == 10 for h in hits.values()), hits
    return {name: float(np.mean(h)) for name, h in hits.items()}


@pytest.fixture(scope="module")
def recolour_maps(world) -> list[tuple[np.ndarray, dict[str, object]]]:
    """(the recoloured object's mask, map name -> relevancy or None) of each recolour item's correct edit, in
    Python (Evaluator + explain_report); the map along v is None where v is zero."""
    evaluator = Evaluator(MODEL, "cpu")
    out = []
    for item in _recolour_items(world):
        report = _score_correct(evaluator, world, item)
        maps = explain_report(report, evaluator.encoder, ExplainOptions(umap=False, rankings=False, figures=False))
        out.append((_object_mask(world, item), {name: getattr(maps.edits[0], name) for name in _POINTING_MAPS}))
    assert len(out) == 10
    return out


@pytest.fixture(scope="module")
def python_hits(recolour_maps) -> dict[str, list[bool]]:
    """Pointing game in Python: per map, whether its maximum falls on the recoloured object (no map: a miss)."""
    return {name: [maps[name] is not None and _hit(maps[name].image_map(), mask, maps[name].grid_size[0])
                   for mask, maps in recolour_maps] for name in _POINTING_MAPS}


@pytest.mark.slow
def test_relevancy_maps_weigh_more_on_the_recoloured_object_than_on_the_rest(recolour_maps):
    """The weaker claim the shipped weights meet: each map's mean over the recoloured object exceeds its mean
    over the whole image in at least 80% of the items, and by a factor of 2 on average (shipped weights: the
    AugCLIP map toward the ideal edit in all the items, 4.9 times; along v in 90%, 11.2 times; CLIP-T's in 90%,
    7.0 times). An edit with no map along v (v is zero) counts as a map that does not."""
    for name in _POINTING_MAPS:
        ratios = []
        for mask, maps in recolour_maps:
            if maps[name] is None:
                ratios.append(0.0)
                continue
            values = maps[name].image_map().astype(np.float64)
            values = np.where(np.isnan(values), np.nanmin(values), values)
            ratios.append(values[mask].mean() / values.mean() if values.mean() > 0 else 0.0)
        assert np.mean(np.array(ratios) > 1) >= 0.8 and np.mean(ratios) >= 2, (name, ratios)


def _world_vocabulary():
    """Every attribute phrase the world can say (any shape with any colour, size or position; any background)."""
    from augclip_demo.attributes.vocabulary import Vocabulary
    from augclip_demo.world import COLOURS, SHAPES, SIZES
    from augclip_demo.world.scenes import SceneObject, scene_phrases

    phrases: list[str] = []
    for shape in SHAPES:
        for colour in COLOURS:
            for size in SIZES:
                for position in POSITION_WORDS:
                    obj = SceneObject(shape, colour, size, 0.1, position, (0.5, 0.5))
                    phrases += [p for p in scene_phrases(_scene_of(obj))[:-1] if p not in phrases]
    phrases += list(BACKGROUND_PHRASES.values())
    return Vocabulary(tuple(phrases), tuple("world" for _ in phrases), "world-1")


def _scene_of(obj):
    from augclip_demo.world.scenes import Scene

    return Scene("grass", 0, (obj,))


@pytest.mark.slow
def test_clip_vocab_given_the_world_phrases_ranks_a_scenes_true_attributes_first(encoder, tmp_path):
    """The clip-vocab provider with the world's phrase list as its vocabulary: precision at 5 of the source
    attributes it picks (every scene has at least five true phrases)."""
    from augclip_demo.attributes.clip_vocab import ClipVocabProvider
    from augclip_demo.world.scenes import scene_phrases

    provider = ClipVocabProvider(encoder, settings=Settings.from_env().replace(cache_dir=tmp_path), source_k=5,
                                 max_similarity=1.0, include_source_text=False, vocabulary=_world_vocabulary(),
                                 use_cache=False)
    precision = []
    for i in range(60):
        scene = random_scene(np.random.default_rng([HELD_OUT_SEED, i, 3]))
        picked = provider.extract(draw_scene(scene).image, "a picture").source
        assert len(picked) == 5
        precision.append(np.mean([p in scene_phrases(scene) for p in picked]))
    assert float(np.mean(precision)) >= 0.8, float(np.mean(precision))


@pytest.mark.slow
def test_the_hyperplane_puts_each_sides_own_attributes_on_its_side(encoder, world):
    """For every item and edit kind, the phrases only the source scene has lie on the source side of the fitted
    hyperplane and the phrases only the target has on the target side (the shared ones say nothing)."""
    evaluator = Evaluator(MODEL, "cpu")
    placed = {"source": [], "target": []}
    for item in _items(world)[:35]:
        source, target = item["attributes"]["source"], item["attributes"]["target"]
        report = _score_correct(evaluator, world, item)
        fit = report.arrays.augclip[0]
        for side, own, other, sign in (("source", source, target, -1), ("target", target, source, 1)):
            only = [p for p in own if p not in other]
            if only:
                embedded = encoder.encode_texts(only).astype(np.float64)
                placed[side] += [sign * fit.signed_distance(e) > 0 for e in embedded]
    rates = {side: float(np.mean(v)) for side, v in placed.items()}
    assert min(rates.values()) >= 0.9, rates


@pytest.mark.slow
def test_the_umap_view_puts_each_sides_own_attributes_on_its_side(world):
    """The UMAP view's refitted line (explain_report, as the page and `explain` draw it) keeps the phrases only
    the source has on the source side and those only the target has on the target side."""
    evaluator = Evaluator(MODEL, "cpu")
    placed = {"source_attribute": [], "target_attribute": []}
    for item in _items(world):  # all 70: over 14 items (26 phrases a side) one phrase moves a share by 0.04
        source, target = item["attributes"]["source"], item["attributes"]["target"]
        report = _score_correct(evaluator, world, item)
        view = explain_report(report, evaluator.encoder, ExplainOptions(relevancy=False, rankings=False,
                                                                         figures=False)).umap
        line = view.lines[0]
        for kind, own, other, sign in (("source_attribute", source, target, -1),
                                       ("target_attribute", target, source, 1)):
            for i in view.points.indices(kind):
                if view.points.texts[i] in own and view.points.texts[i] not in other:
                    placed[kind].append(sign * (float(line.w @ view.coords[i]) + line.b) > 0)
    rates = {side: float(np.mean(v)) for side, v in placed.items()}
    assert min(rates.values()) >= 0.8, rates  # the shipped weights: 0.82 and 0.85 (130 phrases a side)


@pytest.fixture(scope="module")
def explain_hits(world, tmp_path_factory) -> dict[str, list[bool]]:
    """The pointing game on the maps `augclip-demo explain` writes (explanations.json): each map's largest grid
    cell, placed on the 128-pixel scene through the saved view box, on the object or not."""
    tmp_path = tmp_path_factory.mktemp("explain")
    hits: dict[str, list[bool]] = {name: [] for name in _POINTING_MAPS}
    for n, item in enumerate(_recolour_items(world)):
        folder = world.parent
        correct = _correct_edit(world, item)
        attributes = tmp_path / f"attributes-{n}.json"
        attributes.write_text(json.dumps({"source_attributes": item["attributes"]["source"],
                                          "target_attributes": item["attributes"]["target"]}))
        out = tmp_path / f"explain-{n}"
        assert main(["explain", "--source", str(folder / item["source"]), "--edited", str(correct),
                     "--target", item["target_text"], "--source-text", item["source_text"], "--attributes",
                     str(attributes), "--clip-model", MODEL, "--no-umap", "--out", str(out)]) == 0
        saved = json.loads((out / "explanations.json").read_text())
        assert "toy model trained on synthetic shapes" in saved["warning"]
        mask = _object_mask(world, item)
        for name in hits:
            relevancy = saved["edits"][0]["relevancy"].get(name)
            if relevancy is None:  # no map along a zero v: a miss
                hits[name].append(False)
                continue
            grid = np.array(relevancy["grid"], dtype=np.float64)
            row, col = np.unravel_index(int(np.argmax(grid)), grid.shape)
            x0, y0, x1, y1 = relevancy["view_box"]
            centre = np.zeros(mask.shape, dtype=bool)
            centre[int(y0 + (row + 0.5) * (y1 - y0) / grid.shape[0]), int(x0 + (col + 0.5) * (x1 - x0) / grid.shape[1])] = True
            hits[name].append(_hit(centre.astype(np.float64), mask, grid.shape[0]))
    return hits


@pytest.fixture(scope="module")
def page_hits(world) -> dict[str, list[bool]]:
    """The pointing game through the page's own session functions (Evaluate, then the explanation stage and the
    shown edit's other maps, as the Evaluate tab calls them)."""
    from augclip_demo.pipeline import AugCLIPOptions
    from augclip_demo.ui.evaluate import session as page

    settings = Settings.from_env().replace(clip_model=MODEL, device="cpu")
    hits: dict[str, list[bool]] = {name: [] for name in _POINTING_MAPS}
    for item in _recolour_items(world):
        folder = world.parent
        report, session = page.evaluate(
            settings, page.Session(), source=str(folder / item["source"]), edits=[str(_correct_edit(world, item))],
            target_text=item["target_text"], source_text=item["source_text"], provider="manual",
            source_attrs_box="\n".join(item["attributes"]["source"]),
            target_attrs_box="\n".join(item["attributes"]["target"]), options=AugCLIPOptions(),
            progress=lambda fraction, stage: None)
        assert "toy model trained on synthetic shapes" in report.verdict()
        _, _, session = page.explain(settings, session)
        page.shown_maps(settings, session)
        mask = _object_mask(world, item)
        for name in hits:
            relevancy = getattr(session.explained.edits[0], name)
            hits[name].append(relevancy is not None and _hit(relevancy.image_map(), mask, relevancy.grid_size[0]))
    return hits


#: The pointing game's three paths: Python (Evaluator + explain_report), `explain`'s saved maps, the page's functions.
_PATHS = ("python_hits", "explain_hits", "page_hits")


@pytest.mark.slow
@pytest.mark.parametrize("path", _PATHS)
def test_the_maps_point_at_the_recoloured_object(path, request):
    """Pointing game for each recolour item's correct edit, on each path: the maximum of AugCLIP's map along its
    modification v and of the CLIP-T map falls on the recoloured object in at least 80% of the items."""
    rates = _pointing_rates(request.getfixturevalue(path))
    assert rates["augclip_v"] >= 0.8 and rates["clip_t"] >= 0.8, (path, rates)


@pytest.mark.slow
@_BELOW_TARGET
@pytest.mark.parametrize("path", _PATHS)
def test_augclip_s_map_toward_the_ideal_edit_points_at_the_recoloured_object(path, request):
    """The same for AugCLIP's map toward the ideal edit, which explains the whole similarity (measured: 0.5)."""
    assert _pointing_rates(request.getfixturevalue(path))["augclip"] >= 0.8


@pytest.mark.slow
def test_the_demo_example_ranks_the_correct_edit_first_and_maps_the_moved_object():
    """What the demo button shows a newcomer (its example, through the page's own session functions): AugCLIP,
    CLIPdir and CLIP-T rank the correct edit first, CLIP-I the unchanged copy, and AugCLIP's two maps and CLIP-T's
    map of the correct edit have their maximum on the moved object."""
    from augclip_demo.pipeline import AugCLIPOptions
    from augclip_demo.ui import first_contact
    from augclip_demo.ui.evaluate import session as page
    from augclip_demo.ui.examples import load_examples

    example = next(e for e in load_examples() if e.id == first_contact.DEMO_EXAMPLE)
    settings = Settings.from_env().replace(clip_model=first_contact.DEMO_CLIP, device="cpu")
    report, session = page.evaluate(
        settings, page.Session(), source=str(example.source), edits=[str(p) for p in example.edits],
        target_text=example.target_text, source_text=example.source_text, provider="manual",
        source_attrs_box="\n".join(example.source_attributes), target_attrs_box="\n".join(example.target_attributes),
        options=AugCLIPOptions(), progress=lambda fraction, stage: None)
    names = [Path(p).stem for p in example.edits]
    best = {metric: names[int(np.argmax([e.metrics[metric] for e in report.edits]))]
            for metric in ("augclip", "clip_dir", "clip_t", "clip_i")}
    assert best == {"augclip": "correct", "clip_dir": "correct", "clip_t": "correct", "clip_i": "unchanged"}, best
    _, _, session = page.explain(settings, session)
    page.shown_maps(settings, session)
    manifest = json.loads((Path(example.source).parent / "example.json").read_text())
    moved = manifest["meta"]["world"]["edited"]
    correct = names.index("correct")
    mask_path = Path(example.source).parent.parent / manifest["object_masks"]["edits"][correct][moved]
    mask = np.asarray(Image.open(mask_path)) > 127
    for name in _POINTING_MAPS:
        relevancy = getattr(session.explained.edits[correct], name)
        assert _hit(relevancy.image_map(), mask, relevancy.grid_size[0]), name
