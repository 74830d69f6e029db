"""Texts longer than CLIP's 77 tokens are cut by the tokenizer: the report, the CLI and the app say so."""

from __future__ import annotations

import json

import torch

from augclip_demo.cli import main
from augclip_demo.pipeline import Attributes, AugCLIPOptions, Evaluator
from augclip_demo.ui.evaluate.views import verdict_markdown

# "red" is one BPE token, so "red " * k is k tokens plus the start and end tokens.
FITS = "red " * 75  # 77 tokens: exactly the context
CUT = "red " * 76  # 78 tokens: one too many


def test_detection_matches_what_the_tokenizer_really_cuts(tiny_encoder):
    tokenize = tiny_encoder.tokenizer
    assert tiny_encoder.context_length == 77
    # Independent evidence of the cut: when the tail is dropped, changing the last word changes nothing.
    assert torch.equal(tokenize([CUT]), tokenize(["red " * 75 + "blue"]))
    assert not torch.equal(tokenize([FITS]), tokenize(["red " * 74 + "blue"]))
    assert tiny_encoder.token_count(FITS) == 77 and tiny_encoder.token_count(CUT) == 78
    assert tiny_encoder.truncated_texts(["a red ball", FITS, CUT, CUT]) == [CUT]


def test_report_cli_and_app_say_which_texts_were_cut(tiny_encoder, scene_files, capsys):
    long_attribute = "a ball that is " + "very " * 80 + "red"
    evaluator = Evaluator(encoder=tiny_encoder)
    attributes = Attributes(source=["a red ball", long_attribute], target=["green grass", "a lawn"])
    report = evaluator.evaluate(scene_files["source"], [scene_files["faithful"]], "a red ball on green grass",
                                "a red ball", attributes)
    assert report.truncated_texts == [long_attribute]
    assert any("first 77 tokens" in note for note in report.notes)
    assert "first 77 tokens" in verdict_markdown(report)  # the app's notice under the scores
    assert report.from_json(report.to_json()).truncated_texts == [long_attribute]
    shorter = evaluator.rescore(report, AugCLIPOptions(), Attributes(source=["a red ball"], target=["green grass"]))
    assert shorter.truncated_texts == [] and not any("first 77 tokens" in n for n in shorter.notes)

    clean = evaluator.evaluate(scene_files["source"], [scene_files["faithful"]], "a red ball on green grass",
                               "a red ball", Attributes(source=["a red ball"], target=["green grass"]))
    assert clean.truncated_texts == [] and not any("tokens" in n for n in clean.notes)


def test_cli_warns_on_stderr(scene_files, capsys, monkeypatch, tmp_path):
    attributes = tmp_path / "attributes.json"
    attributes.write_text(json.dumps({"source_attributes": ["a red ball"], "target_attributes": ["green grass"]}))
    monkeypatch.setenv("AUGCLIP_CLIP_MODEL", "random:tiny")
    monkeypatch.setenv("AUGCLIP_DEVICE", "cpu")
    code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 "--target", "a red ball on " + "very " * 80 + "green grass", "--source-text", "a red ball",
                 "--attributes", str(attributes), "--json"])
    assert code == 0
    err = capsys.readouterr().err
    assert "1 text(s) longer than CLIP's 77 tokens were cut" in err
