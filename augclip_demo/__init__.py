"""AugCLIP Studio: context-aware evaluation of text-guided image edits."""

__version__ = "0.1.0"
