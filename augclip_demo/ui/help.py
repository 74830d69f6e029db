"""The Help tab's text: what the scores mean, where attributes come from, batch runs, the API and the papers."""

from __future__ import annotations

from ..metrics.suite import METRICS, metric_keys
from ..papers import PAPERS


def help_markdown() -> str:
    return (_scores_markdown() + _HELP + "\n### Papers\n"
            + "".join(f"* {paper.full}\n" for paper in PAPERS.values()))


def _scores_markdown() -> str:
    """What the scores mean: each primary metric's row (its label, direction and description), then the
    reference metrics' labels (they show where their input is given)."""
    def line(key: str) -> str:
        metric = METRICS[key]
        return f"* **{metric.label}** ({'higher' if metric.higher_is_better else 'lower'} is better): {metric.description}\n"

    references = ", ".join(METRICS[key].label for key in metric_keys(reference=True))
    return ("\n### What the scores mean\n" + "".join(line(key) for key in metric_keys(primary=True))
            + f"\nAugCLIP's ideal edit is the smallest change of the source that a weighted SVM puts on the target side "
            f"of the source / target attribute hyperplane: the score rewards edits that change what the text asks and "
            f"keep the rest. The table also shows {references} wherever an edit has a value for them (their inputs: a "
            f"ground-truth image, an output caption, an edit mask or a network; docs/metrics.md).\n")


_HELP = """
### Attributes
Short visual attributes work best (the AugCLIP paper, Table 8). `clip-vocab` ranks a built-in vocabulary with
CLIP (offline, lower fidelity than an MLLM); `openai` asks any OpenAI-compatible vision model
(configure `OPENAI_API_KEY` / `OPENAI_BASE_URL` / `AUGCLIP_MLLM_MODEL` on the server); `manual`
uses the lists you type. Evaluate scores the lists as shown; empty lists are extracted with the
chosen provider. Edit the lists and press *Re-score* to see the effect without re-encoding images.

### Batch
The *Batch* tab scores a whole benchmark from a manifest (JSONL) and a zip of its images, and computes
the papers' protocols where the manifest has what they need: AccBoth for gt / ep / em triplets, s2AFC
for two-edit items with a human preference, correlations for per-edit human scores.

### API
Every button is also an API endpoint (`/evaluate`, `/rescore`, `/explain`, `/bpm`, `/bpm_parse`, `/bpm_fields`,
`/extract_attributes`, `/batch`): see *Use via API* at the bottom of the page, or docs/app.md in the repository for a
`gradio_client` example.
"""
