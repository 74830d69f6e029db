"""``python -m augclip_demo study ...``: the operator's path from a manifest to an exported manifest."""

from __future__ import annotations

import re

from augclip_demo.batch.manifest import load_manifest
from augclip_demo.cli import main
from augclip_demo.study import store
from tests.study.helpers import answer_all, write_results, write_study_manifest


def test_create_raters_status_close_export(tmp_path, capsys):
    manifest = write_study_manifest(tmp_path / "data", n_items=2)
    db = str(tmp_path / "s.sqlite3")
    assert main(["study", "--db", db, "create", "pilot", str(manifest), "--per-rater", "3", "--per-unit", "3",
                 "--repeats", "1"]) == 0
    created = capsys.readouterr().out
    assert "6 units" in created and "so 6 raters give each unit 3 judgments" in created
    assert main(["study", "--db", db, "raters", "pilot", "--count", "2", "--base-url", "http://host:1"]) == 0
    out = capsys.readouterr().out
    links = re.findall(r"^(rater-\d+)\thttp://host:1/study/rate#t=(\S+)$", out, re.M)
    assert len(links) == 2 and "printed only now" in out
    for _, token in links:
        answer_all(tmp_path / "s.sqlite3", token, lambda view: {"overall": "left"})
    results = write_results(manifest, {"clip_i": {"item-0": [0.3, 0.2, 0.1], "item-1": [0.1, 0.2, 0.3]}},
                            tmp_path / "r.jsonl")
    assert main(["study", "--db", db, "status", "pilot", "--results", str(results), "--bootstrap", "50"]) == 0
    report = capsys.readouterr().out
    assert "Krippendorff's alpha" in report and "s2AFC" in report and "Bradley-Terry" in report
    assert report.startswith("!! UNTRAINED")  # the results say run.untrained: the report leads with it
    assert main(["study", "--db", db, "close", "pilot"]) == 0
    assert main(["study", "--db", db, "export", "pilot", "--csv", str(tmp_path / "j.csv")]) == 0
    out = capsys.readouterr().out
    exported = out.split("manifest: ")[1].split("\n")[0]
    assert len(load_manifest(exported)) >= 1 and (tmp_path / "j.csv").read_text().startswith("study,question")
    assert store.list_studies(db)[0].status == "closed"


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["study", "--db", str(tmp_path / "s.sqlite3"), "status", "missing"]) == 2
    assert capsys.readouterr().err.strip() == "error: no study named 'missing' (studies: none yet)"
