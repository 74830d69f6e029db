"""The app's batch upload path: zip limits and refusals, then one call from upload to protocol table."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

from augclip_demo.batch.synthetic import write_synthetic_manifest
from augclip_demo.batch.upload import run_uploaded_batch
from augclip_demo.batch.ziputil import ZipLimits, safe_extract
from augclip_demo.config import Settings
from augclip_demo.errors import ManifestError, UnsafeArchiveError
from tests.support import TINY

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


def make_zip(path: Path, entries: dict[str, bytes], *, symlinks: dict[str, str] | None = None,
             encrypted: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name), data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    if encrypted:  # zipfile cannot write encrypted entries: set the "encrypted" flag bit in both headers
        data = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as archive:
            offsets = [archive.getinfo(name).header_offset for name in encrypted]
        for offset in offsets:
            data[offset + 6] |= 0x1
        position = data.find(b"PK\x01\x02")
        while position != -1:
            length = int.from_bytes(data[position + 28:position + 30], "little")
            if data[position + 46:position + 46 + length].decode() in encrypted:
                data[position + 8] |= 0x1
            position = data.find(b"PK\x01\x02", position + 4)
        path.write_bytes(bytes(data))
    return path


def test_safe_zip_extracts_and_skips_macos_metadata(tmp_path):
    zip_path = make_zip(tmp_path / "ok.zip", {"imgs/a.png": PNG, "imgs/sub/b.png": PNG, "__MACOSX/imgs/._a.png": b"x",
                                              "imgs/.DS_Store": b"x"})
    written = safe_extract(zip_path, tmp_path / "out", ZipLimits())
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == ["imgs/a.png", "imgs/sub/b.png"]
    assert (tmp_path / "out" / "imgs" / "a.png").read_bytes() == PNG


@pytest.mark.parametrize("entries, kwargs, limits, message", [
    ({"a.png": PNG}, {}, ZipLimits(max_zip_bytes=50), "over the upload limit"),
    ({f"{i}.png": PNG for i in range(6)}, {}, ZipLimits(max_files=5), "holds more than 5 entries (files and folders)"),
    ({f"d{i}/": b"" for i in range(6)}, {}, ZipLimits(max_files=5), "holds more than 5 entries (files and folders)"),
    ({"big.png": b"\x00" * 200_000}, {}, ZipLimits(max_total_bytes=100_000), "expands to 195.3 KB, over the limit of 97.7 KB"),
    ({"../evil.png": PNG}, {}, ZipLimits(), "contains '..'"),
    ({"imgs/../../evil.png": PNG}, {}, ZipLimits(), "contains '..'"),
    ({"imgs\\..\\..\\evil.png": PNG}, {}, ZipLimits(), "contains '..'"),
    ({"/etc/evil.png": PNG}, {}, ZipLimits(), "has an absolute path"),
    ({"C:/evil.png": PNG}, {}, ZipLimits(), "has an absolute path"),
    ({"a.png": PNG}, {"symlinks": {"link.png": "/etc/passwd"}}, ZipLimits(), "is a symbolic link"),
    ({"a.png": PNG, "secret.png": PNG}, {"encrypted": ("secret.png",)}, ZipLimits(), "is encrypted"),
    ({"a.png": PNG, "A.PNG": PNG}, {}, ZipLimits(), "two entries named"),
])
def test_unsafe_or_oversized_zips_are_refused(tmp_path, entries, kwargs, limits, message):
    zip_path = make_zip(tmp_path / "bad.zip", entries, **kwargs)
    with pytest.raises(UnsafeArchiveError, match=message.replace("(", r"\(").replace(")", r"\)")):
        safe_extract(zip_path, tmp_path / "out", limits)
    assert not (tmp_path / "evil.png").exists() and not (tmp_path.parent / "evil.png").exists()
    assert not list((tmp_path / "out").rglob("*.png")) if (tmp_path / "out").exists() else True


def test_not_a_zip_and_lying_headers(tmp_path):
    (tmp_path / "fake.zip").write_bytes(b"PK not really")
    with pytest.raises(UnsafeArchiveError, match="not a zip file"):
        safe_extract(tmp_path / "fake.zip", tmp_path / "out", ZipLimits())
    # a header that understates the size: the bytes written are counted, or the CRC check refuses it
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.bin", b"\x00" * 300_000)
    data = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("bomb.bin")
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = (1000).to_bytes(4, "little")  # uncompressed size in the central directory
    data[info.header_offset + 22:info.header_offset + 26] = (1000).to_bytes(4, "little")  # and in the local header
    (tmp_path / "liar.zip").write_bytes(bytes(data))
    with pytest.raises(UnsafeArchiveError):
        safe_extract(tmp_path / "liar.zip", tmp_path / "out2", ZipLimits(max_total_bytes=100_000))


def test_limits_come_from_settings():
    limits = ZipLimits.from_settings(Settings.from_env({"AUGCLIP_UPLOAD_MAX_FILES": "7",
                                                        "AUGCLIP_UPLOAD_MAX_ZIP_MB": "2"}))
    assert limits.max_files == 7 and limits.max_zip_bytes == 2 * 1024 * 1024


def zip_folder(folder: Path, zip_path: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(zip_path, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix == ".png":
                archive.write(path, prefix + path.relative_to(folder).as_posix())
    return zip_path


def test_upload_runs_batch_and_protocols(tmp_path, tiny_encoder):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny model: see test_batch_runner
    try:
        data = tmp_path / "data"
        manifest = write_synthetic_manifest(data, 6, image_size=48, n_attributes=2)
        upload = tmp_path / "my survey.jsonl"
        upload.write_text(manifest.read_text())
        images = zip_folder(data, tmp_path / "images.zip", prefix="survey/")  # wrapped in one folder
        steps: list[tuple[float, str]] = []
        settings = Settings.from_env(clip_model=TINY, device="cpu")
        result = run_uploaded_batch(upload, images, work_dir=tmp_path / "work", settings=settings,
                                    encoder=tiny_encoder, metrics="augclip,clip_i,l2", n_boot=50,
                                    progress=lambda f, m: steps.append((f, m)))
    finally:
        torch.set_num_threads(threads)
    assert result.summary.n_ok == 6 and result.untrained
    assert [Path(p).name for p in result.files()] == ["my_survey-results.jsonl", "my_survey-results.csv",
                                                      "my_survey-protocol.json", "my_survey-protocol.csv"]
    assert all(Path(p).is_file() for p in result.files())
    assert result.protocol_headers[0] == "metric" and "my_survey s2AFC" in result.protocol_headers
    assert [row[0] for row in result.protocol_rows] == ["AugCLIP", "CLIP-I", "L2"]
    assert json.loads(result.protocol_json.read_text())["datasets"]["my_survey"]["n_items"] == 6
    assert steps[0] == (0.0, "extracting the zip") and steps[-1][0] == 1.0
    assert all(a[0] <= b[0] for a, b in zip(steps, steps[1:]))
    assert "6 item(s) scored" in result.summary_text
    assert not (tmp_path / "work" / "data").exists()  # the extracted images are not kept


def test_upload_refuses_unsafe_zip_and_bad_manifest(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": "x.png", "target_text": "t", "edits": ["y.png"]}) + "\n")
    evil = make_zip(tmp_path / "evil.zip", {"../../x.png": PNG})
    with pytest.raises(UnsafeArchiveError, match="contains '..'"):
        run_uploaded_batch(manifest, evil, work_dir=tmp_path / "w1")
    ok = make_zip(tmp_path / "ok.zip", {"x.png": PNG})
    with pytest.raises(ManifestError, match="y.png.*file not found") as info:
        run_uploaded_batch(manifest, ok, work_dir=tmp_path / "w2")
    assert str(info.value).startswith("manifest m.jsonl: 1 problem(s)")  # the uploaded name, not our copy's path


def test_a_refused_upload_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": "x.png", "target_text": "t", "edits": ["y.png"]}) + "\n")
    for archive in (make_zip(tmp_path / "evil.zip", {"../x.png": PNG}), make_zip(tmp_path / "ok.zip", {"x.png": PNG})):
        with pytest.raises((UnsafeArchiveError, ManifestError)):
            run_uploaded_batch(manifest, archive)
    assert list(scratch.iterdir()) == []


def test_a_stopped_upload_returns_its_kept_items_when_asked_and_resumes_after_them(tmp_path, tiny_encoder):
    """keep_stopped: the run stopped mid-way returns what it scored (CSV and protocols of those items only),
    and the same call on the same folder scores the rest."""
    import csv
    import threading

    from augclip_demo.errors import BatchCancelled

    data = tmp_path / "data"
    manifest = write_synthetic_manifest(data, 12, image_size=48, n_attributes=2)
    images = zip_folder(data, tmp_path / "images.zip")
    settings = Settings.from_env(clip_model=TINY, device="cpu")
    cancel = threading.Event()

    def stop_after_the_first_item(fraction: float, message: str) -> None:
        if "items scored" in message:
            cancel.set()

    common = dict(settings=settings, encoder=tiny_encoder, metrics="augclip,clip_i", n_boot=20)
    with pytest.raises(BatchCancelled):  # by default a stopped run raises, as before
        run_uploaded_batch(manifest, images, work_dir=tmp_path / "plain", cancel=cancel,
                           progress=stop_after_the_first_item, **common)
    cancel.clear()
    stopped = run_uploaded_batch(manifest, images, work_dir=tmp_path / "work", cancel=cancel, keep_stopped=True,
                                 progress=stop_after_the_first_item, **common)
    records = [json.loads(line) for line in stopped.results_jsonl.read_text().splitlines()]
    assert stopped.summary.interrupted and 1 <= len(records) < 12
    assert stopped.summary.n_ok + stopped.summary.n_failed == len(records)
    with open(stopped.results_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["id"] for row in rows} == {record["id"] for record in records}
    assert json.loads(stopped.protocol_json.read_text())["datasets"][manifest.stem]["n_items"] == len(records)
    finished = run_uploaded_batch(manifest, images, work_dir=tmp_path / "work", **common)
    assert not finished.summary.interrupted
    assert (finished.summary.n_skipped, finished.summary.n_ok) == (len(records), 12 - len(records))
