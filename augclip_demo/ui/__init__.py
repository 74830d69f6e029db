"""The Gradio user interface (everything that imports gradio lives in this package)."""

from .app import build_app, launch_kwargs
from .launch import main

__all__ = ["build_app", "launch_kwargs", "main"]
