"""The MLLM judge: semantic consistency, perceptual quality and an overall score for each edit, from any
OpenAI-compatible chat model that reads images (OpenAI, vLLM, Ollama, LM Studio, TGI).

Per edit and sample ``k`` (seed ``seed + k``) the judge asks two questions (:mod:`.prompts`): ``sc``
(source + edit + request) and ``pq`` (the edit alone). Each answer is validated (:mod:`.answers`);
a question's score is the smaller of its two sub-scores, and the sample's overall score is
``sqrt(sc * pq)``. With ``samples > 1`` the reported value is the mean over samples and the
sample standard deviation is kept beside it, so the judge's own spread can be read next to its score.

Policies (one place each):

* **structured output**: ``structured="auto"`` sends the answer's JSON schema as ``response_format``
  (``json_schema``); a server that rejects the request with HTTP 400 is asked again without it, and
  the judge remembers not to send it again. ``"json_schema"`` always sends it, ``"off"`` never does.
  The answer is validated either way.
* **retries**: transport failures (429, 5xx, timeouts, connection errors) are retried by the client
  with backoff (``AUGCLIP_MLLM_MAX_RETRIES``). An answer that is not the JSON asked for is asked
  again ``json_retries`` times (default 1), quoting the bad answer and what is wrong with it.
  A refusal or a filtered answer is never retried (the same question gets the same treatment).
* **failures are reasons, never zeros**: a question whose sample fails is unavailable for that edit
  with the reason (refused, filtered, invalid JSON, server error); the overall score needs both.
  Only valid answers are cached.
* **bounded load**: at most ``concurrency`` requests are in flight per judge (shared by every thread
  that uses it, e.g. a batch run's decode workers) and, with ``requests_per_minute``, requests start
  at least ``60 / requests_per_minute`` seconds apart.

Secrets: the API key is read by the OpenAI SDK (``OPENAI_API_KEY``); it is not in the options, the
signature, the cache or any result, and server messages are scrubbed before they are quoted.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..attributes.disk_cache import cache_key
from ..choices import STRUCTURED_MODES
from ..config import Settings
from ..errors import InputError, LLMError
from ..io import LoadedImage
from ..llm.client import DEFAULT_IMAGE_MAX_SIDE, OpenAICompatibleClient, redact, user_message
from .answers import Answer, AnswerProblem, parse_answer
from .cache import JudgeCache
from .prompts import PROMPT_VERSION, QUESTIONS, SYSTEM_PROMPT, Question, correction_text, question_text

log = logging.getLogger(__name__)

#: Metric keys of the judge's rows in the metric table (:mod:`augclip_demo.metrics.suite`).
JUDGE_METRICS: dict[str, str] = {"judge_sc": "sc", "judge_pq": "pq", "judge_overall": "overall"}
#: Temperature when ``samples > 1`` and none is given (the API's usual default): several samples are
#: only informative about the judge's spread when they are sampled. One sample defaults to 0.
SAMPLING_TEMPERATURE = 1.0
MAX_SAMPLES = 16
#: Failures that belong to the answer itself (asking again gives the same treatment): the metric is
#: unavailable. Any other LLMError kind is the endpoint's (down, unauthorised, rate limited).
CONTENT_FAILURES = frozenset({"refused", "filtered", "bad_json", "no_answer"})
_NO_REQUEST = ("no instruction and no target text to judge the edit against (semantic consistency needs the edit "
              "request)")


@dataclass(frozen=True)
class JudgeOptions:
    """How the judge asks (the CLI's ``--judge-*`` flags and ``AUGCLIP_JUDGE_*`` map one to one).

    Args:
        model: chat model name (default ``AUGCLIP_JUDGE_MODEL``, else ``AUGCLIP_MLLM_MODEL``).
        base_url: API root (default ``AUGCLIP_JUDGE_BASE_URL``, else ``OPENAI_BASE_URL``, else OpenAI).
        samples: answers per question and edit, with seeds ``seed .. seed + samples - 1`` (1 to 16).
        seed: seed of the first sample.
        temperature: default 0 for one sample, :data:`SAMPLING_TEMPERATURE` for several.
        structured: ``auto`` / ``json_schema`` / ``off`` (see the module docstring).
        json_retries: follow-up requests after an answer that is not the JSON asked for (0 to 3).
        concurrency: requests in flight at once (1 to 64).
        requests_per_minute: start at most this many requests a minute (0: no limit but ``concurrency``).
        image_max_side: images are sent shrunk to this longer side (JPEG, quality 90).
        max_tokens: answer length limit per request.
    """

    model: str | None = None
    base_url: str | None = None
    samples: int = 1
    seed: int = 0
    temperature: float | None = None
    structured: str = "auto"
    json_retries: int = 1
    concurrency: int = 4
    requests_per_minute: float = 0.0
    image_max_side: int | None = DEFAULT_IMAGE_MAX_SIDE
    max_tokens: int = 400

    def __post_init__(self) -> None:
        if not isinstance(self.samples, int) or isinstance(self.samples, bool) or not 1 <= self.samples <= MAX_SAMPLES:
            raise InputError(f"judge samples must be an integer from 1 to {MAX_SAMPLES}, got {self.samples!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise InputError(f"judge seed must be an integer, got {self.seed!r}")
        if self.temperature is not None and not (isinstance(self.temperature, (int, float))
                                                 and 0 <= self.temperature <= 2):
            raise InputError(f"judge temperature must be from 0 to 2, got {self.temperature!r}")
        if self.structured not in STRUCTURED_MODES:
            raise InputError(f"judge structured output must be one of {', '.join(STRUCTURED_MODES)}, "
                             f"got {self.structured!r}")
        if not isinstance(self.json_retries, int) or not 0 <= self.json_retries <= 3:
            raise InputError(f"judge JSON retries must be 0 to 3, got {self.json_retries!r}")
        if not isinstance(self.concurrency, int) or not 1 <= self.concurrency <= 64:
            raise InputError(f"judge concurrency must be an integer from 1 to 64, got {self.concurrency!r}")
        if not (isinstance(self.requests_per_minute, (int, float)) and self.requests_per_minute >= 0
                and math.isfinite(self.requests_per_minute)):
            raise InputError(f"judge requests per minute must be 0 or more, got {self.requests_per_minute!r}")
        if self.image_max_side is not None and (not isinstance(self.image_max_side, int) or self.image_max_side < 64):
            raise InputError(f"judge image size must be at least 64 px, got {self.image_max_side!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 16:
            raise InputError(f"judge max tokens must be an integer of at least 16, got {self.max_tokens!r}")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> JudgeOptions:
        """Options from ``AUGCLIP_JUDGE_*`` settings; overrides whose value is None are ignored."""
        base = cls(model=settings.judge_model, base_url=settings.judge_base_url, samples=settings.judge_samples,
                   temperature=settings.judge_temperature, concurrency=settings.judge_concurrency,
                   requests_per_minute=settings.judge_requests_per_minute)
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def effective_temperature(self) -> float:
        if self.temperature is not None:
            return float(self.temperature)
        return 0.0 if self.samples == 1 else SAMPLING_TEMPERATURE

    @property
    def seeds(self) -> list[int]:
        return [self.seed + k for k in range(self.samples)]


# ---------------------------------------------------------------------------------------------- results
@dataclass
class QuestionScore:
    """One question (``sc`` / ``pq`` / ``overall``) for one edit: a value per sample, or the reason none."""

    question: str
    values: list[float] = field(default_factory=list)  # per sample, in seed order (only when all succeeded)
    subscores: list[dict[str, float]] = field(default_factory=list)
    rationales: list[str] = field(default_factory=list)
    cached: list[bool] = field(default_factory=list)
    reason: str | None = None  # why the question has no value
    kind: str | None = None  # the failure's kind (LLMError kinds, e.g. refused / filtered / bad_json)

    @property
    def available(self) -> bool:
        return self.reason is None and bool(self.values)

    @property
    def mean(self) -> float | None:
        return math.fsum(self.values) / len(self.values) if self.available else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation over the samples (n - 1 in the denominator); None for one sample."""
        if not self.available or len(self.values) < 2:
            return None
        mean = math.fsum(self.values) / len(self.values)
        return math.sqrt(math.fsum((v - mean) ** 2 for v in self.values) / (len(self.values) - 1))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": self.mean, "std": self.std, "values": list(self.values)}
        if self.rationales:
            out["rationales"] = list(self.rationales)
        if self.subscores:
            out["subscores"] = [dict(s) for s in self.subscores]
        if self.cached:
            out["cached"] = list(self.cached)
        if self.reason is not None:
            out["reason"] = self.reason
            out["kind"] = self.kind
        return out


@dataclass
class JudgeResult:
    """The judge's verdict on one edit: the two questions, the overall score, and how they were asked."""

    sc: QuestionScore
    pq: QuestionScore
    overall: QuestionScore
    settings: dict[str, Any]  # model, base URL (no credentials), prompt version, temperature, samples, seeds

    @property
    def questions(self) -> dict[str, QuestionScore]:
        return {"sc": self.sc, "pq": self.pq, "overall": self.overall}

    def metrics(self) -> dict[str, float | None]:
        """Values for the metric table's rows (``judge_sc``, ``judge_pq``, ``judge_overall``)."""
        return {key: self.questions[q].mean for key, q in JUDGE_METRICS.items()}

    def unavailable(self) -> dict[str, str]:
        return {key: self.questions[q].reason or "no value" for key, q in JUDGE_METRICS.items()
                if self.questions[q].mean is None}

    def to_dict(self) -> dict[str, Any]:
        return {**{name: score.to_dict() for name, score in self.questions.items()}, "settings": dict(self.settings)}


class _Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _Once:
    """``fn(*args)`` computed on the first call and kept (thread-safe)."""

    def __init__(self, fn: Any, *args: Any):
        self._fn, self._args = fn, args
        self._value: Any = None
        self._done = False
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        with self._lock:
            if not self._done:
                self._value, self._done = self._fn(*self._args), True
            return self._value


class _RateLimiter:
    """Request starts at least ``60 / per_minute`` seconds apart (no limit when ``per_minute`` is 0)."""

    def __init__(self, per_minute: float):
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


# ---------------------------------------------------------------------------------------------- the judge
class MLLMJudge:
    """Asks an OpenAI-compatible vision chat model to judge edits (see the module docstring).

    Args:
        options: :class:`JudgeOptions` (default: from ``settings``).
        settings: configuration (default: the environment).
        client: an existing :class:`OpenAICompatibleClient` (then ``options.model`` / ``base_url`` are its own).
        cache: a :class:`~.cache.JudgeCache` (default: under ``AUGCLIP_CACHE_DIR/judge``).
        use_cache: False to always ask (answers are still not cached then).

    Raises :class:`~augclip_demo.errors.LLMError` (``kind="not_configured"``) when no endpoint is
    configured (no ``OPENAI_API_KEY`` and no base URL).
    """

    def __init__(self, options: JudgeOptions | None = None, *, settings: Settings | None = None,
                 client: OpenAICompatibleClient | None = None, cache: JudgeCache | None = None,
                 use_cache: bool = True):
        self.settings = settings or Settings()
        self.options = options or JudgeOptions.from_settings(self.settings)
        self.client = client or OpenAICompatibleClient(self.settings, base_url=self.options.base_url,
                                                       model=self.options.model or self.settings.mllm_model)
        self.cache = (cache or JudgeCache(settings=self.settings)) if use_cache else None
        self.requests = 0  # HTTP requests sent (follow-ups and fallbacks included)
        self._slots = threading.BoundedSemaphore(self.options.concurrency)
        self._rate = _RateLimiter(self.options.requests_per_minute)
        self._schema_ok = self.options.structured != "off"
        self._count_lock = threading.Lock()
        self._key_locks: dict[str, list[Any]] = {}  # key digest -> [lock, number of threads using it]
        self._key_locks_lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.client.model

    def signature(self) -> dict[str, Any]:
        """What decides the judge's answers besides the inputs: recorded with every result, compared on resume.

        The base URL is not part of it (nor of the cache key): the same model name behind another address
        (a local server restarted on another port) is taken to be the same judge.
        """
        return judge_signature(self.options, self.model)

    def __repr__(self) -> str:
        return f"MLLMJudge({self.client!r}, samples={self.options.samples}, prompt={PROMPT_VERSION})"

    # ------------------------------------------------------------------ public
    def judge(self, source: LoadedImage, edit: LoadedImage, request: str | None) -> JudgeResult:
        """The verdict on one edit of ``source`` for ``request`` (instruction or target description)."""
        return self.judge_edits(source, [edit], request)[0]

    def judge_edits(self, source: LoadedImage, edits: list[LoadedImage], request: str | None) -> list[JudgeResult]:
        """Verdicts on every edit (every question and sample runs concurrently, within the judge's bounds)."""
        request = " ".join((request or "").split()) or None
        seeds = self.options.seeds
        jobs: list[tuple[int, Question, int]] = []
        for i in range(len(edits)):
            for question in QUESTIONS.values():
                if question.uses_text and request is None:
                    continue
                jobs.extend((i, question, k) for k in range(len(seeds)))
        # the request messages (images as data URLs) are built on the first cache miss of each (edit, question)
        messages: dict[tuple[int, str], _Once] = {}
        for i, question, _ in jobs:
            if (i, question.key) not in messages:
                images = [source, edits[i]] if question.uses_source else [edits[i]]
                messages[i, question.key] = _Once(self._messages, question, images, request)
        outcomes: dict[tuple[int, str, int], tuple[Answer, bool] | _Failure] = {}
        if jobs:
            workers = min(self.options.concurrency, len(jobs))
            with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
                futures = {pool.submit(self._sample, question, messages[i, question.key],
                                       self._key(question, source, edits[i], request, k), k): (i, question.key, k)
                           for i, question, k in jobs}
                for future in cf.as_completed(futures):
                    outcomes[futures[future]] = future.result()
        settings = {**self.signature(), "base_url": self.client.base_url}
        results = []
        for i in range(len(edits)):
            sc = (self._collect("sc", [outcomes[i, "sc", k] for k in range(len(seeds))]) if request is not None
                  else QuestionScore("sc", reason=_NO_REQUEST, kind="no_request"))
            pq = self._collect("pq", [outcomes[i, "pq", k] for k in range(len(seeds))])
            results.append(JudgeResult(sc, pq, _overall(sc, pq), settings))
        return results

    # ------------------------------------------------------------------ one sample
    def _messages(self, question: Question, images: list[LoadedImage], request: str | None) -> list[dict[str, Any]]:
        return [{"role": "system", "content": SYSTEM_PROMPT},
                user_message(question_text(question, request), images, max_side=self.options.image_max_side)]

    def _key(self, question: Question, source: LoadedImage, edit: LoadedImage, request: str | None,
             k: int) -> dict[str, Any]:
        opts = self.options
        return {"question": question.key,
                "images": [source.sha256, edit.sha256] if question.uses_source else [edit.sha256],
                "request": request if question.uses_text else None,
                "model": self.model, "prompt_version": PROMPT_VERSION, "temperature": opts.effective_temperature, "sample": k, "seed": opts.seed + k,
                "image_max_side": opts.image_max_side}

    def _sample(self, question: Question, messages: _Once, key: dict[str, Any],
                k: int) -> tuple[Answer, bool] | _Failure:
        """(answer, from cache) for one sample, or the :class:`_Failure` that explains why there is none.

        Identical samples asked at the same time (the same edit in two items of a batch) wait for each
        other, so the second is answered from the cache instead of asking again.
        """
        digest = cache_key(key)
        with self._key_locks_lock:  # one lock per key while anyone asks for it (dropped after: memory stays bounded)
            entry = self._key_locks.setdefault(digest, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                return self._sample_once(question, messages, key, k)
        finally:
            with self._key_locks_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._key_locks[digest]

    def _sample_once(self, question: Question, messages: _Once, key: dict[str, Any],
                     k: int) -> tuple[Answer, bool] | _Failure:
        if self.cache is not None:
            hit = self.cache.get(key, question)
            if hit is not None:
                return hit[0], True
        seed = self.options.seed + k
        where = f"{question.label}, sample {k + 1} of {self.options.samples} (seed {seed})"
        conversation = list(messages())
        try:
            for attempt in range(self.options.json_retries + 1):
                text, finish, served = self._request(question, conversation, seed)
                if finish == "content_filter":
                    raise _Failure("filtered", f"the server's content filter stopped the answer ({where})")
                try:
                    answer = parse_answer(text, question)
                except AnswerProblem as problem:
                    cut = " (the answer was cut at max_tokens)" if finish == "length" else ""
                    if attempt < self.options.json_retries:
                        conversation = [*conversation, {"role": "assistant", "content": text},
                                        {"role": "user", "content": correction_text(str(problem), question)}]
                        continue
                    tries = self.options.json_retries + 1
                    raise _Failure("bad_json", f"the answer was not the JSON asked for after {tries} "
                                   f"attempt{'s' if tries != 1 else ''} ({where}): {problem}{cut}; answer began "
                                   f"{_excerpt(text)}") from None
                if self.cache is not None:
                    self.cache.put(key, answer, served)
                return answer, False
        except LLMError as exc:
            what = {"refused": "the model refused to answer", "filtered": "the server's content filter stopped the "
                    "answer"}.get(exc.kind, "the request failed")
            return _Failure(exc.kind, f"{what} ({where}): {redact(str(exc))}")
        except _Failure as failure:
            return failure
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, question: Question, conversation: list[dict[str, Any]], seed: int) -> tuple[str, str | None, str]:
        opts = self.options
        with self._slots:
            schema = self._schema_ok
            self._rate.wait()
            self._count()
            try:
                reply = self.client.complete(conversation, seed=seed, temperature=opts.effective_temperature,
                                             max_tokens=opts.max_tokens,
                                             response_format=question.response_format() if schema else None)
            except LLMError as exc:
                if not (schema and opts.structured == "auto" and exc.kind == "bad_request"):
                    raise
                log.info("judge: %s rejected response_format json_schema (%s); asking without it from now on",
                         self.client.base_url, exc)
                self._schema_ok = False
                self._rate.wait()
                self._count()
                reply = self.client.complete(conversation, seed=seed, temperature=opts.effective_temperature,
                                             max_tokens=opts.max_tokens)
        return reply.text, reply.finish_reason, reply.model

    def _count(self) -> None:
        with self._count_lock:
            self.requests += 1

    @staticmethod
    def _collect(name: str, outcomes: list[tuple[Answer, bool] | _Failure]) -> QuestionScore:
        score = QuestionScore(name)
        failures = [o for o in outcomes if isinstance(o, _Failure)]
        for outcome in outcomes:
            if isinstance(outcome, _Failure):
                continue
            answer, cached = outcome
            score.subscores.append(answer.subscores)
            score.rationales.append(answer.rationale)
            score.cached.append(cached)
        if failures:
            more = f" ({len(failures)} of {len(outcomes)} samples failed)" if len(outcomes) > 1 else ""
            score.reason = f"judge unavailable: {failures[0]}{more}"
            score.kind = failures[0].kind
            return score
        score.values = [min(s.values()) for s in score.subscores]
        return score


def judge_signature(options: JudgeOptions, model: str) -> dict[str, Any]:
    """The judge's settings that decide its answers (:meth:`MLLMJudge.signature`), without building a client."""
    return {"model": model, "prompt_version": PROMPT_VERSION, "temperature": options.effective_temperature,
            "samples": options.samples, "seeds": options.seeds, "structured": options.structured,
            "image_max_side": options.image_max_side, "max_tokens": options.max_tokens}


def _overall(sc: QuestionScore, pq: QuestionScore) -> QuestionScore:
    """Per sample sqrt(SC * PQ) (samples paired by seed); unavailable when either question is."""
    if not sc.available or not pq.available:
        missing = sc if not sc.available else pq
        return QuestionScore("overall", reason=f"needs both questions; {missing.question}: {missing.reason}",
                             kind=missing.kind)
    return QuestionScore("overall", values=[math.sqrt(a * b) for a, b in zip(sc.values, pq.values)])


def _excerpt(text: str, limit: int = 120) -> str:
    flat = redact(" ".join(str(text).split()))
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def unavailable_result(reason: str, settings: dict[str, Any] | None = None, kind: str = "not_configured") -> JudgeResult:
    """A verdict with every question unavailable for ``reason`` (e.g. no endpoint configured)."""
    def missing(name: str) -> QuestionScore:
        return QuestionScore(name, reason=reason, kind=kind)
    return JudgeResult(missing("sc"), missing("pq"), missing("overall"), dict(settings or {}))


__all__ = ["JUDGE_METRICS", "JudgeOptions", "JudgeResult", "MLLMJudge", "QuestionScore", "unavailable_result"]
