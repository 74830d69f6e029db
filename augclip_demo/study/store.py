"""The study database: SQLite (standard library), one row per judgment.

Durability: WAL journal (readers never block the writer, so many raters can load pages while one
answer is written) and ``synchronous=FULL``: every commit is fsynced before the rater's answer is
acknowledged, so an acknowledged judgment survives a killed server *and* a power cut (``NORMAL``
would only survive the former). The cost, one fsync per answer, is nothing next to a person's seconds
per judgment. Each operation opens its own connection (cheap; no connection is shared between
threads) and writes in ``BEGIN IMMEDIATE`` transactions, waiting up to ``_BUSY_TIMEOUT_S`` for another
writer.

Tokens: a rater's token is ``secrets.token_urlsafe(24)`` (192 random bits), shown once when the rater
is added; only its SHA-256 is stored (a token this long cannot be guessed, so a slow password hash
adds nothing), so the database alone cannot be used to answer as a rater.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import secrets
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..batch.manifest import ManifestItem, load_manifest
from ..errors import InputError
from ..io import open_image
from .design import Unit, choose_units, rater_rng, study_units, task_list
from .questions import CURRENT_VERSION, KINDS, QUESTION_IDS, QUESTION_SETS, valid_answer

_BUSY_TIMEOUT_S = 30.0
MAX_NAME = 64
_MAX_LABEL = 64
_MAX_TITLE = 200
MAX_RATERS_PER_CALL = 500
MAX_UNITS = 100_000
_MAX_ELAPSED_MS = 24 * 3600 * 1000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS studies (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, title TEXT NOT NULL, kind TEXT NOT NULL,
  questions TEXT NOT NULL, question_version TEXT NOT NULL, manifest TEXT NOT NULL, seed INTEGER NOT NULL,
  per_unit INTEGER NOT NULL, per_rater INTEGER NOT NULL, repeats INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'open', created_at TEXT NOT NULL, closed_at TEXT);
CREATE TABLE IF NOT EXISTS items (
  study_id INTEGER NOT NULL REFERENCES studies(id), item_id TEXT NOT NULL, position INTEGER NOT NULL,
  line TEXT NOT NULL, target_text TEXT NOT NULL, source_path TEXT NOT NULL, source_sha256 TEXT NOT NULL,
  PRIMARY KEY (study_id, item_id));
CREATE TABLE IF NOT EXISTS edits (
  study_id INTEGER NOT NULL, item_id TEXT NOT NULL, edit_index INTEGER NOT NULL, name TEXT NOT NULL,
  role TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (study_id, item_id, edit_index));
CREATE TABLE IF NOT EXISTS units (
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL, number INTEGER NOT NULL, item_id TEXT NOT NULL,
  edit_a INTEGER NOT NULL, edit_b INTEGER, UNIQUE (study_id, number));
CREATE TABLE IF NOT EXISTS raters (
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL, number INTEGER NOT NULL, label TEXT NOT NULL,
  token_sha256 TEXT UNIQUE, imported INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
  UNIQUE (study_id, label));
CREATE TABLE IF NOT EXISTS tasks (
  id INTEGER PRIMARY KEY, rater_id INTEGER NOT NULL REFERENCES raters(id), position INTEGER NOT NULL,
  unit_id INTEGER NOT NULL REFERENCES units(id), swapped INTEGER NOT NULL, repeat_of INTEGER,
  UNIQUE (rater_id, position));
CREATE TABLE IF NOT EXISTS judgments (
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL, rater_id INTEGER NOT NULL, task_id INTEGER,
  unit_id INTEGER NOT NULL, question TEXT NOT NULL, question_version TEXT NOT NULL, answer TEXT NOT NULL,
  shown_left INTEGER, is_repeat INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, elapsed_ms INTEGER,
  source_sha256 TEXT NOT NULL, edit_a_sha256 TEXT NOT NULL, edit_b_sha256 TEXT, origin TEXT NOT NULL,
  UNIQUE (task_id, question));
CREATE UNIQUE INDEX IF NOT EXISTS judgments_imported ON judgments (rater_id, unit_id, question, is_repeat) WHERE task_id IS NULL;
CREATE INDEX IF NOT EXISTS judgments_study ON judgments (study_id);
"""


