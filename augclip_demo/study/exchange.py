"""A study's judgments out (a manifest for ``batch`` / ``protocol`` / ``hatie calibrate`` / Explore, and CSV)
and in (CSV from a survey site or a spreadsheet, into the same table).

Manifest: 2AFC studies give one line per judged pair, ``id`` ``<item>:pair-<a>-<b>``, the item's fields
with ``edits`` = the two edits and ``human.preferred`` = the raters' majority (no ``human`` on an even
split); rating studies give one line per item with ``human.scores`` = each edit's mean rating. ``meta.study``
keeps the votes; the item's own ``meta`` moves to ``meta.item_meta``. The export lives in the source
manifest's folder, so every path in it stays valid as written.

CSV: one row per judgment. A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
gets a leading ``'`` so a spreadsheet shows it as text instead of running it as a formula; import removes it.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..batch.manifest import write_manifest
from ..io import FORMULA_STARTS, spreadsheet_safe
from .agreement import first_answers, mean_ratings, pair_id, pair_verdict
from .questions import valid_answer
from .store import StudyData, StudyError, connect, get_study, now_utc

CSV_COLUMNS = ["study", "question", "question_version", "rater", "item_id", "edit_a", "edit_b", "edit_a_name",
               "edit_b_name", "answer", "chosen", "is_repeat", "shown_left", "created_at", "elapsed_ms",
               "source_sha256", "edit_a_sha256", "edit_b_sha256", "origin"]
_MAX_IMPORT_BYTES = 50 * 1024 * 1024
_MAX_IMPORT_ROWS = 1_000_000
_MAX_PROBLEMS_SHOWN = 20


# ---------------------------------------------------------------------------------------------- manifest
def export_lines(data: StudyData, question: str = "overall") -> list[dict[str, Any]]:
    """The manifest lines of the study's judgments for ``question`` (see the module docstring)."""
    study = data.study
    if question not in study.questions:
        raise StudyError(f"study {study.name!r} asks {', '.join(study.questions)}; not {question!r}")
    base = {"name": study.name, "question": question, "question_version": study.question_version}
    lines = []
    if study.kind == "2afc":
        order = {unit: n for n, unit in enumerate(data.units)}
        for unit, answers in sorted(first_answers(data, question).items(), key=lambda kv: order[kv[0]]):
            line = _line(data, unit.item_id)
            line["id"] = pair_id(unit)
            line["edits"] = [line["edits"][unit.edit_a], line["edits"][unit.edit_b]]  # type: ignore[index]
            verdict = pair_verdict(list(answers.values()))
            if verdict is not None:
                line["human"] = {"preferred": verdict}
            votes = Counter(answers.values())
            line["meta"] = {**line.get("meta", {}), "study": {**base, "item": unit.item_id,
                                                              "edits": [unit.edit_a, unit.edit_b],
                                                              "votes": {k: votes.get(k, 0) for k in ("a", "b", "tie")}}}
            lines.append(line)
    else:
        counts = Counter(unit.item_id for unit in first_answers(data, question))
        for item_id, scores in mean_ratings(data, question).items():
            line = _line(data, item_id)
            line["human"] = {"scores": scores}
            line["meta"] = {**line.get("meta", {}), "study": {**base, "item": item_id, "rated_edits": counts[item_id]}}
            lines.append(line)
    return lines


def _line(data: StudyData, item_id: str) -> dict[str, Any]:
    line = json.loads(json.dumps(data.lines[item_id]))  # a deep copy
    line.pop("human", None)
    meta = line.pop("meta", None)
    if meta is not None:
        line["meta"] = {"item_meta": meta}
    return line


def export_manifest(data: StudyData, out: str | Path | None = None, question: str = "overall") -> Path:
    """Write the export next to the study's manifest (validated like every manifest); returns its path."""
    source = Path(data.study.manifest)
    path = Path(out) if out else source.with_name(f"{source.stem}-study-{data.study.name}-{question}.jsonl")
    if path.resolve().parent != source.resolve().parent:
        raise StudyError(f"write the export into the study's manifest folder ({source.parent.name}/), where its image "
                         f"paths are valid: e.g. {source.with_name(path.name).name}")
    lines = export_lines(data, question)
    if not lines:
        raise StudyError(f"study {data.study.name!r} has no judgments for {question!r} yet; nothing to export")
    return write_manifest(lines, path)


