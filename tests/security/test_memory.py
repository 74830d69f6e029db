"""Server memory under huge images (issue 15, point 2): ``python app.py`` in its own process, its peak
resident memory (VmHWM) read from /proc.

The adversarial sequence: two sessions at once (the app's concurrency) each sending a source and
edits of SIDE x SIDE PNG (flat colours: tiny files that decode to SIDE^2 x 3 bytes each), then a
request over the pixel budget, which must be refused from the file headers. CI runs SIDE = 4000 (the
small form); ``AUGCLIP_MEMORY_SIDE=12000`` reproduces the issue's 8 edits of 12000 x 12000.

The bound checked is the one docs/security.md states: per running request, one full-size
decode (SIDE^2 x 3 bytes, x 1.5 for Pillow's conversion copy) plus a working set of at most 700 MB
at the 2048 px working resolution.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest
from gradio_client import Client, handle_file
from PIL import Image

from tests.security.servers import start_app
from tests.support import EXAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SIDE = int(os.environ.get("AUGCLIP_MEMORY_SIDE", "4000"))
EDITS = int(os.environ.get("AUGCLIP_MEMORY_EDITS", "8"))
CONCURRENT = 2
MB = 2**20


def _args(source, edits):
    return (handle_file(str(source)), [handle_file(str(e)) for e in edits], "a pink dahlia", "", "", "manual",
            "orange dahlia", "pink dahlia", "svm", 1.0, True, True, "random:tiny")


def test_huge_images_stay_within_the_stated_memory_bound(tmp_path):
    source, edit = tmp_path / "source.png", tmp_path / "edit.png"
    Image.new("RGB", (SIDE, SIDE), "orange").save(source, compress_level=1)
    Image.new("RGB", (SIDE, SIDE), "pink").save(edit, compress_level=1)
    budget = (1 + EDITS) * SIDE * SIDE  # exactly one full request fits
    app = start_app(tmp_path, ["--concurrency", str(CONCURRENT)], flags=True,
                    env={"AUGCLIP_MAX_UPLOAD_MB": "64", "AUGCLIP_MAX_REQUEST_PIXELS": str(budget)})
    try:
        flower = EXAMPLES / "flower-pink"
        warm = Client(app.url, verbose=False)
        warm.predict(*_args(flower / "source.png", [flower / "well_edited.png"]), api_name="/evaluate")
        base = app.memory()["VmRSS"]

        tables, errors = [], []

        def big_request() -> None:
            try:
                tables.append(Client(app.url, verbose=False).predict(*_args(source, [edit] * EDITS),
                                                                     api_name="/evaluate")[1])
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(str(exc))

        threads = [threading.Thread(target=big_request) for _ in range(CONCURRENT)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=900)
        assert not errors, errors
        assert all(len(table["data"]) == EDITS for table in tables) and len(tables) == CONCURRENT

        taller = tmp_path / "taller.png"  # 8 rows more than the budget allows
        Image.new("RGB", (SIDE, SIDE + 8), "orange").save(taller, compress_level=1)
        with pytest.raises(Exception, match="over the budget of") as info:
            warm.predict(*_args(taller, [edit] * EDITS), api_name="/evaluate")
        assert f"{budget + 8 * SIDE:,} pixels in total" in str(info.value)

        memory = app.memory()
        per_request = int(SIDE * SIDE * 3 * 1.5) + 700 * MB
        grown = memory["VmHWM"] - base
        print(f"\n{CONCURRENT} x ({EDITS} edits of {SIDE}x{SIDE}): RSS {base / MB:.0f} MB after warm-up, peak "
              f"{memory['VmHWM'] / MB:.0f} MB (+{grown / MB:.0f} MB; bound +{CONCURRENT * per_request / MB:.0f} MB), "
              f"{memory['VmRSS'] / MB:.0f} MB after")
        assert grown < CONCURRENT * per_request
    finally:
        app.stop()