class StudyError(InputError):
    """A refused study operation; ``status`` is the HTTP status the rater page answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def connect(db: str | Path, write: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection with the schema, WAL and ``synchronous=FULL``; ``write`` wraps the block in one
    ``BEGIN IMMEDIATE`` transaction (committed on success, rolled back on any error)."""
    path = Path(db).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='judgments'").fetchone():
            conn.executescript(_SCHEMA)
        if write:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        else:
            yield conn
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------- studies
@dataclass(frozen=True)
class Study:
    id: int
    name: str
    title: str
    kind: str
    questions: tuple[str, ...]
    question_version: str
    manifest: str
    seed: int
    per_unit: int
    per_rater: int
    repeats: int
    status: str
    created_at: str
    closed_at: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Study:
        data = dict(row)
        data["questions"] = tuple(json.loads(data["questions"]))
        return cls(**data)


def _check_name(name: str, what: str = "study name", limit: int = MAX_NAME) -> str:
    text = (name or "").strip()
    if not text or len(text) > limit or not all(c.isalnum() or c in "-_." for c in text):
        raise StudyError(f"{what} {name!r}: use 1 to {limit} letters, digits, '-', '_' or '.'")
    return text


def get_study(conn: sqlite3.Connection, name: str) -> Study:
    row = conn.execute("SELECT * FROM studies WHERE name = ?", (name,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT name FROM studies ORDER BY id")]
        raise StudyError(f"no study named {name!r} (studies: {', '.join(known) or 'none yet'})", 404)
    return Study.from_row(row)


def list_studies(db: str | Path) -> list[Study]:
    with connect(db) as conn:
        return [Study.from_row(r) for r in conn.execute("SELECT * FROM studies ORDER BY id")]


def create_study(db: str | Path, name: str, manifest: str | Path, *, kind: str = "2afc",
                 questions: Sequence[str] = ("overall",), per_unit: int = 3, per_rater: int | None = None,
                 repeats: int = 2, seed: int = 0, title: str | None = None,
                 only: Mapping[str, Collection[int]] | None = None,
                 items: Sequence[ManifestItem] | None = None) -> Study:
    """A study over the items of ``manifest`` (validated; every image hashed now, so a later change is caught).

    ``only`` (item id -> edit indices; :func:`augclip_demo.study.slices.slice_selection` makes it from an Explore
    slice): judge those edits of those items alone. The items keep all their edits (a results file of the
    manifest still matches them by content hash); the units are the chosen edits' pairs or single edits.
    ``items``: the manifest's items when the caller has read them already (a slice's selection has), so the
    manifest is read once."""
    name = _check_name(name)
    if kind not in KINDS:
        raise StudyError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    asked = tuple(dict.fromkeys(["overall", *questions]))
    unknown = [q for q in asked if q not in QUESTION_IDS]
    if unknown:
        raise StudyError(f"unknown question(s) {', '.join(unknown)}; choose from {', '.join(QUESTION_IDS)}")
    items = load_manifest(manifest) if items is None else list(items)
    if only is not None:
        items = _chosen_items(items, only, Path(manifest).name)
    units = study_units(items, kind, only)
    if only is not None:  # an item of the selection without a unit (one edit chosen, for pairs) is not shown
        judged = {unit.item_id for unit in units}
        items = [item for item in items if item.id in judged]
    if not units:
        what = "selection" if only is not None else f"manifest {manifest}"
        raise StudyError(f"{what}: no {'pair of edits of one source' if kind == '2afc' else 'edit'} "
                         "to judge (2AFC needs items with two or more edits)")
    if len(units) > MAX_UNITS:
        raise StudyError(f"the study would have {len(units)} units; at most {MAX_UNITS} (split the manifest)")
    per_rater = len(units) if per_rater is None else per_rater
    if not 1 <= per_rater <= len(units):
        raise StudyError(f"per_rater must be from 1 to the number of units ({len(units)}), got {per_rater}")
    repeats = repeats if kind == "2afc" else 0  # attention checks repeat pairs
    if not 1 <= per_unit <= 1000 or not 0 <= repeats <= per_rater:
        raise StudyError(f"per_unit must be from 1 to 1000 and repeats from 0 to per_rater ({per_rater})")
    title = (title or name).strip()[:_MAX_TITLE]
    hashes = _hash_images(items)
    with connect(db, write=True) as conn:
        if conn.execute("SELECT 1 FROM studies WHERE name = ?", (name,)).fetchone():
            raise StudyError(f"a study named {name!r} exists already; choose another name")
        cursor = conn.execute(
            "INSERT INTO studies (name, title, kind, questions, question_version, manifest, seed, per_unit, per_rater,"
            " repeats, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (name, title, kind, json.dumps(list(asked)), CURRENT_VERSION[kind], str(Path(manifest).resolve()), seed,
             per_unit, per_rater, repeats, now_utc()))
        study_id = cursor.lastrowid
        _insert_items(conn, study_id, items, hashes)
        conn.executemany("INSERT INTO units (study_id, number, item_id, edit_a, edit_b) VALUES (?,?,?,?,?)",
                         [(study_id, n, u.item_id, u.edit_a, u.edit_b) for n, u in enumerate(units)])
        return get_study(conn, name)


def _chosen_items(items: Sequence[ManifestItem], only: Mapping[str, Collection[int]],
                  manifest_name: str) -> list[ManifestItem]:
    """The manifest's items named in ``only``, after checking every id and edit index against the manifest."""
    by_id = {item.id: item for item in items}
    unknown = [str(key) for key in only if key not in by_id]
    if unknown:
        raise StudyError(f"{len(unknown)} chosen item(s) are not in manifest {manifest_name} (first: "
                         f"{', '.join(unknown[:3])}): give the manifest the results were made from")
    for key, indices in only.items():
        bad = [i for i in indices if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(by_id[key].edits)]
        if bad:
            raise StudyError(f"item {key!r} of manifest {manifest_name} has {len(by_id[key].edits)} edit(s); "
                             f"chosen edit(s) {bad[:3]} are not among them")
    return [item for item in items if item.id in only]


def _hash_images(items: Sequence[ManifestItem]) -> dict[Path, str]:
    hashes: dict[Path, str] = {}
    for item in items:
        for label, path, _ in item.labelled_images():
            if path not in hashes and label != "ground_truth":
                hashes[path] = open_image(path).sha256
    return hashes


def _insert_items(conn: sqlite3.Connection, study_id: int, items: Sequence[ManifestItem],
                  hashes: dict[Path, str]) -> None:
    for position, item in enumerate(items):
        conn.execute("INSERT INTO items VALUES (?,?,?,?,?,?,?)",
                     (study_id, item.id, position, json.dumps(item.to_dict(), ensure_ascii=False), item.target_text,
                      str(item.source_path), hashes[item.source_path]))
        conn.executemany("INSERT INTO edits VALUES (?,?,?,?,?,?,?)",
                         [(study_id, item.id, i, e.name, e.role, str(e.resolved), hashes[e.resolved])
                          for i, e in enumerate(item.edits)])


def close_study(db: str | Path, name: str) -> Study:
    with connect(db, write=True) as conn:
        study = get_study(conn, name)
        if study.status != "closed":
            conn.execute("UPDATE studies SET status = 'closed', closed_at = ? WHERE id = ?", (now_utc(), study.id))
        return get_study(conn, name)


# ---------------------------------------------------------------------------------------------- raters
@dataclass(frozen=True)
class NewRater:
    label: str
    token: str  # shown once; only its hash is stored


def add_raters(db: str | Path, name: str, labels: Sequence[str] = (), count: int = 0) -> list[NewRater]:
    """Add raters (named by ``labels``, or ``count`` numbered ones), each with a fresh token and task list."""
    if not labels and count <= 0:
        raise StudyError("give rater labels or a count of raters to add")
    if len(labels) + max(count, 0) > MAX_RATERS_PER_CALL:
        raise StudyError(f"at most {MAX_RATERS_PER_CALL} raters at a time")
    wanted = [_check_name(label, "rater label", _MAX_LABEL) for label in labels]
    out = []
    with connect(db, write=True) as conn:
        study = get_study(conn, name)
        if study.status == "closed":
            raise StudyError(f"study {name!r} is closed; raters cannot join it", 409)
        taken = {r[0] for r in conn.execute("SELECT label FROM raters WHERE study_id = ?", (study.id,))}
        number = conn.execute("SELECT COALESCE(MAX(number), -1) + 1 FROM raters WHERE study_id = ?",
                              (study.id,)).fetchone()[0]
        while len(wanted) < len(labels) + count:
            candidate = f"rater-{number + len(wanted) + 1:03d}"
            while candidate in taken or candidate in wanted:
                candidate += "x"
            wanted.append(candidate)
        clash = [label for label in wanted if label in taken]
        if clash or len(set(wanted)) != len(wanted):
            raise StudyError(f"rater label(s) already in study {name!r} or repeated: {', '.join(clash) or 'repeated'}")
        unit_ids = [r[0] for r in conn.execute("SELECT id FROM units WHERE study_id = ? ORDER BY number", (study.id,))]
        assigned = _assigned_counts(conn, study.id, unit_ids)
        for label in wanted:
            token = secrets.token_urlsafe(24)
            rater_id = conn.execute("INSERT INTO raters (study_id, number, label, token_sha256, created_at) "
                                    "VALUES (?,?,?,?,?)", (study.id, number, label, token_hash(token),
                                                           now_utc())).lastrowid
            rng = rater_rng(study.seed, number)
            chosen = choose_units(assigned, study.per_rater, rng)
            for unit in chosen:
                assigned[unit] += 1
            tasks = task_list(chosen, pairs=study.kind == "2afc", repeats=study.repeats, rng=rng)
            conn.executemany("INSERT INTO tasks (rater_id, position, unit_id, swapped, repeat_of) VALUES (?,?,?,?,?)",
                             [(rater_id, t.position, unit_ids[t.unit], int(t.swapped), t.repeat_of) for t in tasks])
            number += 1
            out.append(NewRater(label, token))
    return out


def _assigned_counts(conn: sqlite3.Connection, study_id: int, unit_ids: list[int]) -> list[int]:
    where = {unit_id: i for i, unit_id in enumerate(unit_ids)}
    counts = [0] * len(unit_ids)
    for unit_id, n in conn.execute("SELECT t.unit_id, COUNT(*) FROM tasks t JOIN raters r ON r.id = t.rater_id "
                                   "WHERE r.study_id = ? AND t.repeat_of IS NULL GROUP BY t.unit_id", (study_id,)):
        counts[where[unit_id]] = n
    return counts


# ---------------------------------------------------------------------------------------------- rating
@dataclass(frozen=True)
class RaterView:
    """What the rater page may show: the study's wording, progress and the next task (no metric, no other answer)."""

    title: str
    kind: str
    questions: list[dict[str, str]]
    done: int
    total: int
    closed: bool
    task: dict[str, Any] | None  # position, text, the edits' slots; None when all is done


def _rater(conn: sqlite3.Connection, token: str) -> tuple[sqlite3.Row, Study]:
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        raise StudyError("this rating link is not valid; ask the study's organiser for yours", 403)
    rater = conn.execute("SELECT * FROM raters WHERE token_sha256 = ?", (token_hash(token),)).fetchone()
    if rater is None:
        raise StudyError("this rating link is not valid; ask the study's organiser for yours", 403)
    study = Study.from_row(conn.execute("SELECT * FROM studies WHERE id = ?", (rater["study_id"],)).fetchone())
    return rater, study


def _progress(conn: sqlite3.Connection, rater_id: int) -> tuple[int, int]:
    total = conn.execute("SELECT COUNT(*) FROM tasks WHERE rater_id = ?", (rater_id,)).fetchone()[0]
    done = conn.execute("SELECT COUNT(DISTINCT task_id) FROM judgments WHERE rater_id = ? AND task_id IS NOT NULL",
                        (rater_id,)).fetchone()[0]
    return done, total


def _next_position(conn: sqlite3.Connection, rater_id: int) -> int | None:
    """The rater's first unanswered task (None when all are answered)."""
    row = conn.execute("SELECT MIN(t.position) FROM tasks t WHERE t.rater_id = ? AND NOT EXISTS "
                       "(SELECT 1 FROM judgments j WHERE j.task_id = t.id)", (rater_id,)).fetchone()
    return row[0]


def rater_view(db: str | Path, token: str) -> RaterView:
    """The rater's next unanswered task (resuming where they stopped) and their progress."""
    with connect(db) as conn:
        rater, study = _rater(conn, token)
        done, total = _progress(conn, rater["id"])
        wording = QUESTION_SETS[study.question_version]
        questions = [{"id": q, "prompt": wording[q].prompt, "low": wording[q].low, "high": wording[q].high}
                     for q in study.questions]
        position = _next_position(conn, rater["id"])
        row = conn.execute(
            "SELECT t.position, u.edit_b, i.target_text FROM tasks t JOIN units u ON u.id = t.unit_id "
            "JOIN items i ON i.study_id = u.study_id AND i.item_id = u.item_id WHERE t.rater_id = ? AND t.position = ?",
            (rater["id"], position)).fetchone() if position is not None else None
        task = None
        if row is not None and study.status == "open":
            task = {"position": row["position"], "text": row["target_text"],
                    "slots": ["left", "right"] if row["edit_b"] is not None else ["edit"]}
        return RaterView(study.title, study.kind, questions, done, total, study.status == "closed", task)


def task_image(db: str | Path, token: str, position: int, slot: str) -> tuple[Path, str]:
    """(path, expected content hash) of the image ``slot`` (source / left / right / edit) of the rater's task.

    Only the rater's current task and the one just answered (a page still loading it) are served: a rater
    cannot cycle through all the pictures of their tasks, each a full decode once the picture cache is full."""
    with connect(db) as conn:
        rater, _ = _rater(conn, token)
        current = _next_position(conn, rater["id"])
        if current is None:
            current = conn.execute("SELECT COUNT(*) FROM tasks WHERE rater_id = ?", (rater["id"],)).fetchone()[0]
        if not current - 1 <= position <= current:
            raise StudyError("no such image in your tasks", 404)
        row = conn.execute(
            "SELECT t.swapped, u.item_id, u.edit_a, u.edit_b, u.study_id FROM tasks t JOIN units u ON u.id = t.unit_id "
            "WHERE t.rater_id = ? AND t.position = ?", (rater["id"], position)).fetchone()
        if row is None or slot not in ("source", "left", "right", "edit") or (
                slot != "source" and (slot == "edit") != (row["edit_b"] is None)):
            raise StudyError("no such image in your tasks", 404)
        if slot == "source":
            item = conn.execute("SELECT source_path, source_sha256 FROM items WHERE study_id = ? AND item_id = ?",
                                (row["study_id"], row["item_id"])).fetchone()
            return Path(item["source_path"]), item["source_sha256"]
        left, right = (row["edit_b"], row["edit_a"]) if row["swapped"] else (row["edit_a"], row["edit_b"])
        index = {"edit": row["edit_a"], "left": left, "right": right}[slot]
        edit = conn.execute("SELECT path, sha256 FROM edits WHERE study_id = ? AND item_id = ? AND edit_index = ?",
                            (row["study_id"], row["item_id"], index)).fetchone()
        return Path(edit["path"]), edit["sha256"]


def submit_answer(db: str | Path, token: str, position: Any, answers: Any, elapsed_ms: Any = None) -> tuple[int, int]:
    """Store the answers of one task (all questions at once, one transaction); returns (done, total) after it.

    Refused: an unknown token, a closed study, a task that is not the rater's, a task answered
    already, missing or extra questions, and answers outside the scale.
    """
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < 10 * MAX_UNITS:
        raise StudyError("'position' must be the number of one of your tasks")
    if not isinstance(answers, dict) or len(answers) > len(QUESTION_IDS):
        raise StudyError("'answers' must map each question of the study to an answer")
    if elapsed_ms is not None and (isinstance(elapsed_ms, bool) or not isinstance(elapsed_ms, int)
                                   or not 0 <= elapsed_ms <= _MAX_ELAPSED_MS):
        elapsed_ms = None  # the client's timer is advisory: a bad value is dropped, not stored
    with connect(db, write=True) as conn:
        rater, study = _rater(conn, token)
        if study.status != "open":
            raise StudyError("this study is closed; thank you, no more answers are taken", 409)
        if set(answers) != set(study.questions):
            raise StudyError(f"answer exactly these questions: {', '.join(study.questions)}")
        task = conn.execute(
            "SELECT t.*, u.item_id, u.edit_a, u.edit_b FROM tasks t JOIN units u ON u.id = t.unit_id "
            "WHERE t.rater_id = ? AND t.position = ?", (rater["id"], position)).fetchone()
        if task is None:
            raise StudyError("that task is not one of yours", 404)
        stored = {q: _page_answer(study.kind, answers[q], bool(task["swapped"])) for q in study.questions}
        bad = [q for q, v in stored.items() if v is None]
        if bad:
            allowed = "'left', 'right' or 'tie'" if study.kind == "2afc" else "a whole number from 1 to 5"
            raise StudyError(f"the answer to {', '.join(bad)} must be {allowed}")
        if conn.execute("SELECT 1 FROM judgments WHERE task_id = ?", (task["id"],)).fetchone():
            raise StudyError("you answered this task already; answers cannot be changed", 409)
        following = _next_position(conn, rater["id"])
        if position != following:  # the order is part of the design (attention checks come later)
            raise StudyError("answer the tasks in the order the page shows them; reload the page for the next one", 409)
        hashes = _unit_hashes(conn, study.id, task["item_id"], task["edit_a"], task["edit_b"])
        shown_left = None if task["edit_b"] is None else (task["edit_b"] if task["swapped"] else task["edit_a"])
        created = now_utc()
        conn.executemany(
            "INSERT INTO judgments (study_id, rater_id, task_id, unit_id, question, question_version, answer, "
            "shown_left, is_repeat, created_at, elapsed_ms, source_sha256, edit_a_sha256, edit_b_sha256, origin) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(study.id, rater["id"], task["id"], task["unit_id"], q, study.question_version, stored[q], shown_left,
              int(task["repeat_of"] is not None), created, elapsed_ms, *hashes, "rater-page") for q in study.questions])
        return _progress(conn, rater["id"])


