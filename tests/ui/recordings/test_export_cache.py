"""A run's export files are written where Gradio serves them as they are, so Gradio never copies them.

Gradio hashes and copies every returned file that lies outside its cache folder into that folder, on the
event loop (``Block.async_move_resource_to_block_cache``); at 50 finished runs that was a burst of file
syscalls on the loop that every visitor's frames waited behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import gradio as gr
from gradio import processing_utils
from gradio.utils import get_upload_folder, is_in_or_equal

from ui.recordings.export import EXPORT_DIR, write_exports


def test_exports_are_written_inside_gradios_cache():
    assert is_in_or_equal(EXPORT_DIR, get_upload_folder())


def test_gradio_serves_an_export_without_copying_it():
    paths = write_exports({"format": "x", "question": "q", "traces": {}, "settings": {}}, traces={})
    block = gr.File(file_count="multiple")
    payload = block.postprocess(list(paths))
    moved = asyncio.run(processing_utils.async_move_files_to_cache(payload, block, postprocess=True))
    served = [item["path"] for item in moved]
    assert served == list(paths)  # the same files, not copies under a hash folder
    assert all(Path(p).read_text(encoding="utf-8") for p in served)
