"""Every named endpoint of the app called through ``gradio_client`` against ``python app.py`` (started on
127.0.0.1 by the ``app_server`` fixture, tiny random models), and each output checked against the type
``view_api()`` announces: API answers are plain values (docs/app.md), files arrive downloaded, no text carries
HTML tags or entities, and every output has a name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client, handle_file

from augclip_demo.report import UNTRAINED_WARNING
from tests.support import TINY
from tests.ui.test_app import EDITS, FLOWER, evaluate_args
from tests.ui.test_app_batch import example_manifest, example_zip

pytestmark = pytest.mark.slow

#: each named endpoint's arguments, in the order a session calls them (/evaluate first: the others follow it)
CALLS: dict[str, Any] = {
    "/evaluate": lambda tmp: evaluate_args(edits=EDITS[:2]),
    "/rescore": lambda tmp: ("dahlia is orange\nround flower head", "dahlia is pink", "svm", 1.0, True, True, TINY),
    "/explain": lambda tmp: (True,),
    "/comparison": lambda tmp: (),
    "/bpm": lambda tmp: (True, "make the flower pink", "rules", TINY),
    "/bpm_parse": lambda tmp: ("replace the cat with a dog", "rules", TINY),
    "/bpm_fields": lambda tmp: ("make the flower pink", "rules", TINY, "flower", "flower", "unchanged", "unchanged",
                                ""),
    "/extract_attributes": lambda tmp: (handle_file(str(FLOWER / "source.png")), "a pink dahlia flower", "",
                                        "clip-vocab", TINY),
    "/hatie": lambda tmp: ("make the flower pink", "auto (from the instruction)", TINY),
    "/batch": lambda tmp: (handle_file(str(example_manifest(tmp))), handle_file(str(example_zip(tmp))),
                           ["augclip", "clip_i"], "manual", TINY, False),
}
_HTML = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>|&(gt|lt|amp|#\d+);")


def _is_file(value: Any) -> bool:
    return isinstance(value, str) and Path(value).is_file()


def _check(value: Any, kind: str, where: str) -> None:
    """``value`` is what ``kind`` (view_api's python type) announces: a downloaded file for a file path, a table as
    headers and rows, plain text without HTML."""
    if value is None:  # an output the call left empty (e.g. a figure of a stage that did not draw)
        return
    if kind == "str":
        assert isinstance(value, str), where
        if "Html" not in where:  # the comparison's fragment is HTML by nature (its file is the stand-alone page)
            assert not _HTML.search(value), (where, _HTML.search(value).group(0), value[:300])
    elif kind == "filepath":
        assert _is_file(value), (where, value)
    elif kind == "list[filepath]":
        assert isinstance(value, list) and all(_is_file(v) for v in value), (where, value)
    elif kind.startswith("dict(headers"):
        assert isinstance(value, dict) and isinstance(value["headers"], list) and isinstance(value["data"], list), where
        assert not any(_HTML.search(str(cell)) for row in value["data"] for cell in row), where
    elif kind.startswith("list[dict(image"):
        assert isinstance(value, list) and all(_is_file(item["image"]) for item in value), (where, value)
    elif kind.startswith("dict(type"):
        assert isinstance(value, dict) and "plot" in value, where
    elif kind.startswith("Literal"):
        assert isinstance(value, str), where
    elif kind == "float":
        assert isinstance(value, (int, float)), where
    elif kind == "bool":
        assert isinstance(value, bool), where
    # JSON outputs ("str | float | ...") may hold any JSON value


def test_every_named_endpoint_answers_plain_values_of_its_announced_types(app_server, tmp_path):
    client = Client(app_server["url"], verbose=False)
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert set(endpoints) == set(CALLS)  # a new endpoint is added here, and checked
    for name, endpoint in endpoints.items():
        labels = [r["label"] for r in endpoint["returns"]]
        assert not [label for label in labels if re.fullmatch(r"value_\d+", label or "")], (name, labels)
    answers = {}
    for name, args in CALLS.items():
        result = client.predict(*args(tmp_path), api_name=name)
        result = result if isinstance(result, tuple) else (result,)
        returns = endpoints[name]["returns"]
        assert len(result) == len(returns), name
        for value, announced in zip(result, returns):
            _check(value, announced["python_type"]["type"], f"{name} {announced['component']} {announced['label']}")
        answers[name] = result
    # the comparison's page, downloaded; BPM's and the parse's text as typed; the untrained label where random
    # weights chose the attributes
    assert Path(answers["/comparison"][1]).name == "comparison.html"
    assert "<html" in Path(answers["/comparison"][1]).read_text(encoding="utf-8")
    parse_text = answers["/bpm_parse"][-1]
    assert "->" in parse_text or "cat" in parse_text, parse_text
    assert UNTRAINED_WARNING.upper() in answers["/extract_attributes"][2]
    assert "item(s) scored" in answers["/batch"][0]
