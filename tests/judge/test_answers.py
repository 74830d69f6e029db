"""Judge answers: the JSON object each question asks for, checked field by field (no server needed)."""

from __future__ import annotations

import pytest

from augclip_demo.judge.answers import AnswerProblem, parse_answer
from augclip_demo.judge.prompts import QUALITY, SEMANTIC, question_text


def test_a_valid_answer_gives_the_smaller_subscore():
    answer = parse_answer('{"follows_request": 9, "keeps_the_rest": 4, "rationale": " The  sky  changed too. "}',
                          SEMANTIC)
    assert answer.subscores == {"follows_request": 9.0, "keeps_the_rest": 4.0} and answer.score == 4.0
    assert answer.rationale == "The sky changed too."


@pytest.mark.parametrize("text", [
    '```json\n{"looks_natural": 7, "free_of_artifacts": 8.0, "rationale": "ok"}\n```',
    'Here it is: {"looks_natural": 7, "free_of_artifacts": 8, "rationale": "ok", "extra": 1} done',
])
def test_fences_surrounding_text_and_extra_fields_are_tolerated(text):
    assert parse_answer(text, QUALITY).score == 7.0


@pytest.mark.parametrize("text, problem", [
    ("seven out of ten", "holds no JSON object"),
    ('{"looks_natural": 7, "free_of_artifacts": 8', "holds no JSON object"),
    ('{"looks_natural": 7, "free_of_artifacts": 8,, "rationale": "x"}', "not valid JSON"),
    ("[7, 8]", "is a JSON list, not an object"),
    ('{"looks_natural": 7, "rationale": "x"}', '"free_of_artifacts" is missing'),
    ('{"looks_natural": "7", "free_of_artifacts": 8, "rationale": "x"}', "must be a number"),
    ('{"looks_natural": true, "free_of_artifacts": 8, "rationale": "x"}', "must be a number"),
    ('{"looks_natural": 11, "free_of_artifacts": 8, "rationale": "x"}', "must be from 0 to 10, got 11"),
    ('{"looks_natural": -1, "free_of_artifacts": 8, "rationale": "x"}', "must be from 0 to 10, got -1"),
    ('{"looks_natural": 7, "free_of_artifacts": 8, "rationale": ""}', '"rationale" must be a non-empty string'),
    ('{"looks_natural": 7, "free_of_artifacts": 8}', '"rationale" must be a non-empty string'),
])
def test_each_problem_is_named(text, problem):
    with pytest.raises(AnswerProblem, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_answer(text, QUALITY)


def test_long_rationales_are_cut():
    answer = parse_answer('{"looks_natural": 1, "free_of_artifacts": 2, "rationale": "' + "x" * 2000 + '"}', QUALITY)
    assert len(answer.rationale) == 600 and answer.rationale.endswith("...")


def test_the_semantic_question_quotes_the_request_and_the_quality_question_does_not():
    assert "REQUEST: make the cup red" in question_text(SEMANTIC, "make   the cup\nred")
    assert "cup" not in question_text(QUALITY, "make the cup red")
    for question in (SEMANTIC, QUALITY):
        schema = question.schema()
        assert schema["required"] == [*question.subscores, "rationale"] and not schema["additionalProperties"]
