"""An MLLM judge of edits (VIEScore-style semantic consistency, perceptual quality, overall) through any
OpenAI-compatible chat server; its values are the ``judge_*`` rows of the metric table."""

from .judge import JUDGE_METRICS, JudgeOptions, JudgeResult, MLLMJudge, QuestionScore, unavailable_result
from .prompts import PROMPT_VERSION

__all__ = ["JUDGE_METRICS", "PROMPT_VERSION", "JudgeOptions", "JudgeResult", "MLLMJudge", "QuestionScore",
           "unavailable_result"]
