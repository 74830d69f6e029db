"""Cost of the hyperplane views: ``python benchmarks/views_bench.py [--edits 2] [--repeats 5]``.

Prints median wall seconds of, for made-up embeddings of the size of a real evaluation (no model):
the static exact and UMAP figures (build with label placement, then save as PNG) and the interactive
Plotly specifications the app sends (built from the same geometry). The figure rows are the ones
label placement could slow down (it lays the figure out once before placing, then freezes that
layout so saving does not lay it out again).
Run on a quiet machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=2)
    parser.add_argument("--source-attributes", type=int, default=8)
    parser.add_argument("--target-attributes", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from augclip_demo.explain.figures import exact_view_figure, save_figure, umap_view_figure
    from tests.support.crowded_views import crowded_exact_view, crowded_umap_view

    sizes = dict(n_edits=args.edits, n_source=args.source_attributes, n_target=args.target_attributes)
    exact, umap = crowded_exact_view(**sizes), crowded_umap_view(**sizes)
    folder = Path(tempfile.mkdtemp(prefix="views-bench-"))
    rows = {
        "exact figure: build": lambda: exact_view_figure(exact),
        "exact figure: build + save PNG": lambda: save_figure(exact_view_figure(exact), folder / "exact.png"),
        "UMAP figure: build": lambda: umap_view_figure(umap),
        "UMAP figure: build + save PNG": lambda: save_figure(umap_view_figure(umap), folder / "umap.png"),
    }
    try:
        from augclip_demo.explain.interactive import exact_view_spec, umap_view_spec

        rows["interactive exact + UMAP specs (JSON)"] = lambda: (json.dumps(exact_view_spec(exact, 0)),
                                                                 json.dumps(umap_view_spec(umap, exact)))
    except ImportError:  # a branch without the interactive views
        pass
    median_seconds(rows["exact figure: build"], 1)  # imports and font cache out of the way
    print(f"{args.edits} edits, {args.source_attributes} + {args.target_attributes} attributes, "
          f"median of {args.repeats}")
    for name, fn in rows.items():
        print(f"  {name:<42} {median_seconds(fn, args.repeats):7.3f} s")


if __name__ == "__main__":
    main()
