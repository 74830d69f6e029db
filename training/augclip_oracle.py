"""How often AugCLIP prefers the correct world edit when its encoder is perfect (world.oracle), per edit kind
and attribute-list style: what the metric and the lists do on their own, with no model to blame.

    python training/augclip_oracle.py --items 140 --seed 20261129
"""

from __future__ import annotations

import argparse

import numpy as np

from augclip_demo.choices import EDIT_KINDS, TARGET_ATTRIBUTE_STYLES
from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.world import make_edit, scene_phrases
from augclip_demo.world.oracle import OracleEncoder
from augclip_demo.world.world_sets import target_attributes

OTHERS = ("unchanged", "over_edit", "partial", "wrong")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=140)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--gap", type=float, default=0.8, help="the oracle's modality gap (world.oracle)")
    args = parser.parse_args()
    oracle = OracleEncoder(gap=args.gap)
    print(f"AugCLIP on the perfect encoder (gap {args.gap}), {args.items} world items of seed {args.seed}: "
          "share of items where the correct edit scores above each other result (a refused fit never does)")
    for style in TARGET_ATTRIBUTE_STYLES:
        wins: dict[str, dict[str, list[bool]]] = {k: {o: [] for o in OTHERS} for k in EDIT_KINDS}
        for k in range(args.items):
            kind = EDIT_KINDS[k % len(EDIT_KINDS)]
            edit = make_edit(np.random.default_rng([args.seed, k]), kind)
            source = oracle.encode_scene(edit.source)
            src_attrs = oracle.encode_phrases(scene_phrases(edit.source))
            tgt_attrs = oracle.encode_phrases(target_attributes(edit, style))
            scores = {}
            for role, scene in edit.results.items():
                try:
                    scores[role] = augclip_score(source, oracle.encode_scene(scene), src_attrs, tgt_attrs).score
                except ValueError:  # no plane separates the sets: no score
                    scores[role] = None
            for other in OTHERS:
                wins[kind][other].append(scores["correct"] is not None and (
                    scores[other] is None or scores["correct"] > scores[other]))
        print(f"\n--target-attributes {style}")
        print("| kind | " + " | ".join(f"> {o}" for o in OTHERS) + " |")
        print("| --- |" + " --- |" * len(OTHERS))
        for kind in EDIT_KINDS:
            print(f"| {kind} | " + " | ".join(f"{np.mean(wins[kind][o]):.2f}" for o in OTHERS) + " |")
        print("| all | " + " | ".join(f"{np.mean([w for k in EDIT_KINDS for w in wins[k][o]]):.2f}"
                                      for o in OTHERS) + " |")


if __name__ == "__main__":
    main()
