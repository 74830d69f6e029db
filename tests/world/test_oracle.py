"""AugCLIP on the world's perfect encoder (world.oracle): what the metric does when its model is right about
everything, so that what remains is the metric's and the attribute lists' doing (docs/world.md)."""

from __future__ import annotations

import numpy as np
import pytest

from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.world import EDIT_KINDS, make_edit, scene_phrases
from augclip_demo.world.oracle import OracleEncoder
from augclip_demo.world.world_sets import target_attributes

HELD_OUT_SEED = 20261129
ORACLE = OracleEncoder()


def _score(source, edit, src_attrs, tgt_attrs):
    """AugCLIP's result, or None where the metric refuses the fit (no plane separates the two sets)."""
    try:
        return augclip_score(source, edit, src_attrs, tgt_attrs)
    except ValueError as refused:
        assert "no separating direction" in str(refused)
        return None


def _scores(style: str, kinds: tuple[str, ...], per_kind: int = 3) -> list[tuple[str, dict[str, object]]]:
    """(kind, role -> AugCLIP result or None) for ``per_kind`` items of each kind (items as `world` draws
    them), for the correct, unchanged, over-edit and wrong results."""
    out = []
    for k in range(per_kind * len(EDIT_KINDS)):
        kind = EDIT_KINDS[k % len(EDIT_KINDS)]
        if kind not in kinds:
            continue
        edit = make_edit(np.random.default_rng([HELD_OUT_SEED, k]), kind)
        source = ORACLE.encode_scene(edit.source)
        src_attrs = ORACLE.encode_phrases(scene_phrases(edit.source))
        tgt_attrs = ORACLE.encode_phrases(target_attributes(edit, style))
        out.append((kind, {role: _score(source, ORACLE.encode_scene(edit.results[role]), src_attrs, tgt_attrs)
                           for role in ("correct", "unchanged", "over_edit", "wrong")}))
    return out


def test_the_oracle_names_every_fact_right():
    """Each phrase true of a scene is closer to it than every phrase of the same form that is false of it."""
    edit = make_edit(np.random.default_rng([HELD_OUT_SEED, 0]), "recolour")
    image = ORACLE.encode_scene(edit.source)
    true = ORACLE.encode_phrases(scene_phrases(edit.source)) @ image
    false = ORACLE.encode_phrases(scene_phrases(edit.results["wrong"])) @ image
    assert true.min() == pytest.approx(1 - ORACLE.gap**2, abs=0.35) and true.min() > 0
    wrong_only = [p for p in scene_phrases(edit.results["wrong"]) if p not in scene_phrases(edit.source)]
    assert wrong_only and np.all(ORACLE.encode_phrases(wrong_only) @ image == 0)
    assert false.max() <= true.max()
    with pytest.raises(ValueError, match="not an attribute phrase of the world"):
        ORACLE.encode_phrases(["a photo of a ball"])


def test_with_scene_lists_augclip_prefers_the_correct_edit_except_where_the_source_list_is_a_subset():
    """Every phrase of the source scene against every phrase of the target scene (the world's default): the
    correct edit beats the unchanged copy in every recolour, resize, move, remove and background item and the
    over-edit in every item. An added object brings phrases but takes none away, so the source list is a subset
    of the target list; the fit then leaves the source on the target side (c <= 0, no modification) and the
    unchanged copy scores exactly 1. A removal's unchanged copy has no sound score: its target set (the copy
    and the phrases left) lies inside its source set, so the fit either finds no plane (the metric refuses) or
    a vanishing one that throws the ideal edit far off (a score near 0)."""
    results = _scores("scene", EDIT_KINDS)
    assert len(results) == 21
    for kind, scored in results:
        assert scored["correct"].score > scored["over_edit"].score, kind
        if kind == "remove":
            assert scored["unchanged"] is None or scored["correct"].score > scored["unchanged"].score
        elif kind in ("recolour", "resize", "move", "background"):
            assert scored["correct"].score > scored["unchanged"].score, kind
        if kind == "add":
            assert scored["unchanged"].c <= 0 and scored["unchanged"].score == pytest.approx(1.0, abs=1e-12)
            assert scored["correct"].score < scored["unchanged"].score


def test_with_changed_lists_the_unchanged_copy_loses_and_the_over_edit_of_a_background_wins():
    """Only what the edit brings as the target list: the correct edit beats the unchanged copy and the wrong
    edit in every item; but the plane now points away from every source phrase, so an over-edit that also
    changes what should stay (every object's colour, on a background change) moves further its way and wins."""
    results = _scores("changed", EDIT_KINDS)
    for kind, scored in results:
        if kind == "remove":  # a removal brings no phrase: its list is the target scene's, as above
            assert scored["unchanged"] is None or scored["correct"].score > scored["unchanged"].score
        else:
            assert scored["correct"].score > scored["unchanged"].score, kind
        assert scored["correct"].score > scored["wrong"].score, kind
        if kind == "background":
            assert scored["over_edit"].score > scored["correct"].score
