"""AugCLIP Studio web app: ``python app.py`` (Gradio; GRADIO_SERVER_NAME / GRADIO_SERVER_PORT respected)."""

from augclip_demo.ui import build_app, launch_kwargs

demo = build_app()

if __name__ == "__main__":
    demo.launch(**launch_kwargs())
