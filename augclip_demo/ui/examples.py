"""The examples under ``assets/examples`` (made by ``assets/make_assets.py``), as rows for gr.Examples."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import EXAMPLES_DIR


@dataclass
class Example:
    id: str
    label: str
    source: str
    edits: list[str]
    edit_names: list[str]
    target_text: str
    source_text: str
    instruction: str
    source_attributes: list[str]
    target_attributes: list[str]

    @property
    def row(self) -> list[Any]:
        """Values for [source, edits, target, source text, instruction, provider, source attrs, target attrs]."""
        return [self.source, self.edits, self.target_text, self.source_text, self.instruction, "manual",
                "\n".join(self.source_attributes), "\n".join(self.target_attributes)]


def load_examples(folder: Path = EXAMPLES_DIR) -> list[Example]:
    examples = []
    for spec_path in sorted(folder.glob("*/example.json")):
        spec = json.loads(spec_path.read_text())
        attrs = json.loads((folder / spec["attributes"]).read_text())
        roles = ", ".join(e["name"] for e in spec["edits"])
        examples.append(Example(
            id=spec["id"],
            label=f"{spec['instruction']} ({len(spec['edits'])} edits: {roles})",
            source=str(folder / spec["source"]),
            edits=[str(folder / e["path"]) for e in spec["edits"]],
            edit_names=[e["name"] for e in spec["edits"]],
            target_text=spec["target_text"],
            source_text=spec["source_text"],
            instruction=spec["instruction"],
            source_attributes=attrs["source_attributes"],
            target_attributes=attrs["target_attributes"],
        ))
    return examples
