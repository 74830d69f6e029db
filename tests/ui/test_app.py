"""The app through its API: gradio_client against ``python app.py`` on 127.0.0.1 (tiny random model)."""

from __future__ import annotations

import json
import re
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gradio_client import Client, handle_file

from augclip_demo.attributes import Attributes
from augclip_demo.pipeline import Evaluator
from tests.support import APP_UPLOAD_LIMIT_MB, EXAMPLES, TINY

pytestmark = pytest.mark.slow

FLOWER = EXAMPLES / "flower-pink"
EDITS = [FLOWER / "well_edited.png", FLOWER / "excessively_preserved.png", FLOWER / "excessively_modified.png"]
SRC_ATTRS = ["dahlia is orange", "round flower head", "dark green background"]
TGT_ATTRS = ["dahlia is pink", "pink petals"]


def evaluate_args(source=FLOWER / "source.png", edits=EDITS, target="a pink dahlia flower",
                  source_text="an orange dahlia flower", instruction="make the flower pink", provider="manual",
                  src=SRC_ATTRS, tgt=TGT_ATTRS, classifier="svm", C=1.0, weighting=True, include_images=True,
                  clip_model=TINY):
    return (handle_file(str(source)) if source else None, [handle_file(str(e)) for e in edits], target, source_text,
            instruction, provider, "\n".join(src), "\n".join(tgt), classifier, C, weighting, include_images,
            clip_model)


def scores(result: tuple) -> tuple:
    """The /evaluate outputs that carry values: verdict, table, attribute boxes, files, report."""
    return result[:6]


@pytest.fixture(scope="module")
def client(app_server) -> Client:
    return Client(app_server["url"], verbose=False)


@pytest.fixture(scope="module")
def direct(tiny_encoder):
    return Evaluator(TINY, device="cpu", encoder=tiny_encoder)


def table_rows(table: dict) -> dict[str, list]:
    """Rows by the edit's full file name: API replies carry plain values (the page renders a hover)."""
    rows = {}
    for row in table["data"]:
        assert not any("<" in str(cell) or "&#" in str(cell) for cell in row), row  # no HTML in a cell
        rows[row[1]] = row
    return rows


def test_named_endpoints(client):
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert {"/evaluate", "/rescore", "/extract_attributes"} <= set(endpoints)


def test_table_matches_the_evaluator(client, direct):
    verdict, table, src_box, tgt_box, files, report = scores(client.predict(*evaluate_args(), api_name="/evaluate"))
    expected = direct.evaluate(FLOWER / "source.png", EDITS, "a pink dahlia flower", "an orange dahlia flower",
                               Attributes(SRC_ATTRS, TGT_ATTRS))
    assert table["headers"] == ["#", "edit", "AugCLIP", "CLIPdir", "CLIP-I", "CLIP-T", "L2 (lower is better)"]
    rows = table_rows(table)
    assert len(rows) == 3
    for edit in expected.edits:
        row = rows[edit.name]
        got = dict(zip(table["headers"][2:], row[2:]))
        for key, label in [("augclip", "AugCLIP"), ("clip_dir", "CLIPdir"), ("clip_i", "CLIP-I"), ("clip_t", "CLIP-T"),
                           ("l2", "L2 (lower is better)")]:
            assert got[label] == pytest.approx(edit.metrics[key], abs=1e-5), (edit.name, key)
    # The best value of each column is highlighted, and only that one.
    styling = table["metadata"]["styling"]
    augclip_col = table["headers"].index("AugCLIP")
    highlighted = [i for i, row in enumerate(styling) if row[augclip_col]]
    assert highlighted == [expected.best("augclip")]
    assert "untrained" in verdict and f"AugCLIP prefers edit E{expected.best('augclip') + 1}" in verdict
    assert not re.search(r"<[a-z]|&#|\*\*", verdict), verdict  # plain text: no HTML, no markdown
    assert report["untrained"] is True and report["model"]["spec"] == TINY
    names = sorted(Path(f).name for f in files)
    assert names == ["figures.zip", "report.csv", "report.json"]
    saved = json.loads(Path([f for f in files if f.endswith(".json")][0]).read_text())
    assert saved["edits"][0]["metrics"]["augclip"] == pytest.approx(expected.edits[0].metrics["augclip"], abs=1e-5)
    with zipfile.ZipFile([f for f in files if f.endswith(".zip")][0]) as archive:
        assert {"report.json", "report.csv", "attributes.json"} <= set(archive.namelist())


