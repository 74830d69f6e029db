"""The table of bad inputs through the app's API: gradio_client against ``python app.py`` on 127.0.0.1.

Each case checks the message the web client gets (specific, no traceback, no server folder in it),
then that a good evaluation from the same client still succeeds.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from PIL import Image

from tests.security import probes
from tests.security.servers import start_app
from tests.support import APP_UPLOAD_LIMIT_MB, EXAMPLES, TINY
from tests.ui.test_app import evaluate_args

pytestmark = pytest.mark.slow

FLOWER = EXAMPLES / "flower-pink"
SERVER_PATH = re.compile(r"/(tmp|root|home|usr|work|var|etc)/")


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Client:
    # A server of its own: these probes try to load models that fail, and the shared server's later
    # numbers must not depend on that (a failed load was seen to shift later tiny-model scores by 1e-5).
    app = start_app(tmp_path_factory.mktemp("probes"), env={"AUGCLIP_MAX_UPLOAD_MB": str(APP_UPLOAD_LIMIT_MB)})
    yield Client(app.url, verbose=False)
    app.stop()


def _files(tmp: Path) -> dict[str, Path]:
    return {
        "text": probes.write(tmp / "notes.png", "this is text, not an image"),
        "truncated": probes.write(tmp / "cut.png", probes.truncated_png()),
        "dot": probes.write(tmp / "dot.png", probes.png(Image.new("RGB", (1, 1)))),
        "strip": probes.write(tmp / "strip.png", probes.png(Image.new("RGB", (2000, 4)))),
        "empty": probes.write(tmp / "empty.png", b""),
        "good": probes.good_png(tmp / "good.png"),
    }


EVALUATE_CASES = [
    ("bad source image", lambda f: {"source": f["text"]}, "source: notes.png: not a recognised image format"),
    ("truncated source", lambda f: {"source": f["truncated"]}, "source: cut.png: the image data is corrupt or truncated"),
    ("1x1 source", lambda f: {"source": f["dot"]}, "source: dot.png: the image is 1x1 pixels; images must be at least 8x8"),
    ("1x1 edit", lambda f: {"edits": [f["dot"]]}, "dot.png: the image is 1x1 pixels"),
    ("2000x4 edit", lambda f: {"edits": [f["strip"]]}, "strip.png: the image is 2000x4 pixels"),
    ("empty edit file", lambda f: {"edits": [f["empty"]]}, "empty.png: the file is empty (0 bytes)"),
    ("nine edits", lambda f: {"edits": [f["good"]] * 9}, "9 edited images uploaded; the limit is 8. Remove 1."),
    ("C is text", lambda f: {"C": "abc"}, "C (svm / logistic): 'abc' is not a number."),
    ("C is empty", lambda f: {"C": None}, "C (svm / logistic) is empty: type a positive number"),
    ("C is negative", lambda f: {"C": -1.0}, "C (svm / logistic): must be at least 0.0001, got -1"),
    ("C is infinite", lambda f: {"C": "inf"}, "C (svm / logistic): must be a finite number, got inf."),
    ("unknown classifier", lambda f: {"classifier": "forest"}, "not in the list of choices"),
    ("empty target text", lambda f: {"target": ""}, "The target text is empty"),
    # Web clients pick from the offered models only; any other spelling is refused before anything loads.
    ("unknown architecture", lambda f: {"clip_model": "nonsense-model"}, "not in the list of choices"),
    ("a server folder", lambda f: {"clip_model": "local-dir:/etc"}, "not in the list of choices"),
    ("a path out of the hub cache", lambda f: {"clip_model": "hf-hub:../../etc"}, "not in the list of choices"),
    ("a 10 GB random model", lambda f: {"clip_model": "random:ViT-bigG-14"}, "not in the list of choices"),
    ("another spelling of an offered model", lambda f: {"clip_model": "random: tiny "}, "not in the list of choices"),
    ("weights not on this server", lambda f: {"clip_model": "ViT-B-32/openai"}, "weights for CLIP ViT-B-32/openai could not be loaded"),
    ("an unknown provider", lambda f: {"provider": "no-such", "src": [], "tgt": []}, "not in the list of choices"),
]


@pytest.mark.parametrize("name, make, message", EVALUATE_CASES, ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate_refuses_with_a_clear_message_then_serves(client, tmp_path, name, make, message):
    kwargs = make(_files(tmp_path))
    with pytest.raises(Exception) as info:
        client.predict(*evaluate_args(**kwargs), api_name="/evaluate")
    text = str(info.value)
    assert message in text, text
    assert "Traceback" not in text and "upstream Gradio app raised an exception" not in text
    assert not SERVER_PATH.search(text), text
    table = client.predict(*evaluate_args(edits=[FLOWER / "well_edited.png"]), api_name="/evaluate")[1]
    assert len(table["data"]) == 1


def test_a_file_payload_cannot_name_a_server_file(client):
    payload = {"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}
    args = list(evaluate_args())
    args[0] = payload
    with pytest.raises(Exception) as info:
        client.predict(*args, api_name="/evaluate")
    assert "root:" not in str(info.value)  # nothing of the file came back
    assert len(client.predict(*evaluate_args(edits=[FLOWER / "well_edited.png"]), api_name="/evaluate")[1]["data"]) == 1


# ------------------------------------------------------------------------------------------------ batch uploads
def _batch(client: Client, manifest: Path, images: Path) -> str:
    with pytest.raises(Exception) as info:
        client.predict(handle_file(str(manifest)), handle_file(str(images)), ["augclip"], "manual", TINY, False,
                       api_name="/batch")
    return str(info.value)


def _good_zip(tmp: Path) -> Path:
    with zipfile.ZipFile(tmp / "images.zip", "w") as archive:
        archive.write(FLOWER / "source.png", "src.png")
        archive.write(FLOWER / "well_edited.png", "edit.png")
    return tmp / "images.zip"


ATTRS = {"source": ["orange dahlia"], "target": ["pink dahlia"]}
BATCH_CASES = [
    ("zip names clash", lambda tmp: (probes.write(tmp / "m.jsonl", probes.manifest_line(attributes=ATTRS)),
                                    probes.zip_of(tmp / "clash.zip", {"x": b"1", "x/y.png": b"2"})),
     "the zip uses 'x' both as a file and as a folder"),
    ("zip nested too deep", lambda tmp: (probes.write(tmp / "m.jsonl", probes.manifest_line(attributes=ATTRS)),
                                        probes.zip_of(tmp / "deep.zip", {"d/" * 300 + "f.png": b"1"})),
     "is nested 300 folders deep"),
    ("manifest not UTF-8", lambda tmp: (probes.write(tmp / "latin.jsonl", b'{"id": "caf\xe9"}\n'), _good_zip(tmp)),
     "manifest latin.jsonl: not UTF-8 text"),
    ("NUL byte in a manifest path", lambda tmp: (probes.write(tmp / "m.jsonl", probes.manifest_line(source="src\u0000.png", attributes=ATTRS)),
                                                _good_zip(tmp)),
     "contains a control character (such as a NUL byte)"),
    ("manifest nested too deep", lambda tmp: (probes.write(tmp / "m.jsonl", probes.deep_json(100_000)), _good_zip(tmp)),
     "JSON nested more than 32 levels deep"),
    ("missing image", lambda tmp: (probes.write(tmp / "m.jsonl", probes.manifest_line(source="gone.png", attributes=ATTRS)),
                                  _good_zip(tmp)),
     "source 'gone.png': file not found"),
]


@pytest.mark.parametrize("name, make, message", BATCH_CASES, ids=[c[0] for c in BATCH_CASES])
def test_batch_refuses_with_a_clear_message_without_server_paths(client, tmp_path, name, make, message):
    manifest, images = make(tmp_path)
    text = _batch(client, manifest, images)
    assert message in text, text
    assert "Traceback" not in text and not SERVER_PATH.search(text), text
    good = probes.write(tmp_path / "good.jsonl", probes.manifest_line(attributes=ATTRS) + "\n")
    summary = client.predict(handle_file(str(good)), handle_file(str(_good_zip(tmp_path))), ["augclip"], "manual",
                             TINY, False, api_name="/batch")[0]
    assert "1 item(s) scored, 0 failed" in summary


def test_the_table_through_the_api_is_wide():
    assert len(EVALUATE_CASES) + len(BATCH_CASES) + 1 >= 25
    assert json.dumps([c[0] for c in EVALUATE_CASES + BATCH_CASES])  # names are plain text
