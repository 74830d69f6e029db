"""Cold app start -> first full result with the offline attribute provider (clip-vocab), stage by stage.

    python benchmarks/cold_start_bench.py                       # store built ahead (goal: <= 10 s)
    python benchmarks/cold_start_bench.py --mode no-store       # store not built: when the progress bar moved
    python benchmarks/cold_start_bench.py --mode both
    python benchmarks/cold_start_bench.py --numba-cache keep    # numba's on-disk cache as this machine has it

Everything runs in a temporary AUGCLIP_CACHE_DIR. With ``--mode ahead`` the vocabulary store is first
built by ``augclip-demo download --vocab`` (timed apart, in its own process). Then a FRESH Python
process does what the app does from its start, timed from the moment the parent starts it:

* imports: the app module (Gradio, torch, open_clip and the package);
* app build: ``build_app`` (it starts the background work: CLIP load, UMAP's numba compile and the
  store preload);
* one Evaluate press sent at once, as a person clicking an example the moment the page shows: the
  example's source, its first two edits, target and source text, provider clip-vocab, empty attribute
  lists (``ui.evaluate.session.evaluate``: it waits for the CLIP load, extracts attributes, scores), then the
  explanations exactly as the page's explanation stage makes them (``ui.evaluate.session.explain``), then
  what the page fetches after it (the UMAP view and the remaining figures, ``ui.evaluate.session.explain_rest``).

The first full result is what the page shows when its explanation stage ends: the scores, the
selected edit's AugCLIP relevancy maps, the rankings and the exact hyperplane view. That edit's CLIP-T
and CLIPdir maps (the page's next stage), then the UMAP view (its numba compile runs at start-up) and
the figures of the other tabs and edits arrive after it; every time is printed, with the 30 s target
beside the first. ``--numba-cache fresh`` (default) points NUMBA_CACHE_DIR at an
empty folder, as on a Space's first start.

CLIP defaults to ``random:ViT-B-16``: the real architecture with random weights (same compute).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "examples" / "flower-pink"
TARGET_S = 10.0  # the CPU page goal: cold start to the first full result
MARK = "COLD-START-RESULT "


# ------------------------------------------------------------------------------------ the fresh process
def child() -> None:
    t0 = float(os.environ["COLD_BENCH_T0"])
    marks: dict[str, float] = {"python_started": time.time() - t0}

    def mark(name: str) -> None:
        marks[name] = time.time() - t0

    sys.path.insert(0, str(ROOT))
    import augclip_demo.ui.app as app_module
    from augclip_demo.config import Settings
    from augclip_demo.ui import status as status_module
    from augclip_demo.ui.evaluate import session as logic

    mark("imports")
    umap_done: dict[str, float] = {}
    warm_up = status_module._warm_up_umap

    def timed_warm_up(*args) -> None:  # the app's own warm-up, with its end noted
        warm_up(*args)
        umap_done["at"] = time.time() - t0
        began = getattr(status_module, "UMAP_WARM_UP_BEGAN", [None])[0]  # an older app does not note it
        if began is not None:
            umap_done["start"] = began - t0

    status_module._warm_up_umap = timed_warm_up
    settings = Settings.from_env()
    demo = app_module.build_app(settings)
    mark("app_build")

    state_seen: dict[str, float] = {}

    def watch() -> None:  # when the background CLIP load finished and the store was read
        from augclip_demo.attributes import clip_vocab

        status = status_module.model_status(settings)
        while len(state_seen) < 2 and status.state != "error":
            if status.state != "loading" and "clip" not in state_seen:
                state_seen["clip"] = time.time() - t0
            if clip_vocab._MEMO and "store" not in state_seen:  # by the preload or the request, first
                state_seen["store"] = time.time() - t0
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    updates: list[tuple[float, float, str]] = []

    def progress(fraction: float, stage: str) -> None:
        updates.append((time.time() - t0, float(fraction), stage))

    edits = [str(p) for p in sorted(EXAMPLE.glob("*.png")) if p.name != "source.png"][:2]
    state = logic.Session(output_dir=tempfile.mkdtemp(prefix="cold-bench-"))
    mark("press")
    report, state = logic.evaluate(
        settings, state, source=str(EXAMPLE / "source.png"), edits=edits, target_text="a pink dahlia flower",
        source_text="an orange dahlia flower", provider="clip-vocab", source_attrs_box="", target_attrs_box="",
        options=logic.AugCLIPOptions(), progress=progress)
    mark("scores")
    figures, _, state = logic.explain(settings, state, progress=progress)
    mark("first_full_result")
    first_timings = dict(state.explained.timings)
    if hasattr(logic, "shown_maps"):  # the page's next stage: the shown edit's CLIP-T and CLIPdir maps
        logic.shown_maps(settings, state)
    mark("shown_edit_maps")
    if hasattr(logic, "explain_rest"):
        state = logic.explain_rest(settings, state)
    else:  # an older app that made everything in its explanation stage (for before / after runs)
        state.figures = dict(figures)
    mark("umap_and_all_figures")
    explained = state.explained
    out = {"marks": marks, "seen": state_seen, "umap_warm_up_done": umap_done.get("at"),
           "umap_compile_start": umap_done.get("start"),
           "report_timings": dict(report.timings), "explain_timings": first_timings,
           "umap_view": explained.timings.get("umap_view"),
           "attributes": [len(report.attributes.source), len(report.attributes.target)],
           "provider": report.attributes.provenance.provider, "figures_first": sorted(figures),
           "figures_all": sorted(state.figures), "umap": explained.umap is not None,
           "updates": updates, "untrained": bool(report.untrained)}
    del demo
    print(MARK + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------ the parent
def run_fresh(env: dict[str, str]) -> dict:
    env = {**env, "COLD_BENCH_T0": repr(time.time())}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    sys.stderr.write(done.stdout[-3000:] + done.stderr[-6000:])
    raise SystemExit(f"the fresh process failed (exit {done.returncode})")


def build_ahead(env: dict[str, str], clip_model: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "augclip_demo", "download", "--clip", clip_model, "--vocab"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit("augclip-demo download --vocab failed")
    said = [line.strip() for line in done.stdout.splitlines() if " phrases (" in line]
    return time.perf_counter() - start, (said[-1] if said else "")


def table(result: dict, title: str) -> None:
    m, seen, rt, et = result["marks"], result["seen"], result["report_timings"], result["explain_timings"]
    press = m["press"]
    print(f"\n{title}")
    print(f"  {'stage':46s}{'seconds':>9s}{'at (from process start)':>26s}")

    def row(name: str, seconds: float | None, at: float | None = None) -> None:
        sec = f"{seconds:9.2f}" if seconds is not None else f"{'':9s}"
        print(f"  {name:46s}{sec}{(f'{at:26.2f}' if at is not None else '')}")

    row("python start (interpreter up)", m["python_started"], m["python_started"])
    row("imports (gradio, torch, open_clip, package)", m["imports"] - m["python_started"], m["imports"])
    row("app build (build_app)", m["app_build"] - m["imports"], m["app_build"])
    if "clip" in seen:
        row("CLIP load + warm-up (background, from build)", seen["clip"] - m["imports"], seen["clip"])
    if "store" in seen:
        row("vocabulary store in memory (from build)", seen["store"] - m["imports"], seen["store"])
    if result.get("umap_compile_start") is not None:
        row("UMAP warm-up stops waiting, compiles (background)", None, result["umap_compile_start"])
    if result.get("umap_warm_up_done"):
        row("UMAP numba compile ends (background, from build)", result["umap_warm_up_done"] - m["app_build"],
            result["umap_warm_up_done"])
    row("press -> scores (waits for CLIP, extracts, scores)", m["scores"] - press, m["scores"])
    for key in ("model_load", "attributes", "image_encoding", "text_encoding", "metrics"):
        if key in rt:
            row(f"    {key}", rt[key])
    row("explanation stage (ui.evaluate.session.explain)", m["first_full_result"] - m["scores"], m["first_full_result"])
    for key in ("relevancy", "rankings", "exact_view", "umap_view", "figures", "png"):
        if key in et:
            row(f"    {key}", et[key])
    row("FIRST FULL RESULT (from process start)", None, m["first_full_result"])
    print(f"  {'target':46s}{'':9s}{TARGET_S:26.2f}   "
          f"{'MET' if m['first_full_result'] <= TARGET_S else 'NOT MET'} (ratio {m['first_full_result'] / TARGET_S:.2f})")
    row("shown edit's CLIP-T + CLIPdir maps (after it)", m["shown_edit_maps"] - m["first_full_result"],
        m["shown_edit_maps"])
    row("UMAP view + all other figures (after them)", m["umap_and_all_figures"] - m["shown_edit_maps"],
        m["umap_and_all_figures"])
    if result.get("umap_view") is not None and "umap_view" not in et:
        row("    umap_view (its compile, or the warm-up's)", result["umap_view"])
    print(f"  attributes: {result['attributes'][0]} source + {result['attributes'][1]} target from "
          f"{result['provider']}; first result figures: {', '.join(result['figures_first'])}; "
          f"{len(result['figures_all'])} figures in all; UMAP view {'made' if result['umap'] else 'missing'}")
    if result["untrained"]:
        print("  (random weights: timings only, the numbers mean nothing)")


def gaps(result: dict) -> None:
    updates = result["updates"]
    m = result["marks"]
    times = [m["press"]] + [at for at, _, _ in updates if at <= m["scores"]] + [m["scores"]]
    steps = [b - a for a, b in zip(times, times[1:])]
    worst = max(range(len(steps)), key=steps.__getitem__)
    print(f"\n  progress updates from press to scores: {len(times) - 2}; max gap {steps[worst]:.2f} s "
          f"(ending at {times[worst + 1]:.1f} s); median gap {sorted(steps)[len(steps) // 2]:.2f} s")
    shown = [u for u in updates if u[0] <= m["scores"]]
    for at, fraction, stage in shown[:: max(1, len(shown) // 25)]:
        print(f"    {at:8.2f} s  {fraction:5.1%}  {stage}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--mode", choices=("ahead", "no-store", "both"), default="ahead")
    parser.add_argument("--numba-cache", choices=("fresh", "keep"), default="fresh",
                        help="fresh: an empty NUMBA_CACHE_DIR (a Space's first start); keep: this machine's")
    parser.add_argument("--store-dir", type=Path, metavar="DIR",
                        help="with --mode ahead: the AUGCLIP_CACHE_DIR to build the store in, kept and reused by "
                             "later runs (the build is then timed only the first time; default: a temporary one)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child()
        return 0
    with tempfile.TemporaryDirectory(prefix="cold-bench-") as tmp:
        env = {key: value for key, value in os.environ.items() if not key.startswith("AUGCLIP_")}
        env.update({ "AUGCLIP_CLIP_MODEL": args.clip_model,
                    "AUGCLIP_ATTRIBUTE_PROVIDER": "clip-vocab", "AUGCLIP_DEVICE": "cpu",
                    "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(ROOT)})
        if args.numba_cache == "fresh":
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")
        print(f"CLIP {args.clip_model}, CPU, {os.cpu_count()} cores, load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; numba cache {args.numba_cache}")
        if args.mode in ("no-store", "both"):
            env["AUGCLIP_CACHE_DIR"] = str(Path(tmp) / "no-store")
            result = run_fresh(env)
            table(result, "store NOT built: the first request encodes the vocabulary")
            gaps(result)
        if args.mode in ("ahead", "both"):
            env["AUGCLIP_CACHE_DIR"] = str(args.store_dir or Path(tmp) / "ahead")
            seconds, said = build_ahead(env, args.clip_model)
            print(f"\nstore built ahead (augclip-demo download --vocab, own process): {seconds:.1f} s; {said}")
            if args.store_dir:  # only the store travels: no attribute or embedding cache of an earlier run
                fresh = Path(tmp) / "ahead"
                shutil.copytree(args.store_dir / "clip_vocab", fresh / "clip_vocab")
                env["AUGCLIP_CACHE_DIR"] = str(fresh)
            result = run_fresh(env)
            table(result, "store built ahead")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
