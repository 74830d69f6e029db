"""Exceptions that carry a message meant for the user.

Every error the engine raises on purpose derives from :class:`AugclipError`, so the CLI and the
app can show its message as is (one clear line, no traceback) while genuine bugs still surface
as ordinary exceptions.
"""

from __future__ import annotations

import re
from typing import Any


class AugclipError(Exception):
    """Base class: the message says what is wrong and what to do about it."""


class ConfigError(AugclipError, ValueError):
    """A setting (environment variable, CLI flag or argument) has an invalid value."""


class ImageLoadError(AugclipError, ValueError):
    """An input could not be read as an image; the message names the input."""


class WeightsUnavailableError(AugclipError, RuntimeError):
    """Model weights could not be obtained (no network, missing file, bad checkpoint).

    The message names the model, where loading was attempted and how to provide a local file.
    """

    def __init__(self, model: str, tried: str, how_to_fix: str, cause: BaseException | None = None):
        self.model = model
        self.tried = tried
        self.how_to_fix = how_to_fix
        detail = f" ({type(cause).__name__}: {_first_line(cause)})" if cause is not None else ""
        super().__init__(
            f"weights for {model} could not be loaded: tried {tried}{detail}. {how_to_fix}"
        )

    def brief(self) -> str:
        """One short line: the model and what provides its weights (the command, the flag and variable).

        ``GroundingDINO IDEA-Research/grounding-dino-tiny: no weights here; run `augclip-demo download
        --bpm`, or --gdino-model PATH (AUGCLIP_GDINO_MODEL=PATH)``. Used where several models are
        listed at once (the app's status area, BPM); the full message has the details.
        """
        command = re.search(r"`(augclip-demo [^`]+)`", self.how_to_fix)
        pointer = re.search(r"(--[a-z-]+ PATH) \((AUGCLIP_[A-Z_]+=PATH)", self.how_to_fix)
        ways = ([f"run `{command.group(1)}`"] if command else []) + (
            [f"{pointer.group(1)} ({pointer.group(2)})"] if pointer else [])
        if not ways:
            return f"{self.model}: {_first_line(self.how_to_fix) or 'no usable weights'}"
        return f"{self.model}: no usable weights here; " + ", or ".join(ways)


class MissingWeightsError(WeightsUnavailableError):
    """Several models lack weights: one line per model, each with what provides it."""

    def __init__(self, errors: list[WeightsUnavailableError], purpose: str = ""):
        self.errors = list(errors)
        self.model = ", ".join(e.model for e in self.errors)
        self.tried = "; ".join(e.tried for e in self.errors)
        self.how_to_fix = " ".join(dict.fromkeys(e.how_to_fix for e in self.errors))
        head = f"the weights of {len(self.errors)} models{' for ' + purpose if purpose else ''} could not be loaded:"
        AugclipError.__init__(self, "\n".join([head, *("- " + e.brief() for e in self.errors)]))

    def brief(self) -> str:
        return "; ".join(e.brief() for e in self.errors)


class InputError(AugclipError, ValueError):
    """A non-image input (text, attribute list, option) is missing or malformed."""


class InstructionParseError(InputError):
    """An editing instruction could not be parsed into (o1, o2, size state, position state).

    The message says why (no object named, a pronoun such as "it", an unsupported form) and what
    to do: rephrase, use the LLM parser, or fill the four fields by hand.
    """


class LLMError(AugclipError, RuntimeError):
    """A request to an OpenAI-compatible chat endpoint failed, or its answer was unusable.

    The message names the base URL and the model and says what to do; it never contains the API
    key (server messages are scrubbed before they are quoted). ``kind`` is a stable machine-readable
    reason for callers that react differently (the app, the batch runner): ``not_configured``,
    ``auth`` (401), ``forbidden`` (403), ``not_found`` (404), ``bad_request`` (400/422),
    ``rate_limited`` (429 after every retry), ``server`` (5xx after every retry), ``timeout``,
    ``connection``, ``bad_response``, ``no_answer`` (no text came back), ``refused`` (the model declined:
    the answer's ``refusal`` field), ``filtered`` (the server's content filter stopped the answer),
    ``no_list`` (the text held no usable list), ``bad_json`` (the text was not the JSON asked for),
    ``http`` (any other status). ``status`` is the HTTP status when there was one.
    """

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None,
                 base_url: str | None = None, model: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.base_url = base_url
        self.model = model
class BatchCancelled(AugclipError):
    """A batch run was stopped by its caller (a cancelled web request); what was scored is kept and resumes.
    ``summary``: the stopped run's counts (its ``BatchSummary``) when the run had started scoring, else None."""

    summary: Any = None


class ManifestError(InputError):
    """A batch manifest has problems; ``problems`` lists every one (line, item id, what is wrong)."""

    def __init__(self, path: str, problems: list[str]):
        self.path = path
        self.problems = list(problems)
        shown = self.problems[:50]
        more = len(self.problems) - len(shown)
        lines = [f"manifest {path}: {len(self.problems)} problem(s); fix them all and run again:"]
        lines += [f"  {problem}" for problem in shown]
        if more:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


class UnsafeArchiveError(InputError):
    """An uploaded zip was refused (too large, too many files, unsafe paths, links, encryption)."""


def _first_line(exc: BaseException | None) -> str:
    text = str(exc).strip() if exc is not None else ""
    return text.splitlines()[0][:300] if text else "no details"


class ExplanationUnavailableError(AugclipError, ValueError):
    """An explanation cannot be computed for this model or input (e.g. relevancy on a CNN tower)."""
