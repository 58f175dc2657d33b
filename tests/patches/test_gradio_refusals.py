"""patches/gradio_refusals.py on a small app of its own: a refused input is one line naming the input and what it
accepts; the patch checks what it touches and, turned off, leaves Gradio's own silent refusal (nothing widened)."""

from __future__ import annotations

import logging
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import pytest

import patches
import patches.gradio_refusals as refusals
from tests.gradio_rest import call


class Blocks(refusals.ReadableRefusals, gr.Blocks):
    pass


@pytest.fixture(scope="module")
def url():
    with Blocks() as demo:
        upload = gr.File(label="Your file", type="filepath")
        picks = gr.CheckboxGroup(["a", "b"], label="Picks")
        out = gr.Textbox()
        upload.change(lambda path: f"got {path}", upload, out, api_name="upload")
        picks.change(lambda chosen: ",".join(chosen), picks, out, api_name="picks")
        gr.Button().click(lambda a, b: a + b, [out, out], out, api_name="two")
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        yield demo.local_url
    finally:
        demo.close()


@pytest.mark.parametrize(("name", "data", "line"), [
    ("upload", [{"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}],
     "A file input names a file that was not uploaded to this app: upload it first (POST /gradio_api/upload) and "
     "send the path it returns."),
    ("upload", [7], "Your file (input 1 of /upload) must be an uploaded file (the path /gradio_api/upload returns); "
                    "got a number."),
    ("picks", [None], "Picks (input 1 of /picks) must be a list; got nothing."),
    ("two", ["x"], "/two takes 2 input values (textbox, textbox); this call sent 1."),
])
def test_a_refused_input_is_one_line(url, name, data, line):
    event, payload = call(url, name, data)
    assert event == "error" and payload["error"] == line


def test_a_value_gradio_words_itself_passes_unchanged(url):
    event, payload = call(url, "picks", [["c"]])
    assert event == "error" and "is not in the list of choices" in payload["error"]


def test_the_patch_checks_what_it_touches(monkeypatch):
    assert refusals.problem() is None
    monkeypatch.setattr(gr.Blocks, "preprocess_data", lambda self, block_fn, inputs: inputs)
    assert "not a coroutine" in refusals.problem()


def test_turned_off_it_leaves_gradios_silent_refusal_with_one_log_line(url, monkeypatch, caplog):
    monkeypatch.setenv("APP_PATCHES_OFF", "gradio_refusals")
    monkeypatch.setattr(patches, "_decisions", {})  # decided again, and the app's decision back afterwards
    with caplog.at_level(logging.INFO, logger="patches"):
        event, payload = call(url, "picks", [None])
    assert event == "error" and payload == {"error": None}  # still refused: only the line is missing
    assert "patch gradio_refusals is off (APP_PATCHES_OFF)" in caplog.text
