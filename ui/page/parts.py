"""Building blocks of the page, one function each, so ``app.py`` stays layout + wiring.

A new tab is ``with gr.Tab("Name"): build_something(...)`` in ``app.py``.
"""


import json
from pathlib import Path

import gradio as gr

from agents.llm.settings import TOY, TOY_LIMITS, LLMSettings
from agents.modes.registry import ModeSpec, list_modes
from agents.prompts import render_prompt, template_view
from agents.settings import DEFAULT_MAX_STEPS, REQUEST_MAX_STEPS
from tools.page_tools import PageToolError, page_tools_of, with_page_tools
from tools.registry import ToolRegistry
from ui.core.inputs import enabled, protocol_value, range_problem, shown, tools_problem
from ui.core.safe_text import escape_html, plain
from ui.page.behaviour import PRESENTATION_JS
from ui.page.examples import Example, by_category, toy_category

CSS_PATH = Path(__file__).with_name("theme.css")
PANEL_HEIGHT = 380  # px: at 1366×768 the panels fit under the question row (resizable by dragging)
TITLE = "Think · Act · ReAct"
_TITLES = [s.title for s in (*list_modes("base"), *list_modes("more"))]  # the panels' names, from the registry
_HOW_MANY = dict(enumerate("zero one two three four five six seven eight nine ten".split()))
TAGLINE = (f"One question, {_HOW_MANY.get(len(_TITLES), len(_TITLES))} reasoning modes side by side: "
           + ", ".join(_TITLES[:-1]) + f" and {_TITLES[-1]}.")  # one line at 1366 px: the panels start on screen

# Hugging Face router models that support tool calling (any other id can be typed in).
ROUTER_MODELS = (
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "Qwen/Qwen3-32B",
    "meta-llama/Llama-3.3-70B-Instruct",
    "moonshotai/Kimi-K2-Instruct",
    "deepseek-ai/DeepSeek-V3-0324",
)

def css() -> str:
    return CSS_PATH.read_text(encoding="utf-8")


