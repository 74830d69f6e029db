"""The table of bad inputs, in process: each case checks the exact complaint, then that a good request
of the same kind still works (nothing was left broken: no global state, no open file, no lost cache).

Kinds: images, texts (the app's evaluation inputs), attribute JSON, manifests, zips, model specs,
LLM answers (a real HTTP server on 127.0.0.1) and the CLI. The same kinds through the running app's
API are in test_api_probes.py.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.attributes.answers import parse_attribute_list
from augclip_demo.attributes.base import Attributes
from augclip_demo.batch.manifest import validate_manifest
from augclip_demo.batch.upload import run_uploaded_batch
from augclip_demo.batch.ziputil import ZipLimits, safe_extract
from augclip_demo.cli import main as cli_main
from augclip_demo.config import Settings
from augclip_demo.errors import AugclipError
from augclip_demo.inference import ClipEncoder
from augclip_demo.io import PixelBudget, open_image
from augclip_demo.llm import OpenAICompatibleClient
from augclip_demo.pipeline import AugCLIPOptions
from augclip_demo.ui.evaluate import session as logic
from tests.security import probes
from tests.support import TINY
from tests.support.chat_server import ChatServer, completion


@dataclass(frozen=True)
class Case:
    kind: str
    name: str
    bad: Callable[[Path], object]  # gets a fresh folder; must raise AugclipError
    message: str  # what the message must contain


# ------------------------------------------------------------------------------------------------ images
def _image_file(name: str, data: bytes) -> Callable[[Path], object]:
    return lambda tmp: open_image(probes.write(tmp / name, data))


IMAGE_CASES = [
    Case("image", "empty bytes", lambda tmp: open_image(b""), "the data is empty (0 bytes)"),
    Case("image", "text named .png", _image_file("notes.png", "hello"), "notes.png: not a recognised image format"),
    Case("image", "truncated png", _image_file("cut.png", probes.truncated_png()), "cut.png: the image data is corrupt or truncated"),
    Case("image", "1x1 pixel", _image_file("dot.png", probes.png(Image.new("RGB", (1, 1)))), "dot.png: the image is 1x1 pixels; images must be at least 8x8"),
    Case("image", "a 1000x4 strip", lambda tmp: open_image(np.zeros((4, 1000, 3), np.uint8)), "the image is 1000x4 pixels"),
    Case("image", "over the bomb limit", lambda tmp: open_image(probes.write(tmp / "big.png", probes.png(Image.new("L", (300, 300)))), max_pixels=20_000), "big.png: the image has 90,000 pixels, over the decompression-bomb limit"),
    Case("image", "missing file", lambda tmp: open_image(tmp / "nowhere.png"), "nowhere.png: file not found"),
    Case("image", "a folder", lambda tmp: open_image(tmp), "is a folder, not an image file"),
    Case("image", "NUL in the path", lambda tmp: open_image(str(tmp / "a\x00.png")), "a file name cannot contain a NUL byte"),
    Case("image", "zero-byte file", _image_file("zero.png", b""), "zero.png: the file is empty (0 bytes)"),
    Case("image", "NaN array", lambda tmp: open_image(np.full((9, 9), np.nan)), "the array contains NaN or infinite values"),
    Case("image", "4-d array", lambda tmp: open_image(np.zeros((9, 9, 2, 2), np.uint8)), "expected an array of shape (H, W), (H, W, 3) or (H, W, 4)"),
    Case("image", "complex array", lambda tmp: open_image(np.zeros((9, 9), np.complex64)), "unsupported array dtype complex64"),
    Case("image", "not an image object", lambda tmp: open_image(12345), "unsupported input type int"),
    Case("image", "over the request's pixel budget",
         lambda tmp: [open_image(probes.noise((300, 300)), budget=b) for b in [PixelBudget(100_000)] for _ in range(2)],
         "this request's images hold 180,000 pixels in total, over the budget of 100,000 pixels per request"),
]


# ------------------------------------------------------------------------------------------------ texts (app inputs)
def _evaluate(tmp: Path, **overrides) -> object:
    source = str(probes.good_png(tmp / "src.png"))
    edit = str(probes.good_png(tmp / "edit.png", "blue"))
    kwargs = dict(source=source, edits=[edit], target_text="a blue ball", source_text="", provider="manual",
                  source_attrs_box="red ball", target_attrs_box="blue ball", options=AugCLIPOptions(),
                  progress=lambda fraction, stage: None)
    kwargs.update(overrides)
    return logic.evaluate(Settings.from_env(clip_model=TINY, device="cpu"), logic.Session(), **kwargs)


TEXT_CASES = [
    Case("text", "no source image", lambda tmp: _evaluate(tmp, source=None), "Upload a source image first"),
    Case("text", "empty target text", lambda tmp: _evaluate(tmp, target_text="   "), "The target text is empty"),
    Case("text", "no edited image", lambda tmp: _evaluate(tmp, edits=[]), "Upload at least one edited image"),
    Case("text", "nine edited images", lambda tmp: _evaluate(tmp, edits=[str(probes.good_png(tmp / f"e{i}.png")) for i in range(9)]),
         "9 edited images uploaded; the limit is 8. Remove 1."),
    Case("text", "manual provider, empty lists", lambda tmp: _evaluate(tmp, source_attrs_box="", target_attrs_box=""),
         "Provider 'manual': type the source and target attributes"),
    Case("text", "re-score before evaluating", lambda tmp: logic.rescore(Settings.from_env(clip_model=TINY), logic.Session(), AugCLIPOptions(), "a", "b"),
         "Nothing to re-score yet: press Evaluate first."),
    Case("text", "C is not positive", lambda tmp: AugCLIPOptions(C=-1.0), "C must be a positive number, got -1.0"),
    Case("text", "unknown classifier", lambda tmp: AugCLIPOptions(classifier="forest"), "classifier must be one of svm, logistic, lda"),
]


# ------------------------------------------------------------------------------------------------ attribute JSON
def _attributes(name: str, data: bytes | str) -> Callable[[Path], object]:
    return lambda tmp: Attributes.load(probes.write(tmp / name, data))


JSON_CASES = [
    Case("json", "nested 100 000 deep", _attributes("deep.json", probes.deep_json(100_000)), "deep.json: JSON nested more than 32 levels deep"),
    Case("json", "not UTF-8", _attributes("latin.json", b'{"source_attributes": ["caf\xe9"]}'), "latin.json: not UTF-8 text"),
    Case("json", "not JSON", _attributes("broken.json", '{"source_attributes": ['), "broken.json: not valid JSON"),
    Case("json", "a list, not an object", _attributes("list.json", "[1, 2]"), "expected a JSON object with source_attributes and target_attributes"),
    Case("json", "a key missing", _attributes("half.json", '{"source_attributes": ["a"]}'), "missing key(s) target_attributes"),
    Case("json", "a string, not a list", _attributes("str.json", '{"source_attributes": "a", "target_attributes": ["b"]}'),
         "source_attributes must be a list of strings, got str"),
    Case("json", "file missing", lambda tmp: Attributes.load(tmp / "none.json"), "none.json: not found"),
]


# ------------------------------------------------------------------------------------------------ manifests
def _manifest(*lines: str | bytes) -> Callable[[Path], object]:
    def bad(tmp: Path) -> object:
        probes.manifest_folder(tmp)
        data = b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines) + b"\n"
        return validate_manifest(probes.write(tmp / "m.jsonl", data))
    return bad


MANIFEST_CASES = [
    Case("manifest", "NUL byte in a path", _manifest(probes.manifest_line(source="src\u0000.png")), "contains a control character (such as a NUL byte)"),
    Case("manifest", "JSON nested 5000 deep", _manifest(probes.deep_json(5000)), "line 1: JSON nested more than 32 levels deep"),
    Case("manifest", "not UTF-8", _manifest(b'{"id": "\xff"}'), "not UTF-8 text"),
    Case("manifest", "not JSON", _manifest('{"id": "a",'), "line 1: not valid JSON"),
    Case("manifest", "absolute path", _manifest(probes.manifest_line(source="/etc/passwd")), "source '/etc/passwd' is absolute"),
    Case("manifest", "path with ..", _manifest(probes.manifest_line(source="../src.png")), "contains '..'; paths must stay inside"),
    Case("manifest", "missing image", _manifest(probes.manifest_line(source="gone.png")), "source 'gone.png': file not found"),
    Case("manifest", "misspelt key", _manifest(probes.manifest_line(target_txt="x")), "unknown key 'target_txt' (did you mean 'target_text'?)"),
    Case("manifest", "repeated id", _manifest(probes.manifest_line(), probes.manifest_line()), "id 'a' repeats the id on line 1"),
    Case("manifest", "preferred out of range", _manifest(probes.manifest_line(human={"preferred": 3})), "human.preferred must be an edit index from 0 to 0, got 3"),
    Case("manifest", "NaN score", _manifest(probes.manifest_line(human={"scores": [float("nan")]})), "human.scores[0] must be a finite number or null, got nan"),
    Case("manifest", "empty edits", _manifest(probes.manifest_line(edits=[])), "edits must be a non-empty list"),
    Case("manifest", "unknown role", _manifest(probes.manifest_line(edits=[{"path": "edit.png", "role": "best"}])), "edits[0].role 'best' is not one of gt, ep, em, candidate"),
    Case("manifest", "a line that is a list", _manifest("[1, 2, 3]"), "line 1: expected a JSON object, got list"),
    Case("manifest", "no items", _manifest("", "  "), "the manifest has no items"),
    Case("manifest", "empty target text", _manifest(probes.manifest_line(target_text="  ")), "target_text is missing or empty"),
]


# ------------------------------------------------------------------------------------------------ zips
def _zip(entries: dict[str, bytes], limits: ZipLimits | None = None, **kwargs) -> Callable[[Path], object]:
    return lambda tmp: safe_extract(probes.zip_of(tmp / "up.zip", entries, **kwargs), tmp / "out", limits or ZipLimits())


ZIP_CASES = [
    Case("zip", "not a zip", lambda tmp: safe_extract(probes.write(tmp / "x.zip", "not a zip"), tmp / "out"), "x.zip is not a zip file"),
    Case("zip", "absolute entry", _zip({"/etc/cron.d/x": b"1"}), "has an absolute path"),
    Case("zip", "entry with ..", _zip({"a/../../x.png": b"1"}), "contains '..' (it would be written outside the upload folder)"),
    Case("zip", "symbolic link", _zip({"link.png": b"/etc/passwd"}, links=("link.png",)), "'link.png' is a symbolic link; links are refused"),
    Case("zip", "two entries, one name", _zip({"a.png": b"1", "A.PNG": b"2"}), "the zip has two entries named 'A.PNG'"),
    Case("zip", "a file and a folder, one name", _zip({"x": b"1", "x/y.png": b"2"}), "uses 'x' both as a file and as a folder"),
    Case("zip", "nested 2000 folders deep", _zip({"d/" * 2000 + "f.png": b"1"}), "is nested 2000 folders deep; at most 32 are accepted"),
    Case("zip", "a name over 255 bytes", _zip({"n" * 300 + ".png": b"1"}), "a file or folder name longer than 255 bytes"),
    Case("zip", "control character in a name", _zip({"a\tb.png": b"1"}), "has a control character in its name"),
    Case("zip", "encrypted entry", _zip({"secret.png": b"1"}, encrypted=("secret.png",)), "'secret.png' is encrypted"),
    Case("zip", "too many files", _zip({f"{i}.png": b"1" for i in range(5)}, ZipLimits(max_files=4)), "the zip holds more than 4 entries (files and folders), over the limit"),
    Case("zip", "expands too much", _zip({"big.bin": b"0" * 4096}, ZipLimits(max_total_bytes=1024)), "the zip expands to 4.0 KB, over the limit of 1.0 KB"),
    Case("zip", "uploaded manifest not UTF-8",
         lambda tmp: run_uploaded_batch(probes.write(tmp / "mine.jsonl", b'{"id": "\xe9"}\n'),
                                        probes.zip_of(tmp / "i.zip", {"a.png": b"1"}), work_dir=tmp / "w"),
         "manifest mine.jsonl: not UTF-8 text (byte 8 cannot be decoded)"),
]


# ------------------------------------------------------------------------------------------------ model specs
def _spec(spec: str) -> Callable[[Path], object]:
    return lambda tmp: ClipEncoder(spec, device="cpu").load()


SPEC_CASES = [
    Case("model spec", "unknown architecture", _spec("nonsense-model"), "unknown open_clip architecture 'nonsense-model'"),
    Case("model spec", "unknown pretrained tag", _spec("ViT-B-16/notapretrained"), "ViT-B-16 has no pretrained tag 'notapretrained'"),
    Case("model spec", "random: of an unknown architecture", _spec("random:NoSuchArch"), "unknown open_clip architecture 'NoSuchArch'"),
    Case("model spec", "random: with nothing after it", _spec("random:"), "unknown open_clip architecture ''"),
    Case("model spec", "hf-hub: with no repository", _spec("hf-hub:"), "missing the repository id"),
    Case("model spec", "blank", _spec("   "), "the CLIP model spec is empty"),
    Case("model spec", "a file: scheme", _spec("file:/etc/passwd"), "unknown open_clip architecture 'file:'"),
    Case("model spec", "a NUL byte", _spec("random:tiny\x00"), "'random:tiny\\x00' contains control characters"),
    Case("model spec", "a hub id that climbs out of the cache", _spec("hf-hub:../../etc"),
         "'hf-hub:../../etc' does not name a Hugging Face Hub repository"),
    Case("model spec", "5000 characters", _spec("random:" + "x" * 4993), "...' (5000 characters) is too long"),
    Case("model spec", "a 2.5 G-parameter random model", _spec("random:ViT-bigG-14"),
         "random:ViT-bigG-14 has 2,540 M parameters"),
]


# ------------------------------------------------------------------------------------------------ LLM answers
def _llm(*scripted: tuple[int, object]) -> Callable[[Path], object]:
    def bad(tmp: Path) -> object:
        with ChatServer() as server:
            for status, body in scripted:
                server.add(status, body)
            return OpenAICompatibleClient(base_url=server.url, model="m", max_retries=0, timeout=5).chat(
                [{"role": "user", "content": "list attributes"}])
    return bad


LLM_CASES = [
    Case("llm answer", "body not UTF-8", _llm((200, b'{"choices": "\xff\xfe"}')), "sent an answer that is not UTF-8 text"),
    Case("llm answer", "body not JSON", _llm((200, b"<html>proxy error</html>")), "sent an answer that is not JSON"),
    Case("llm answer", "no text in the answer", _llm((200, completion(None))), "returned no text (finish_reason=stop)"),
    Case("llm answer", "server error", _llm((500, {"error": {"message": "boom"}})), "failed with a server error (HTTP 500)"),
    Case("llm answer", "credentials refused", _llm((401, {"error": {"message": "bad key"}})), "refused the credentials (HTTP 401)"),
    Case("llm answer", "model not found", _llm((404, {"error": {"message": "no such model"}})), "not found (HTTP 404)"),
    Case("llm answer", "not a chat completion", _llm((200, {"unexpected": True})), "returned no text"),
]


# ------------------------------------------------------------------------------------------------ CLI
def _cli(*argv: str) -> Callable[[Path], object]:
    def bad(tmp: Path) -> object:
        source = probes.good_png(tmp / "s.png")
        args = [a.replace("{tmp}", str(tmp)).replace("{src}", str(source)) for a in argv]
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = cli_main(args)
        text = stderr.getvalue()
        assert code == 2 and "Traceback" not in text, (code, text)
        raise AugclipError(text)  # the table checks the message
    return bad


SCORE = ["score", "--source", "{src}", "--edited", "{src}", "--target", "a red ball", "--clip-model", TINY]
CLI_CASES = [
    Case("cli", "--out into a missing folder", _cli(*SCORE, "--out", "{tmp}/no/such/r.json"), "--out {tmp}/no/such/r.json: the folder {tmp}/no/such does not exist"),
    Case("cli", "--out is a folder", _cli(*SCORE, "--out", "{tmp}"), "is a folder; give a file name"),
    Case("cli", "--csv under a file", _cli(*SCORE, "--csv", "{tmp}/s.png/x.csv"), "s.png is not a folder"),
    Case("cli", "--alpha nan without BPM", _cli(*SCORE, "--alpha", "nan"), "--alpha must be a number from 0 to 1, got nan"),
    Case("cli", "--C nan", _cli(*SCORE, "--C", "nan"), "--C must be a positive number, got nan"),
    Case("cli", "nine edits", _cli("score", "--source", "{src}", "--edited", *["{src}"] * 9, "--target", "x"), "9 edited images given; the limit is 8"),
    Case("cli", "explain --out under a file", _cli("explain", "--source", "{src}", "--edited", "{src}", "--target", "x", "--out", "{src}/figs"), "is a file, so the folder cannot be created"),
    Case("cli", "batch of a missing manifest", _cli("batch", "{tmp}/none.jsonl", "--out", "{tmp}/r.jsonl", "--clip-model", TINY), "none.jsonl: file not found"),
    Case("cli", "batch --out into a missing folder", _cli("batch", "{tmp}/none.jsonl", "--out", "{tmp}/x/r.jsonl"), "the folder {tmp}/x does not exist"),
]

CASES = IMAGE_CASES + TEXT_CASES + JSON_CASES + MANIFEST_CASES + ZIP_CASES + SPEC_CASES + LLM_CASES + CLI_CASES


# ------------------------------------------------------------------------------------------------ good requests
def good_request(kind: str, tmp: Path, encoder: ClipEncoder) -> None:
    """A valid request of the same kind, which must succeed right after the bad one."""
    folder = tmp / "good"
    folder.mkdir()
    if kind == "image":
        assert open_image(probes.good_png(folder / "ok.png")).size == (96, 96)
    elif kind == "text":
        report, state = _evaluate(folder)
        assert len(report.edits) == 1 and np.isfinite(report.edits[0].metrics["augclip"])
    elif kind == "json":
        path = probes.write(folder / "a.json", '{"source_attributes": ["red"], "target_attributes": ["blue"]}')
        assert Attributes.load(path).target == ["blue"]
    elif kind == "manifest":
        probes.manifest_folder(folder)
        assert validate_manifest(probes.write(folder / "m.jsonl", probes.manifest_line() + "\n")).items == 1
    elif kind == "zip":
        written = safe_extract(probes.zip_of(folder / "ok.zip", {"imgs/a.png": b"1"}), folder / "out")
        assert [p.name for p in written] == ["a.png"]
    elif kind == "model spec":
        assert encoder.encode_texts(["a red ball"]).shape[0] == 1
    elif kind == "llm answer":
        with ChatServer() as server:
            server.add_reply('["red ball"]')
            answer = OpenAICompatibleClient(base_url=server.url, model="m", max_retries=0).chat([{"role": "user", "content": "x"}])
        assert parse_attribute_list(answer) == ["red ball"]
    elif kind == "cli":
        out = folder / "r.json"
        source = probes.good_png(folder / "s.png")
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["score", "--source", str(source), "--edited", str(source), "--target", "a red ball",
                             "--clip-model", TINY, "--device", "cpu", "--out", str(out), "--no-bpm"])
        assert code == 0 and out.is_file()
    else:
        raise AssertionError(kind)


def test_the_table_has_at_least_60_distinct_cases():
    names = {(case.kind, case.name) for case in CASES}
    assert len(names) == len(CASES) >= 60
    assert {case.kind for case in CASES} == {"image", "text", "json", "manifest", "zip", "model spec", "llm answer", "cli"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_bad_input_gets_its_message_and_the_next_good_request_works(case: Case, tmp_path: Path, tiny_encoder):
    with pytest.raises(AugclipError) as info:
        case.bad(tmp_path)
    message = str(info.value)
    assert case.message.replace("{tmp}", str(tmp_path)) in message
    assert "Traceback" not in message
    good_request(case.kind, tmp_path, tiny_encoder)


def test_an_llm_answer_of_50_000_nested_brackets_parses_to_nothing_quickly():
    # It once made Python's literal parser (and a quadratic span search) take gigabytes.
    for text in ("[" * 50_000 + "]" * 50_000, "(" * 50_000 + ")" * 50_000, "{" * 50_000 + "}" * 50_000):
        assert parse_attribute_list(text) == []
    assert parse_attribute_list('["a pink petal"]') == ["a pink petal"]


@pytest.mark.skipif(os.access("/proc/sys", os.W_OK) or not os.path.isdir("/proc/sys"),
                    reason="needs a folder this user cannot write (even root cannot write /proc/sys)")
def test_cli_refuses_a_read_only_output_folder_before_any_work(tmp_path):
    source = probes.good_png(tmp_path / "s.png")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli_main(["score", "--source", str(source), "--edited", str(source), "--target", "x",
                         "--clip-model", "ViT-B-16/no-such-tag", "--out", "/proc/sys/r.json"])
    # The bad model spec would fail later: the output folder is refused first, before any model loads.
    assert code == 2 and stderr.getvalue().strip() == "error: --out /proc/sys/r.json: the folder /proc/sys is not writable"