def _page_answer(kind: str, answer: Any, swapped: bool) -> str | None:
    """The rater page answers by side (left / right / tie); stored by edit ("a" = the lower index)."""
    if kind == "2afc":
        sides = {"left": "b" if swapped else "a", "right": "a" if swapped else "b", "tie": "tie"}
        return sides.get(answer) if isinstance(answer, str) else None
    return valid_answer(kind, answer)


def _unit_hashes(conn: sqlite3.Connection, study_id: int, item_id: str, edit_a: int,
                 edit_b: int | None) -> tuple[str, str, str | None]:
    source = conn.execute("SELECT source_sha256 FROM items WHERE study_id = ? AND item_id = ?",
                          (study_id, item_id)).fetchone()[0]
    rows = dict(conn.execute("SELECT edit_index, sha256 FROM edits WHERE study_id = ? AND item_id = ?",
                             (study_id, item_id)).fetchall())
    return source, rows[edit_a], (rows[edit_b] if edit_b is not None else None)


# ---------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Judgment:
    """One stored judgment, with the unit's edits resolved to names, roles and content hashes."""

    rater: str
    item_id: str
    edit_a: int
    edit_b: int | None
    question: str
    question_version: str
    answer: str
    is_repeat: bool
    shown_left: int | None
    created_at: str
    elapsed_ms: int | None
    source_sha256: str
    edit_a_sha256: str
    edit_b_sha256: str | None
    origin: str


