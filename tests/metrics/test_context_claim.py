"""The paper's central claim on constructed embeddings built from orthogonal concept directions.

Concepts: the source's identity (a particular dog), its background (grass), the target attribute
(a hat), plus the content a text-to-image model would invent (another dog-like identity, a studio
background). A faithful edit adds the hat and keeps identity and background; an excessively
modified edit has the hat but replaces identity and background; an excessively preserved edit is
the source with negligible noise. AugCLIP must rank the faithful edit first.
"""

from __future__ import annotations

import numpy as np

from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.metrics.clip_metrics import clip_dir

D = 24
rng = np.random.default_rng(1234)
basis = np.linalg.qr(rng.normal(size=(D, D)))[0].T
IDENTITY, BACKGROUND, HAT, OTHER_DOG, STUDIO, TEXT_GAP, *FREE = basis


def mix(*terms: tuple[float, np.ndarray], noise: float = 0.05) -> np.ndarray:
    v = sum(weight * direction for weight, direction in terms) + noise * rng.normal(size=D)
    return v / np.linalg.norm(v)


def build_case():
    source = mix((1.0, IDENTITY), (0.8, BACKGROUND))
    source_attrs = np.array([
        mix((1.0, IDENTITY), (0.3, FREE[0])),             # "a brown dog"
        mix((1.0, IDENTITY), (0.3, FREE[1])),             # "dog with floppy ears"
        mix((0.7, IDENTITY), (0.5, FREE[2])),             # "dog is sitting"
        mix((1.0, BACKGROUND), (0.3, FREE[3])),           # "green grass"
        mix((1.0, BACKGROUND), (0.3, FREE[4])),           # "sunny lawn"
    ])
    target_attrs = np.array([
        mix((1.0, HAT), (0.4, IDENTITY)),                 # "dog wears a hat"
        mix((1.0, HAT), (0.3, FREE[5])),                  # "hat is red"
        mix((0.9, HAT), (0.3, FREE[6])),                  # "hat has a brim"
    ])
    edits = {
        "faithful": mix((1.0, IDENTITY), (0.8, BACKGROUND), (0.9, HAT)),
        "excessive_modification": mix((1.0, HAT), (0.8, OTHER_DOG), (0.3, IDENTITY), (0.8, STUDIO)),
        "excessive_preservation": source + 0.01 * rng.normal(size=D),
    }
    source_text = mix((1.0, IDENTITY), (0.6, TEXT_GAP))
    target_text = mix((1.0, IDENTITY), (1.0, HAT), (0.6, TEXT_GAP))
    return source, source_attrs, target_attrs, edits, source_text, target_text


def test_augclip_prefers_the_faithful_edit(capsys):
    source, source_attrs, target_attrs, edits, source_text, target_text = build_case()
    augclip = {name: augclip_score(source, e, source_attrs, target_attrs).score for name, e in edits.items()}
    clipdir = {name: clip_dir(source, e, source_text, target_text) for name, e in edits.items()}
    assert max(augclip, key=augclip.get) == "faithful", augclip
    # Reported, not asserted: what the baseline prefers in the same construction.
    with capsys.disabled():
        print(f"\n[context test] AugCLIP: { {k: round(v, 4) for k, v in augclip.items()} }"
              f"\n[context test] CLIPdir: { {k: round(v, 4) for k, v in clipdir.items()} } "
              f"-> prefers {max(clipdir, key=clipdir.get)}")


def test_attributes_only_fit_also_prefers_the_faithful_edit():
    source, source_attrs, target_attrs, edits, *_ = build_case()
    scores = {name: augclip_score(source, e, source_attrs, target_attrs, include_images=False).score
              for name, e in edits.items()}
    assert max(scores, key=scores.get) == "faithful", scores


def test_ideal_edit_keeps_identity_and_adds_the_attribute():
    source, source_attrs, target_attrs, edits, *_ = build_case()
    res = augclip_score(source, edits["faithful"], source_attrs, target_attrs)
    ideal = res.ideal / np.linalg.norm(res.ideal)
    assert ideal @ HAT > source @ HAT + 0.2          # moved toward the hat
    assert ideal @ IDENTITY > 0.5 * (source @ IDENTITY)  # identity largely kept
    # Eq. 12: every target attribute gains similarity; Eq. 11: the source attributes lose far less
    # than the target attributes gain (the ideal keeps the source's content).
    assert res.target_deltas.min() > 0
    assert np.abs(res.source_deltas).max() < 0.5 * res.target_deltas.min()
