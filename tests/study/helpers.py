"""A small manifest of drawn pictures for study tests: items with a gt, an ep and an em edit by three models."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import draw_scene

MODELS = ("alpha", "beta", "gamma")
ROLES = ("gt", "ep", "em")
COLOURS = ("red", "green", "blue", "orange", "purple", "black", "gray", "yellow", "pink", "brown", "navy", "teal")


def write_study_manifest(folder: Path, n_items: int = 4, n_edits: int = 3) -> Path:
    """``n_items`` items, each a source and ``n_edits`` edits (distinct pictures), models alpha/beta/gamma."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n_items):
        source = f"src/{i}.png"
        (folder / "src").mkdir(exist_ok=True)
        draw_scene(shapes=[("ellipse", (10 + i, 10, 60, 60), COLOURS[i % len(COLOURS)])]).save(folder / source)
        edits = []
        for k in range(n_edits):
            path = f"out/{MODELS[k]}/{i}.png"
            (folder / "out" / MODELS[k]).mkdir(parents=True, exist_ok=True)
            draw_scene(shapes=[("rectangle", (5 * k, 5 + i, 50 + 3 * k, 70), COLOURS[(i + k + 1) % len(COLOURS)])]
                       ).save(folder / path)
            edits.append({"path": path, "name": MODELS[k], "role": ROLES[k] if n_edits == 3 else "candidate"})
        lines.append({"id": f"item-{i}", "source": source, "target_text": f"a picture with shape {i}",
                      "edits": edits, "meta": {"n": i}})
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return manifest


def write_results(manifest: Path, values: dict[str, dict[str, list[float]]], out: Path) -> Path:
    """A `batch`-style results file for ``manifest``: ``values[metric][item id]`` = one value per edit.

    The edits' content hashes are computed here as batch does (``open_image(...).sha256``)."""
    from augclip_demo.batch.manifest import load_manifest
    from augclip_demo.io import open_image

    records = []
    for item in load_manifest(manifest):
        edits = [{"index": i, "path": e.path, "name": e.name, "role": e.role, "sha256": open_image(e.resolved).sha256,
                  "metrics": {metric: per_item[item.id][i] for metric, per_item in values.items()}}
                 for i, e in enumerate(item.edits)]
        records.append({"id": item.id, "dataset": "study", "status": "ok", "edits": edits,
                        "human": item.human.to_dict() if item.human else None,
                        "run": {"model": "random:tiny", "untrained": True, "metrics": list(values)}})
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


def answer_all(db: Path, token: str, choose) -> int:
    """Answer every task of a rater through the store: ``choose(view)`` gives the answers dict."""
    from augclip_demo.study import store

    count = 0
    while (view := store.rater_view(db, token)).task is not None:
        store.submit_answer(db, token, view.task["position"], choose(view), 1000)
        count += 1
    return count


OPERATOR_TOKEN = "operator-token-for-tests-0123456789"


def start_study_app(tmp_path: Path, db: Path, port: int | None = None, extra: dict[str, str] | None = None):
    """``python app.py`` on 127.0.0.1 with the tiny random model and the study database ``db`` (``extra``: more
    variables)."""
    import os

    from tests.support import ROOT, TINY, free_port
    from tests.support.app_process import spawn_app

    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "AUGCLIP_CLIP_MODEL": TINY,
                "AUGCLIP_DEVICE": "cpu", "AUGCLIP_STUDY_DB": str(db), "AUGCLIP_STUDY_OPERATOR_TOKEN": OPERATOR_TOKEN,
                "AUGCLIP_CACHE_DIR": str(tmp_path / "cache"), "GRADIO_ANALYTICS_ENABLED": "False",
                "PYTHONPATH": str(ROOT), **(extra or {})})
    return spawn_app(env, tmp_path / f"app-{port}.log", port)


def http(url: str, method: str = "GET", token: str | None = None, body: bytes | None = None,
         timeout: float = 30) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request (errors are answers too)."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
