"""Rendering helpers and page pieces for the Gradio app (``app.py`` is layout + wiring only)."""