# ---------------------------------------------------------------------------------------------- CSV
def neutral(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text (a formula-looking start gets a leading quote)."""
    return str(spreadsheet_safe("" if value is None else str(value)))


def _restored(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text


def export_csv(data: StudyData) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for j in data.judgments:
        edits = data.edits[j.item_id]
        b_name = edits[j.edit_b]["name"] if j.edit_b is not None else ""
        if data.study.kind == "2afc":
            chosen = {"a": edits[j.edit_a]["name"], "b": b_name, "tie": "tie"}[j.answer]
        else:
            chosen = ""
        row = [data.study.name, j.question, j.question_version, j.rater, j.item_id, j.edit_a, j.edit_b,
               edits[j.edit_a]["name"], b_name, j.answer, chosen, int(j.is_repeat), j.shown_left, j.created_at,
               j.elapsed_ms, j.source_sha256, j.edit_a_sha256, j.edit_b_sha256, j.origin]
        writer.writerow([neutral(cell) for cell in row])
    return buffer.getvalue()


def import_csv(db: str | Path, name: str, path: str | Path) -> int:
    """Add the judgments of a CSV (the export's columns; needed: rater, item_id, edit_a, [edit_b,] answer).

    Every row is checked first and all problems are listed at once; nothing is stored unless all rows
    are valid. Rows already imported (same rater, unit, question, repeat flag) are skipped, so importing
    a file twice adds nothing. Returns the number of rows added.
    """
    path = Path(path)
    if not path.is_file():
        raise StudyError(f"CSV {path.name}: file not found")
    if path.stat().st_size > _MAX_IMPORT_BYTES:
        raise StudyError(f"CSV {path.name}: larger than {_MAX_IMPORT_BYTES // 2**20} MB; split it")
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise StudyError(f"CSV {path.name}: not readable as UTF-8 CSV ({exc})") from None
    if len(rows) > _MAX_IMPORT_ROWS:
        raise StudyError(f"CSV {path.name}: more than {_MAX_IMPORT_ROWS} rows; split it")
    with connect(db, write=True) as conn:
        study = get_study(conn, name)
        units = {(r[1], r[2], r[3]): r[0] for r in conn.execute(
            "SELECT id, item_id, edit_a, edit_b FROM units WHERE study_id = ?", (study.id,))}
        hashes = {(r[0], r[1]): r[2] for r in conn.execute(
            "SELECT item_id, edit_index, sha256 FROM edits WHERE study_id = ?", (study.id,))}
        sources = dict(conn.execute("SELECT item_id, source_sha256 FROM items WHERE study_id = ?", (study.id,)))
        parsed, problems = [], []
        first_line: dict[tuple[Any, ...], tuple[int, str]] = {}  # one answer per rater, unit, question, repeat
        for number, row in enumerate(rows, start=2):
            result = _parse_row({k: _restored((v or "").strip()) for k, v in row.items() if k}, study, units, hashes,
                                sources)
            if isinstance(result, str):
                problems.append(f"line {number}: {result}")
                continue
            line, answer = first_line.setdefault(_import_key(result), (number, result["answer"]))
            if answer != result["answer"]:
                problems.append(f"line {number}: rater {result['rater']!r} answered this on line {line} already, "
                                "differently (keep one answer)")
            parsed.append(result)
        _refuse(path, problems)
        raters = _import_raters(conn, study.id, {p["rater"] for p in parsed})
        stored = {(r[0], *r[1:4]): r[4] for r in conn.execute(
            "SELECT rater_id, unit_id, question, is_repeat, answer FROM judgments WHERE study_id = ? AND task_id IS NULL",
            (study.id,))}
        _refuse(path, [f"line {first_line[_import_key(p)][0]}: rater {p['rater']!r} has another answer to this stored "
                       "(an import never changes a stored answer)" for p in parsed
                       if stored.get((raters[p["rater"]], *_import_key(p)[1:]), p["answer"]) != p["answer"]])
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO judgments (study_id, rater_id, task_id, unit_id, question, question_version, answer,"
            " shown_left, is_repeat, created_at, elapsed_ms, source_sha256, edit_a_sha256, edit_b_sha256, origin) "
            "VALUES (?,?,NULL,?,?,?,?,NULL,?,?,?,?,?,?,?)",
            [(study.id, raters[p["rater"]], p["unit"], p["question"], p["version"], p["answer"], p["repeat"],
              p["created_at"], p["elapsed_ms"], *p["hashes"], f"import:{path.name}"[:200]) for p in parsed])
        return conn.total_changes - before


def _import_key(parsed: dict[str, Any]) -> tuple[Any, ...]:
    return parsed["rater"], parsed["unit"], parsed["question"], parsed["repeat"]


def _refuse(path: Path, problems: list[str]) -> None:
    """Nothing is imported when any row has a problem: all of them are listed (up to _MAX_PROBLEMS_SHOWN)."""
    if problems:
        shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
        more = f" (and {len(problems) - _MAX_PROBLEMS_SHOWN} more)" if len(problems) > _MAX_PROBLEMS_SHOWN else ""
        raise StudyError(f"CSV {path.name}: nothing imported; {shown}{more}")


def _parse_row(row: dict[str, str], study: Any, units: dict, hashes: dict, sources: dict) -> dict[str, Any] | str:
    rater, item_id = row.get("rater", ""), row.get("item_id", "")
    if not rater or len(rater) > 64:
        return "rater is missing or longer than 64 characters"
    if item_id not in sources:
        return f"item_id {item_id[:80]!r} is not an item of study {study.name!r}"
    question = row.get("question") or "overall"
    if question not in study.questions:
        return f"question {question[:40]!r} is not asked in this study ({', '.join(study.questions)})"
    version = row.get("question_version") or study.question_version
    if version != study.question_version:
        return (f"question_version {version[:40]!r} differs from the study's {study.question_version!r}; answers to "
                "another wording are not pooled (import them into a study of that version)")
    try:
        a = int(row.get("edit_a", ""))
        b = int(row["edit_b"]) if row.get("edit_b") else None
    except ValueError:
        return "edit_a / edit_b must be edit indices (0, 1, ...) of the item"
    answer = valid_answer(study.kind, row.get("answer", ""))
    if answer is None:
        return f"answer {row.get('answer', '')[:20]!r} must be {'a, b or tie' if study.kind == '2afc' else '1 to 5'}"
    if b is not None and a > b:
        a, b = b, a
        answer = {"a": "b", "b": "a", "tie": "tie"}[answer]
    unit = units.get((item_id, a, b))
    if unit is None:
        return f"item {item_id[:80]!r} has no {'pair' if b is not None else 'edit'} {a}{'-' + str(b) if b is not None else ''} in this study"
    expected = (sources[item_id], hashes[(item_id, a)], hashes[(item_id, b)] if b is not None else None)
    for column, value in zip(("source_sha256", "edit_a_sha256", "edit_b_sha256"), expected):
        if row.get(column) and row[column] != value:
            return f"{column} differs from the study's image: the judgment was about another picture"
    elapsed = row.get("elapsed_ms", "")
    return {"rater": rater, "unit": unit, "question": question, "version": version, "answer": answer,
            "repeat": int(row.get("is_repeat", "0") in ("1", "true", "True")),
            "created_at": row.get("created_at") or now_utc(), "hashes": expected,
            "elapsed_ms": int(elapsed) if elapsed.isdigit() and len(elapsed) < 10 else None}


def _import_raters(conn: Any, study_id: int, labels: set[str]) -> dict[str, int]:
    out = {}
    for label in sorted(labels):
        row = conn.execute("SELECT id, imported FROM raters WHERE study_id = ? AND label = ?", (study_id, label)).fetchone()
        if row is not None and not row[1]:
            raise StudyError(f"rater {label!r} rates on the study's page; imported judgments need another label")
        if row is None:
            number = conn.execute("SELECT COALESCE(MAX(number), -1) + 1 FROM raters WHERE study_id = ?",
                                  (study_id,)).fetchone()[0]
            rater_id = conn.execute("INSERT INTO raters (study_id, number, label, token_sha256, imported, created_at) "
                                    "VALUES (?,?,?,NULL,1,?)", (study_id, number, label, now_utc())).lastrowid
        else:
            rater_id = row[0]
        out[label] = rater_id
    return out