def theme() -> gr.themes.Base:
    """System fonts only: the page makes no request outside the app (offline classrooms)."""
    return gr.themes.Soft(
        font=["ui-sans-serif", "system-ui", "Segoe UI", "Roboto", "Helvetica", "Arial", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    ).set(  # WCAG AA (4.5:1) for the text the theme colours: Soft's indigo 500 and neutral 400 reach ~3:1
        button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
        block_label_text_color="*primary_800", block_title_text_color="*primary_800",
        link_text_color="*primary_700", link_text_color_visited="*primary_800",
        body_text_color_subdued="*neutral_600", color_accent="*primary_700",
        checkbox_label_background_fill_selected="*primary_700",
    )


def panel_column(key: str, label: str, placeholder: str, *,
                 visible: bool = True) -> tuple[gr.Column, gr.Chatbot, gr.Markdown]:
    """One mode's panel and its metrics line."""
    with gr.Column(min_width=260, elem_classes="panel-col", elem_id=f"col-{key}", visible=visible) as column:
        chat = gr.Chatbot(label=label, elem_id=f"panel-{key}", elem_classes="panel-chat", height=PANEL_HEIGHT,
                          resizable=True, feedback_options=None, layout="panel", group_consecutive_messages=False,
                          buttons=["copy_all"], placeholder=placeholder, autoscroll=False)  # page.js places it
        metrics = gr.Markdown("", label=f"{label} metrics", elem_id=f"metrics-{key}", elem_classes="metrics")
    return column, chat, metrics


def backend_line(settings: LLMSettings, *, visitor_signed_in: bool | None = None) -> str:
    if settings.toy:
        return f"**Backend:** {TOY} (arithmetic only) — see below to connect a real model."
    if visitor_signed_in:
        return (f"**Backend:** {plain(settings.model)} via the Hugging Face router — signed in: your account pays "
                "for your runs.")
    if settings.configured:
        return f"**Backend:** {plain(settings.describe())}"
    if visitor_signed_in is False:
        return "**Backend:** not configured — sign in with Hugging Face above to run with your own account."
    return "**Backend:** no model configured (replay, prompts and examples still work)."


def header(settings: LLMSettings, *, on_space: bool) -> gr.Markdown:
    """Title, the one-line explanation, the backend status line (returned: a signed-in visitor updates it)
    and, when the backend needs setting up, a banner saying how."""
    with gr.Row(elem_id="header"):
        with gr.Column(scale=5, min_width=300):
            gr.Markdown(f"# {TITLE}\n{TAGLINE}", elem_id="title")
            status = gr.Markdown(backend_line(settings), elem_id="backend-status")
        with gr.Column(scale=0, min_width=200, elem_id="header-tools"):
            presentation_toggle()  # in the header: no row of its own above the panels
            if on_space:
                gr.LoginButton(size="sm")  # only on a Space: it needs the Hub (and fails a local/CI launch)
    banner = setup_banner(settings)
    gr.Markdown(banner, elem_id="setup-banner", visible=bool(banner))
    return status


def setup_banner(settings: LLMSettings) -> str:
    """What to set up, when something is missing: the problem, or (the toy model runs) how to connect a real one."""
    if settings.toy:
        return (f"⚙ **No model is configured, so a toy runs:** {TOY_LIMITS}; it is not a language model. "
                "**To connect a real model**, set `HF_TOKEN` (the Hugging Face router), sign in with Hugging Face "
                "(on a Space), or set `LLM_BASE_URL` to an OpenAI-compatible server, e.g. "
                "`http://localhost:11434/v1` (Ollama). `APP_TOY_MODEL=0` turns the toy off.")
    problem = settings.problem()
    return f"⚙ **Setup needed.** {escape_html(problem)}" if problem else ""


def model_info(settings: LLMSettings) -> str:
    """The Settings model box's hint: where its choices come from."""
    if settings.toy:
        return "The toy model answers whatever the id"
    if settings.base_url:
        return "The models the server lists, or type any model id"
    return "HF router models with tool calling, or type any model id"


def presentation_toggle() -> gr.Checkbox:
    """A projector's mode, entirely in the browser: larger text, the header and examples on one line each, and the
    panels as tall as the screen allows (theme.css, page.js)."""
    box = gr.Checkbox(label="Presentation mode", value=False, elem_id="presentation",
                      container=False, scale=0, min_width=240)
    box.change(fn=None, inputs=box, js=PRESENTATION_JS)
    return box


NEEDS_MODEL_MARK = "⚙"  # on an example button the toy model cannot answer: setup needed, as the banner's ⚙
CONNECT = "set `HF_TOKEN` or `LLM_BASE_URL`, or sign in with Hugging Face on a Space (the banner above says more)"
LESSON = "Once a language model is connected:"  # before an example's own lesson, in a line about the toy


def example_label(ex: Example, *, toy: bool = False) -> str:
    """An example button's text: with the toy model running, an example it cannot answer is marked."""
    return f"{ex.label} {NEEDS_MODEL_MARK}" if toy and not ex.toy else ex.label


def watch_line(ex: Example, *, toy: bool = False) -> str:
    """The status line an example's click shows. With the toy model it says what the toy really does (checked
    in tests/ui/page/test_toy_examples.py), and the example's own lesson as what a real model shows."""
    if not toy:
        return f"👀 **What to watch:** {ex.demonstrates}"
    if ex.toy:
        return ("👀 **What to watch (toy model):** Act and ReAct call the calculator and answer exactly; "
                f"Think-only has no tools, so the toy only estimates. {LESSON} {ex.demonstrates}")
    return (f"{NEEDS_MODEL_MARK} **Needs a language model:** the toy model only does arithmetic, so all three panels "
            f"say \"I don't know\". To connect one, {CONNECT}. {LESSON} {ex.demonstrates}")


def examples_note(toy: bool) -> str:
    """Under the example tabs while the toy model runs: which examples it answers, and what the mark means."""
    category = toy_category()
    if not toy or category is None:
        return ""
    return (f"_The toy model answers the **{category.label}**; {NEEDS_MODEL_MARK} marks an example that needs a "
            "language model._")


def examples(question: gr.Textbox, expected: gr.Textbox | None = None, *, toy: bool = False,
             given: gr.Checkbox | None = None) -> list[tuple[gr.Button, Example]]:
    """Example buttons in one tab per category; a click fills the question box (and the expected answer,
    emptied for an example without a stable one, and ticks ``given``: this answer is the next question's) in the
    browser (no server call). With the toy model running (``toy``) the page opens on the tab the toy answers and
    marks the examples it cannot."""
    buttons = []
    first = toy_category() if toy else None
    with gr.Tabs(elem_id="examples", selected=first.id if first else None, overflow_behavior="wrap"):
        for category, items in by_category():
            with gr.Tab(category.label, id=category.id, elem_classes="example-tab"):
                with gr.Row(elem_classes="example-row"):
                    for ex in items:
                        btn = gr.Button(example_label(ex, toy=toy), size="sm", variant="secondary",
                                        elem_classes="example-btn", min_width=80, scale=0)
                        if expected is None:
                            btn.click(fn=None, outputs=question, js=f"() => {json.dumps(ex.question)}")
                        elif given is None:
                            btn.click(fn=None, outputs=[question, expected],
                                      js=f"() => {json.dumps([ex.question, ex.answer or ''])}")
                        else:
                            btn.click(fn=None, outputs=[question, expected, given],
                                      js=f"() => {json.dumps([ex.question, ex.answer or '', True])}")
                        buttons.append((btn, ex))
                    gr.Markdown(f"_{category.blurb}_", elem_classes="example-cat")
    note = examples_note(toy)
    gr.Markdown(note, elem_id="examples-note", visible=bool(note))
    return buttons


def example_hints(buttons: list[tuple[gr.Button, Example]], status: gr.Markdown, picker: gr.Dropdown, *,
                  toy: bool = False) -> None:
    """A click on an example also says what to watch (the status line; :func:`watch_line`) and, for an example
    about some modes (ReAct against CodeAct), puts those modes on screen — in the browser, no server call."""
    for btn, ex in buttons:
        hint = watch_line(ex, toy=toy)
        if not ex.modes:
            btn.click(fn=None, outputs=status, js=f"() => {json.dumps(hint)}")
        else:
            btn.click(fn=None, outputs=[status, picker], js=f"() => {json.dumps([hint, list(ex.modes)])}")


TEXT_ONLY_NOTE = "(Runs under the text protocol only: under native tool calls it does not run. Its text prompt:)"


def mode_prompts(spec: ModeSpec, registry: ToolRegistry, protocol: str, max_steps: int) -> str:
    """A mode's box in the Prompts view: its first request, then any further template it sends; a mode that runs
    under the text protocol only shows that prompt, saying so, whatever protocol is chosen."""
    if spec.text_only and protocol != "text":
        return f"{TEXT_ONLY_NOTE}\n\n{mode_prompts(spec, registry, 'text', max_steps)}"
    first = render_prompt(spec.prompt or spec.id, registry, protocol=protocol, max_steps=max_steps,
                          uses_tools=spec.uses_tools)
    return "\n\n".join([first, *map(template_view, spec.other_prompts)])


def prompts_tab(registry: ToolRegistry, protocol: gr.Radio, max_steps: gr.Slider, tools: gr.CheckboxGroup,
                load_event: gr.Blocks, own: gr.State | None = None) -> None:
    """The exact rendered prompt of each mode for the current settings; ``own``: the visitor's tools written on the
    page (``ui/page/page_tools.py``), listed after the app's."""
    gr.Markdown("What each mode sends as its first request, for the settings chosen on the **Compare** tab "
                "(`<question>` stands for your question), and the further prompts a mode sends (Reflexion's "
                "reflection, its self-check and the note a new trial gets). Think-only never sees the tools. The "
                "last two are the Benchmark's placebo ablation: ReAct's prompt with one worked example, and the same "
                "example with each thought replaced by a neutral line.")
    specs = [s for s in list_modes() if s.prompt]  # modes with a prompt of their own (the hybrids reuse theirs)
    codes = [gr.Code(label=s.title, language="markdown", interactive=False, lines=12, max_lines=40,
                     wrap_lines=True, elem_classes="prompt-code") for s in specs]

    def show(protocol: str = "text", max_steps: float | str = DEFAULT_MAX_STEPS,
             tools: list[str] | None = None, own: list[dict[str, str]] | None = None) -> tuple[str, ...]:
        """The rendered first request of each mode with its own prompt (Think, Act, ReAct) for these settings."""
        # preprocess=False: values arrive as sent, and a bad one is one line (never Gradio's {"error": null})
        try:
            mine = page_tools_of(own, registry.names)
        except PageToolError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        problem = (None if protocol is None or protocol_value(protocol) else f"Unknown protocol {shown(protocol)}: "
                   "choose text or tools.") \
            or range_problem(max_steps, "Max steps", 1, REQUEST_MAX_STEPS, whole=True) \
            or tools_problem(tools, with_page_tools(registry, mine))
        if problem:
            raise gr.Error(problem, print_exception=False)
        reg = with_page_tools(registry.subset(tools) if tools is not None else registry, enabled(mine, tools))
        steps = int(float(max_steps))
        return tuple(mode_prompts(s, reg, protocol_value(protocol) or "text", steps) for s in specs)

    gr.on([protocol.change, max_steps.change, tools.change, load_event.load, *([own.change] if own else [])], show,
          inputs=[protocol, max_steps, tools, *([own] if own else [])], outputs=codes, api_name="prompts",
          show_progress="hidden", preprocess=False)


def about_tab() -> None:
    gr.Markdown(
        """
### What you are looking at
- **Think-only** reasons in one go from what the model already knows: fast and cheap, but it cannot look anything up.
- **Act-only** calls tools (search, Wikipedia, weather, calculator, Python) without writing thoughts: it gathers
  facts but loses the thread on multi-step questions.
- **ReAct** interleaves a *Thought* before each *Action* and reads each *Observation* (Yao et al., 2023): it plans
  the next lookup from the last result.
- **More modes**, from the picker beside the question: the paper's hybrids (ReAct → CoT-SC, CoT-SC → ReAct),
  **CodeAct** (one Python program calls the tools) and **Reflexion** (tries again after grading its answer). Each
  chosen mode gets its own panel.

Under each panel: steps (action → observation rounds), LLM calls, tool calls, tokens in/out (`~` = estimated),
seconds, and flags for a *forced* answer (the step budget ran out) and *format retries* (the model broke the
format and was re-prompted). After a run, the table compares the answers; with an **Expected answer** (under the
question, filled in by the examples that have one) it marks each mode ✓ or ✗ by the ReAct paper's scoring, F1 beside.

### Three ways to give it a model
1. `HF_TOKEN` — a Hugging Face token with *Inference Providers* permission (the Hugging Face router).
2. On the Space, **Sign in with Hugging Face** — your own account pays for your runs.
3. `LLM_BASE_URL` — any OpenAI-compatible server (Ollama, vLLM, llama.cpp, TGI, LM Studio), e.g.
   `LLM_BASE_URL=http://localhost:11434/v1 python app.py`: the app uses the model the server lists
   (`LLM_MODEL` picks another).

With none of them, `python app.py` runs a built-in toy model that only does arithmetic with the calculator.

### Offline classroom
Export a run (JSON) beforehand; **Replay** plays it back in the panels at its original pace — no model, no network.

### API
```python
from gradio_client import Client
client = Client("http://127.0.0.1:7860/")  # or the Space id
job = client.submit(question="What is 17 * 23 + 5?", mode=["think", "act", "react"], api_name="/compare")
for think, act, react, *rest in job:  # streamed updates: the three panels first
    pass
print(job.result()[:3])  # docs/api.md lists every output
```
AI assistants can use the app as an MCP server at `/gradio_api/mcp/` (one tool, `compare_reasoning_modes`; see the
README).
"""
    )
