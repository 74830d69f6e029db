"""How often each metric of a scored ``world`` set ranks the correct edit above each other result, overall and
per edit kind: the right-hand columns of docs/world.md's table ("What the metrics do here").

    augclip-demo world /tmp/w --items 140 --seed 20261129
    augclip-demo batch /tmp/w/manifest.jsonl --out /tmp/w/results.jsonl --clip-model shapes:tiny \\
        --metrics augclip,clip_dir,clip_i,clip_t,l2,bpm --bpm-regions masks
    python training/world_table.py /tmp/w/manifest.jsonl /tmp/w/results.jsonl

An item where the metric has no value for either edit of a pair is left out of that pair's share (as
``protocol`` leaves it out); the count compared is shown when items were left out. L2 is negated, so higher is
better everywhere.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

OTHERS = ("unchanged", "over_edit", "partial", "wrong")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--per-kind", default="augclip", help="the metric whose rates are also shown per kind")
    args = parser.parse_args()
    kinds = {}
    for line in args.manifest.read_text().splitlines():
        item = json.loads(line)
        kinds[item["id"]] = item["meta"]["world"]["kind"]
    rows = []
    for line in args.results.read_text().splitlines():
        record = json.loads(line)
        scores = {e["name"]: {k: (-v if k == "l2" else v) for k, v in e["metrics"].items() if v is not None}
                  for e in record["edits"]}
        rows.append((kinds[record["id"]], scores))
    metrics = sorted({m for _, scores in rows for edit in scores.values() for m in edit})

    def rate(selected, metric: str, other: str) -> str:
        wins = [s["correct"][metric] > s[other][metric] for _, s in selected
                if s["correct"].get(metric) is not None and s[other].get(metric) is not None]
        share = f"{np.mean(wins):.2f}" if wins else "-"
        return share if len(wins) == len(selected) else f"{share} (of {len(wins)})"

    print(f"{len(rows)} items: share where the correct edit scores above each other result")
    print("| metric | " + " | ".join(f"> {o}" for o in OTHERS) + " |")
    for metric in metrics:
        print(f"| {metric} | " + " | ".join(rate(rows, metric, o) for o in OTHERS) + " |")
    print(f"\n{args.per_kind} per edit kind")
    print("| kind | items | " + " | ".join(f"> {o}" for o in OTHERS) + " |")
    for kind in sorted(set(kinds.values())):
        selected = [r for r in rows if r[0] == kind]
        if selected:
            print(f"| {kind} | {len(selected)} | "
                  + " | ".join(rate(selected, args.per_kind, o) for o in OTHERS) + " |")


if __name__ == "__main__":
    main()
