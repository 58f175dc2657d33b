"""The example tabs as the toy model sees them (ui/page/parts.py): the page opens on the tab the toy answers,
an example it cannot answer is marked on its button and says so (and what to set) on its "what to watch" line;
with a real model the page is as before. What the toy answers is checked in test_toy_examples.py."""

from __future__ import annotations

import gradio as gr

from ui.page import parts
from ui.page.examples import EXAMPLES


def build(toy: bool) -> tuple[gr.Blocks, list]:
    with gr.Blocks() as demo:
        question, expected = gr.Textbox(), gr.Textbox()
        buttons = parts.examples(question, expected, toy=toy)
    return demo, buttons


def block(demo: gr.Blocks, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_with_the_toy_the_page_opens_on_the_arithmetic_tab_and_marks_the_rest():
    demo, buttons = build(toy=True)
    assert block(demo, "examples").selected == "arithmetic"
    for button, ex in buttons:
        assert button.value == (ex.label if ex.toy else f"{ex.label} {parts.NEEDS_MODEL_MARK}")
    note = block(demo, "examples-note")
    assert note.visible and "Arithmetic traps" in note.value and parts.NEEDS_MODEL_MARK in note.value


def test_with_a_real_model_the_first_tab_opens_and_nothing_is_marked():
    demo, buttons = build(toy=False)
    assert block(demo, "examples").selected is None  # Gradio opens the first tab: "Knowledge the model already has"
    assert [b.value for b, _ in buttons] == [e.label for e in EXAMPLES]
    assert not block(demo, "examples-note").visible


def test_what_to_watch_says_what_the_toy_does():
    for ex in EXAMPLES:
        real, toy = parts.watch_line(ex), parts.watch_line(ex, toy=True)
        assert real == f"👀 **What to watch:** {ex.demonstrates}"
        assert toy.endswith(f"{parts.LESSON} {ex.demonstrates}")  # the lesson stays, said as a real model's
        head = toy.split(parts.LESSON)[0]
        if ex.toy:
            assert "calculator" in head and "estimates" in head
        else:
            assert head.startswith(parts.NEEDS_MODEL_MARK) and "I don't know" in head
            assert all(way in head for way in ("HF_TOKEN", "LLM_BASE_URL", "sign in"))
        assert "All three answer" not in head