def _read_judgments(conn: sqlite3.Connection, study: Study) -> list[Judgment]:
    rows = conn.execute(
        "SELECT r.label, u.item_id, u.edit_a, u.edit_b, j.question, j.question_version, j.answer, j.is_repeat, "
        "j.shown_left, j.created_at, j.elapsed_ms, j.source_sha256, j.edit_a_sha256, j.edit_b_sha256, j.origin "
        "FROM judgments j JOIN raters r ON r.id = j.rater_id JOIN units u ON u.id = j.unit_id "
        "WHERE j.study_id = ? ORDER BY j.id", (study.id,))
    return [Judgment(*row[:7], bool(row[7]), *row[8:]) for row in rows]


@dataclass
class StudyData:
    """Everything the statistics and the exports read: the study, its items' edits and its judgments."""

    study: Study
    lines: dict[str, dict[str, Any]]  # item id -> its manifest line (paths as written)
    edits: dict[str, list[dict[str, Any]]]  # item id -> [{"name", "role", "sha256"}] by index
    units: list[Unit]
    judgments: list[Judgment]
    raters: dict[str, int]  # label -> tasks assigned
    source_sha256: dict[str, str]


def load_study(db: str | Path, name: str) -> StudyData:
    with connect(db) as conn:
        study = get_study(conn, name)
        lines, sources = {}, {}
        for row in conn.execute("SELECT item_id, line, source_sha256 FROM items WHERE study_id = ? ORDER BY position",
                                (study.id,)):
            lines[row[0]] = json.loads(row[1])
            sources[row[0]] = row[2]
        edits: dict[str, list[dict[str, Any]]] = {key: [] for key in lines}
        for row in conn.execute("SELECT item_id, name, role, sha256 FROM edits WHERE study_id = ? "
                                "ORDER BY item_id, edit_index", (study.id,)):
            edits[row[0]].append({"name": row[1], "role": row[2], "sha256": row[3]})
        units = [Unit(r[0], r[1], r[2]) for r in conn.execute(
            "SELECT item_id, edit_a, edit_b FROM units WHERE study_id = ? ORDER BY number", (study.id,))]
        raters = {r[0]: r[1] for r in conn.execute(
            "SELECT r.label, COUNT(t.id) FROM raters r LEFT JOIN tasks t ON t.rater_id = r.id WHERE r.study_id = ? "
            "GROUP BY r.id ORDER BY r.number", (study.id,))}
        return StudyData(study, lines, edits, units, _read_judgments(conn, study), raters, sources)


# ---------------------------------------------------------------------------------------------- pictures
_MAX_SHOWN_SIDE = 1024  # pictures are sent at most this large (a phone needs no more; the page scales them)


@functools.lru_cache(maxsize=64)
def _jpeg(path: str, expected: str, mtime_ns: int, size: int) -> bytes:
    loaded = open_image(path)
    if loaded.sha256 != expected:
        raise StudyError("this picture changed after the study was created; tell the study's organiser", 409)
    image = loaded.image.copy()
    image.thumbnail((_MAX_SHOWN_SIDE, _MAX_SHOWN_SIDE))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=92)
    return buffer.getvalue()


def shown_picture(path: Path, expected_sha256: str) -> bytes:
    """The picture as the rater page shows it (JPEG, longest side <= _MAX_SHOWN_SIDE), checked against its hash."""
    try:
        info = path.stat()
        return _jpeg(str(path), expected_sha256, info.st_mtime_ns, info.st_size)
    except StudyError:
        raise
    except Exception:  # never show a server path or a decoder's message to a rater
        raise StudyError("this picture could not be read; tell the study's organiser", 500) from None
