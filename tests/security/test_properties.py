"""Property-based tests (hypothesis): manifests and attribute JSON, whatever their content, either load
or are refused with a :class:`~augclip_demo.errors.InputError`; never another exception. Valid ones
round-trip unchanged."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from augclip_demo.attributes.base import Attributes
from augclip_demo.batch.manifest import load_manifest, validate_manifest, write_manifest
from augclip_demo.errors import InputError
from tests.security import probes

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
paths = st.sampled_from(["src.png", "edit.png", "./src.png", "sub/x.png", "../src.png", "/etc/passwd", "", "src\x00.png",
                         "C:\\x.png", "edit.png/", "\\\\server\\share\\a.png"])
edit_entries = st.one_of(paths, st.fixed_dictionaries(
    {"path": paths}, optional={"name": st.one_of(st.text(max_size=8), st.integers()),
                               "role": st.sampled_from(["gt", "ep", "em", "candidate", "best", ""])}))
items = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=6), st.integers(), st.none(), st.booleans()),
     "source": st.one_of(paths, st.integers()),
     "target_text": st.one_of(st.text(max_size=12), st.none()),
     "edits": st.one_of(st.lists(edit_entries, max_size=3), json_values)},
    optional={"human": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "preferred": st.one_of(st.integers(-2, 4), st.booleans(), st.floats()),
        "scores": st.lists(st.one_of(st.floats(allow_nan=True), st.none(), st.text(max_size=3)), max_size=3)})),
        "attributes": st.one_of(json_values, st.fixed_dictionaries({"source": json_values, "target": json_values})),
        "meta": json_values, "source_text": json_values, "dataset": json_values},
)


@contextmanager
def _scratch() -> Iterator[Path]:
    """A folder for one example, deleted after it (hypothesis runs each test 60 times)."""
    with tempfile.TemporaryDirectory(prefix="augclip-prop-") as folder:
        yield Path(folder)


@SETTINGS
@given(lines=st.lists(st.one_of(items, json_values), min_size=1, max_size=4))
def test_any_manifest_loads_or_is_refused_with_an_input_error(lines):
    with _scratch() as scratch:
        _check_manifest_lines(probes.manifest_folder(scratch), lines)


def _check_manifest_lines(folder: Path, lines: list) -> None:
    manifest = folder / "m.jsonl"
    manifest.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    try:
        scan = validate_manifest(manifest)
    except InputError as exc:
        assert str(exc).startswith(f"manifest {manifest}") or "manifest" in str(exc)
        return
    loaded = load_manifest(manifest)
    assert len(loaded) == scan.items == len(lines)
    for item in loaded:
        assert item.source_path.is_file() and all(edit.resolved.is_file() for edit in item.edits)
        assert folder in item.source_path.resolve().parents


@SETTINGS
@given(raw=st.binary(max_size=200))
def test_any_bytes_as_a_manifest_load_or_are_refused(raw):
    with _scratch() as scratch:
        manifest = probes.manifest_folder(scratch) / "m.jsonl"
        manifest.write_bytes(raw)
        try:
            scan = validate_manifest(manifest)
        except InputError as exc:
            assert str(exc).startswith(f"manifest {manifest}")  # the file is named, whatever went wrong
            return
        assert scan.items >= 1 and not scan.problems


@SETTINGS
@given(ids=st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                            max_size=8).filter(str.strip), min_size=1, max_size=4, unique_by=str.strip),
       target=st.text(min_size=1, max_size=20).filter(str.strip),
       preferred=st.integers(0, 1))
def test_valid_manifests_round_trip(ids, target, preferred):
    written = [{"id": item_id.strip(), "source": "src.png", "target_text": target.strip(),
                "edits": [{"path": "edit.png", "name": "a", "role": "gt"}, {"path": "src.png", "name": "b", "role": "ep"}],
                "human": {"preferred": preferred}} for item_id in ids]
    with _scratch() as scratch:
        path = write_manifest(written, probes.manifest_folder(scratch) / "m.jsonl")
        assert [item.to_dict() for item in load_manifest(path)] == written


def _load_attributes(data: object, scratch: Path) -> Attributes | None:
    """``data`` written as an attribute file in ``scratch`` and loaded; None when it is refused (InputError)."""
    path = scratch / "a.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        return Attributes.load(path)
    except InputError:
        return None


@SETTINGS
@given(data=json_values)
def test_any_attribute_json_loads_or_is_refused(data):
    with _scratch() as scratch:
        attributes = _load_attributes(data, scratch)
    if attributes is None:
        return
    assert all(isinstance(text, str) and text == text.strip() and text for text in attributes.source + attributes.target)


@SETTINGS
@given(source=st.lists(st.text(max_size=15), max_size=5), target=st.lists(st.text(max_size=15), max_size=5),
       provenance=st.one_of(st.none(), json_values))
def test_attribute_objects_load_or_are_refused_and_round_trip(source, target, provenance):
    data = {"source_attributes": source, "target_attributes": target}
    if provenance is not None:
        data["provenance"] = provenance
    with _scratch() as scratch:
        attributes = _load_attributes(data, scratch)
        if attributes is None:
            return
        again = Attributes.load(attributes.save(scratch / "again.json"))
    assert (again.source, again.target) == (attributes.source, attributes.target)
