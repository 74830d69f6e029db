"""The Help tab's text: what the scores mean, where attributes come from, batch runs, the API and the papers."""

from __future__ import annotations

from ..papers import PAPERS


def help_markdown() -> str:
    return _HELP + "\n### Papers\n" + "".join(f"* {paper.full}\n" for paper in PAPERS.values())


_HELP = """
### What the scores mean
* **AugCLIP**: cosine similarity between the edit and the estimated *ideal* edit, the smallest change of
  the source that a weighted SVM puts on the target side of the source/target attribute hyperplane
  (higher is better). It rewards edits that change what the text asks and keep the rest.
* **CLIPdir**: cosine between the image change and the text change (needs a source text).
* **CLIP-I**: similarity of edit and source (preservation only). **CLIP-T**: similarity of edit and
  target text (modification only). **L2**: pixel RMSE to the source (lower is better).
* **BPM**: region-aware (GroundingDINO + SAM) score of an instruction edit, in [0, 2].

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