def test_rescore_uses_the_session_embeddings(app_server, direct):
    own = Client(app_server["url"], verbose=False)  # one client = one session (its gr.State)
    own.predict(*evaluate_args(), api_name="/evaluate")
    _, table, _, _, _, report = scores(own.predict("\n".join(SRC_ATTRS[:2]), "\n".join(TGT_ATTRS), "logistic", 0.5, False, True,
                                        TINY, api_name="/rescore"))
    assert report["options"] == {"classifier": "logistic", "C": 0.5, "weighting": False, "include_images": True,
                                 "weight_scaling": "raw", "projection": "clamped"}
    assert report["attributes"]["source_attributes"] == SRC_ATTRS[:2]
    base = direct.evaluate(FLOWER / "source.png", EDITS, "a pink dahlia flower", "an orange dahlia flower",
                           Attributes(SRC_ATTRS, TGT_ATTRS))
    from augclip_demo.pipeline import AugCLIPOptions

    expected = direct.rescore(base, AugCLIPOptions("logistic", 0.5, False, True), Attributes(SRC_ATTRS[:2], TGT_ATTRS))
    rows = table_rows(table)
    for edit in expected.edits:
        assert rows[edit.name][2] == pytest.approx(edit.metrics["augclip"], abs=1e-5)
        assert rows[edit.name][4] == pytest.approx(edit.metrics["clip_i"], abs=1e-5)
    fresh = Client(app_server["url"], verbose=False)  # a new session has nothing to re-score
    with pytest.raises(Exception, match="press Evaluate first"):
        fresh.predict("a", "b", "svm", 1.0, True, True, TINY, api_name="/rescore")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"source": None}, "Upload a source image first"),
        ({"target": "   "}, "The target text is empty"),
        ({"edits": []}, "Upload at least one edited image"),
        ({"edits": EDITS * 3}, "the limit is 8"),
        ({"src": [], "tgt": []}, "type the source and target attributes"),
        ({"tgt": []}, "no target attributes"),
        ({"provider": "no-such"}, "not in the list of choices"),
        ({"clip_model": "local-dir:/etc"}, "not in the list of choices"),  # only the offered models load
        ({"C": -1.0}, "C (svm / logistic): must be at least 0.0001, got -1"),
    ],
)
def test_bad_inputs_get_a_message_and_the_server_keeps_serving(client, kwargs, message):
    with pytest.raises(Exception) as info:
        client.predict(*evaluate_args(**kwargs), api_name="/evaluate")
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)
    table = client.predict(*evaluate_args(edits=EDITS[:1]), api_name="/evaluate")[1]
    assert len(table["data"]) == 1


def test_corrupt_and_oversized_files(client, tmp_path):
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 50)
    with pytest.raises(Exception, match=r"^corrupt.png: the image data is corrupt"):
        client.predict(*evaluate_args(edits=[corrupt]), api_name="/evaluate")
    big = tmp_path / "big.png"
    rng = np.random.default_rng(0)
    from PIL import Image

    Image.fromarray(rng.integers(0, 255, (700, 700, 3), dtype=np.uint8)).save(big)  # ~1.4 MB of noise
    assert big.stat().st_size > APP_UPLOAD_LIMIT_MB * 2**20
    with pytest.raises(Exception, match=f"the limit is {APP_UPLOAD_LIMIT_MB} MB"):
        client.predict(*evaluate_args(edits=[big]), api_name="/evaluate")
    assert len(client.predict(*evaluate_args(edits=EDITS[:2]), api_name="/evaluate")[1]["data"]) == 2


def test_two_sessions_at_once_get_their_own_results(app_server, direct):
    pagoda = EXAMPLES / "pagoda-night"
    cases = {
        "flower": evaluate_args(),
        "pagoda": evaluate_args(source=pagoda / "source.png", edits=[pagoda / "well_edited.png", pagoda / "partial_edit.png"],
                                target="a pagoda at night", source_text="a pagoda by day", src=["a pagoda", "blue sky"],
                                tgt=["night sky", "a moon"]),
    }
    results: dict[str, tuple] = {}

    def run(name: str) -> None:
        results[name] = Client(app_server["url"], verbose=False).predict(*cases[name], api_name="/evaluate")

    threads = [threading.Thread(target=run, args=(name,)) for name in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert set(results) == {"flower", "pagoda"}
    expected = direct.evaluate(pagoda / "source.png", [pagoda / "well_edited.png", pagoda / "partial_edit.png"],
                               "a pagoda at night", "a pagoda by day", Attributes(["a pagoda", "blue sky"], ["night sky", "a moon"]))
    rows = table_rows(results["pagoda"][1])
    assert set(rows) == {"well_edited.png", "partial_edit.png"}
    for edit in expected.edits:
        assert rows[edit.name][2] == pytest.approx(edit.metrics["augclip"], abs=1e-5)
    assert len(results["flower"][1]["data"]) == 3


def test_extract_attributes_endpoint_reports_provider_errors(client):
    with pytest.raises(Exception, match="Provider 'manual'"):
        client.predict(handle_file(str(FLOWER / "source.png")), "a pink dahlia", "", "manual", TINY,
                       api_name="/extract_attributes")


def test_clip_vocab_fills_empty_attribute_lists(client):
    verdict, table, src_box, tgt_box, _, report = scores(client.predict(
        *evaluate_args(edits=EDITS[:2], provider="clip-vocab", src=[], tgt=[]), api_name="/evaluate"))
    assert src_box.strip() and tgt_box.strip()
    assert report["attributes"]["provenance"]["provider"] == "clip-vocab"
    assert "lower fidelity" in verdict
    assert report["attributes"]["source_attributes"] == src_box.splitlines()


def test_unconfigured_openai_provider_says_how_to_configure_it(client):
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        client.predict(*evaluate_args(provider="openai", src=[], tgt=[]), api_name="/evaluate")


def test_explain_and_bpm_endpoints_follow_the_evaluation(app_server, direct):
    from augclip_demo.bpm.models import get_bpm_models

    own = Client(app_server["url"], verbose=False)
    own.predict(*evaluate_args(edits=EDITS[:2]), api_name="/evaluate")
    pick, exact, umap, augclip_map, clip_t_map, clip_dir_map, src_rank, tgt_rank, alpha, info, files, *_ = own.predict(
        True, api_name="/explain")
    pick = pick["value"] if isinstance(pick, dict) else pick  # a component update carries its value
    assert pick.startswith(("E1 ", "E2 "))  # the edit AugCLIP prefers is shown first
    for figure in (augclip_map, clip_t_map, clip_dir_map, src_rank, tgt_rank, alpha):
        assert Path(figure).suffix == ".png" and Path(figure).stat().st_size > 10_000
    for view in (exact, umap):  # the interactive views: Plotly JSON with one trace per set and per edit
        view = view.get("value", view) if isinstance(view, dict) and "value" in view else view
        assert view["type"] == "plotly", view
        spec = json.loads(view["plot"])
        names = [trace["name"] for trace in spec["data"]]
        assert "source attributes (S)" in names and sum(name.startswith(("E1 ", "E2 ")) for name in names) == 2
        hovers = [c for t in spec["data"] for c in t.get("customdata", [])]
        assert hovers and all(len(c) == 4 and "g(x)/|w|" in c[3] for c in hovers)  # label, text, alpha, distance
        assert all("alpha (Eq. 6)" in c[2] for c in hovers if c[0].startswith("S"))
    with zipfile.ZipFile([f for f in files if f.endswith(".zip")][0]) as archive:
        pngs = [name for name in archive.namelist() if name.startswith("figures/") and name.endswith(".png")]
    assert len(pngs) == 2 + 2 * 6  # two hyperplane views, six figures per edit

    verdict, table, bpm_info, gallery, components, o1, o2, size, position, reference, *_ = own.predict(
        True, "make the flower pink", "rules", TINY, api_name="/bpm")
    assert table["headers"][-1] == "BPM"
    assert (o1, o2) == ("flower", "pink flower") and len(gallery) == 2 * 3
    settings = direct.settings.replace(gdino_model="random:tiny", sam_model="random:tiny")
    report = direct.evaluate(FLOWER / "source.png", EDITS[:2], "a pink dahlia flower", "an orange dahlia flower",
                             Attributes(SRC_ATTRS, TGT_ATTRS))
    direct.add_bpm(report, "make the flower pink", models=get_bpm_models(settings, encoder=direct.encoder))
    rows = table_rows(table)
    for edit in report.edits:
        assert rows[edit.name][-1] == pytest.approx(edit.metrics["bpm"], abs=1e-4)
    assert "UNTRAINED" in bpm_info.upper()
