"""Think · Act · ReAct — the Gradio app (Hugging Face Space entry point).

Layout and wiring only: rendering lives in ``ui/render.py``, the run/replay streams in
``ui/session.py``, page pieces in ``ui/tabs.py``. ``build_demo(settings, registry)`` lets tests
inject a backend; ``python app.py`` reads the environment (``LLM_*``/``HF_TOKEN``, and
``GRADIO_SERVER_NAME``/``GRADIO_SERVER_PORT``, which ``launch()`` honours by itself).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from typing import Any

import gradio as gr

from agents import run_host
from agents.comparison import validate_question
from agents.llm.settings import LLMSettings
from agents.trace import MODE_TITLES
from tools.registry import ToolRegistry
from ui import serving, sessions, tabs
from ui.admission import Admission
from ui.benchmark_tab import build_benchmark_tab
from ui.inputs import compare_problem, lenient, protocol_value
from ui.launcher import launcher
from ui.recording import MAX_REPLAY_BYTES
from ui.render import HYBRIDS
from ui.replay import SPEEDS, ReplayError, hybrid_in_file, open_recording
from ui.session import Frame, ModelFactory, live_run, make_config, mark_stopped, prepared, refusal, replay

MODE_LABELS = ["Think", "Act", "ReAct", "All"]
PROTOCOLS = [("Text ReAct (Thought / Action / Observation)", "text"), ("Native tool calls", "tools")]
# Runs are I/O bound (waiting on the model): many at once. A class of 50 running "All" must not
# queue behind itself; past this many runs, more wait in line and see their place (ui/admission.py).
RUN_CONCURRENCY = int(os.environ.get("APP_CONCURRENCY", "64"))
QUEUE_SIZE = int(os.environ.get("APP_QUEUE_SIZE", "200"))  # runs waiting in line; past it: "full, try again"
MAX_UPLOAD_BYTES = MAX_REPLAY_BYTES  # the largest recording replay accepts
PANEL_HEIGHT = 380  # px: at 1366×768 the panels fit under the question row (resizable by dragging)


class ClassroomBlocks(gr.Blocks):
    """``gr.Blocks`` whose server, once launched, checks logins on the event loop (see ui/serving.py)."""

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        block = not kwargs.get("prevent_thread_lock", False)
        kwargs["prevent_thread_lock"] = True
        result = super().launch(*args, **kwargs)
        serving.async_login_check(self.server_app, self)
        launcher.call(run_host.start_default_host)  # the live runs' worker processes, off the event loop
        if block:
            self.block_thread()
        return result


def skip_matplotlib_probe() -> None:
    """Gradio tries ``import matplotlib`` twice per handler call (every streamed frame) to switch its
    backend. Without matplotlib installed each try scans ``sys.path`` again — a dozen ``stat``
    calls on the event loop, each a chance to lose the GIL to the run threads: under a 300-run
    flood, most of the loop's time. A ``None`` in ``sys.modules`` makes the failing import instant."""
    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]


def build_demo(settings: LLMSettings | None = None, registry: ToolRegistry | None = None, *,
               model_factory: ModelFactory | None = None, on_space: bool | None = None) -> gr.Blocks:
    """The whole app. ``settings``/``registry`` default to the environment and all tools."""
    settings = settings or LLMSettings.from_env()
    sessions.install()  # per-visitor state: cheap to make, given back when idle
    skip_matplotlib_probe()
    if registry is None:
        from tools import default_registry

        registry = default_registry()
    on_space = bool(os.environ.get("SPACE_ID")) if on_space is None else on_space
    models = list(dict.fromkeys([settings.model, *tabs.ROUTER_MODELS]))
    admission = Admission(RUN_CONCURRENCY, QUEUE_SIZE)  # this app's line of Compare runs

    with ClassroomBlocks(title=tabs.TITLE, fill_width=True, delete_cache=(3600, 3600)) as demo:
        backend_md, _banner = tabs.header(settings, on_space=on_space)
        with gr.Tab("Compare", id="compare"):
            with gr.Row(elem_id="ask-row", equal_height=True):
                question = gr.Textbox(label="Question", show_label=False, lines=1, max_lines=5, scale=5,
                                      placeholder="Ask a question, or pick an example below…", elem_id="question")
                mode = gr.Radio(MODE_LABELS, value="All", label="Modes", show_label=False, scale=0, min_width=330,
                                elem_id="mode")
                run_btn = gr.Button("▶ Run", variant="primary", elem_id="run-btn", scale=0, min_width=90)
                stop_btn = gr.Button("■ Stop", variant="stop", elem_id="stop-btn", scale=0, min_width=90)
            tabs.examples(question)
            with gr.Row(elem_id="status-row"):
                status = gr.Markdown("", label="Status", elem_id="run-status")
                tabs.presentation_toggle()
            with gr.Row(elem_id="panels", equal_height=True):
                chats, metrics = [], []
                for key, label in (("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")):
                    with gr.Column(min_width=260, elem_classes="panel-col", elem_id=f"col-{key}"):
                        chats.append(gr.Chatbot(label=label, elem_id=f"panel-{key}", elem_classes="panel-chat",
                                                height=PANEL_HEIGHT, resizable=True, feedback_options=None, layout="panel",
                                                group_consecutive_messages=False, buttons=["copy_all"],
                                                placeholder=f"**{label}** — press Run"))
                        metrics.append(gr.Markdown("", label=f"{label} metrics", elem_id=f"metrics-{key}",
                                                   elem_classes="metrics"))
                with gr.Column(min_width=260, elem_classes="panel-col", elem_id="col-fourth", visible=False) as col4:
                    chat4 = gr.Chatbot(label="Hybrid", elem_id="panel-fourth", elem_classes="panel-chat",
                                       height=PANEL_HEIGHT, resizable=True, feedback_options=None, layout="panel",
                                       group_consecutive_messages=False, buttons=["copy_all"],
                                       placeholder="**Hybrid** — pick one under Settings → Fourth panel")
                    metrics4 = gr.Markdown("", label="Hybrid metrics", elem_id="metrics-fourth", elem_classes="metrics")
            table = gr.Markdown("", label="Comparison", elem_id="comparison")
            with gr.Row():
                exports = gr.File(label="Export this run (JSON with the full trace, and Markdown)", file_count="multiple",
                                  interactive=False, elem_id="exports", scale=3)
                with gr.Column(scale=2, min_width=240, elem_id="replay-box"):
                    replay_file = gr.File(label="Replay a saved run (JSON)", file_types=[".json"], type="filepath",
                                          elem_id="replay-file")
                    with gr.Row():
                        speed = gr.Radio(list(SPEEDS), value=next(iter(SPEEDS)), label="Replay speed", scale=3)
                        replay_btn = gr.Button("▶ Replay", elem_id="replay-btn", scale=1, min_width=80)
            with gr.Accordion("Settings", open=False, elem_id="settings"):
                with gr.Row():
                    model = gr.Dropdown(models, value=settings.model, allow_custom_value=True, label="Model",
                                        info="HF router models with tool calling, or type any model id")
                    protocol = gr.Radio(PROTOCOLS, value="text", label="Protocol")
                with gr.Row():
                    max_steps = lenient(gr.Slider(1, 10, value=5, step=1, label="Max steps"))
                    temperature = lenient(gr.Slider(0.0, 1.5, value=0.2, step=0.1, label="Temperature"))
                    tools = gr.CheckboxGroup(registry.names, value=registry.names, label="Enabled tools")
                    fourth = gr.Dropdown(list(HYBRIDS), value="None", label="Fourth panel",
                                         info="The ReAct paper's hybrids with chain-of-thought self-consistency")
                    max_tokens = gr.Number(settings.max_tokens, label="Max tokens", minimum=1, maximum=32768,
                                           precision=0, elem_id="max-tokens",
                                           info="Longest reply per model call (LLM_MAX_TOKENS); smaller for slow CPU models")
        with gr.Tab("Prompts", id="prompts"):
            tabs.prompts_tab(registry, protocol, max_steps, tools, demo)
        with gr.Tab("Benchmark", id="benchmark"):
            build_benchmark_tab(settings, registry, model_factory=model_factory, model=model, protocol=protocol,
                                max_steps=max_steps, temperature=temperature, tools=tools, on_space=on_space)
        with gr.Tab("About", id="about"):
            tabs.about_tab(on_space)

        fourth.change(lambda choice: (gr.Column(visible=choice != "None"), gr.Chatbot(label=choice)), fourth,
                      [col4, chat4], api_visibility="private", show_progress="hidden")
        # The three panels come first (the API's contract), the optional hybrid panel last.
        outputs = [*chats, *metrics, status, table, exports, chat4, metrics4]

        def as_outputs(frame: Frame, files: bool = True) -> list:
            # Streamed events use postprocess=False: the components' own postprocess runs here, inline,
            # instead of once per output per frame on Gradio's thread pool (8× the CPU, and a thread hop
            # each: under load those hops, not the model, were what delayed the first token).
            values = [*frame.panels, *frame.metrics, frame.status, frame.table, frame.files, frame.fourth,
                      frame.fourth_metrics]
            pairs = [(c, v) for c, v in zip(outputs, values, strict=True) if files or c is not exports]
            return prepared([c for c, _ in pairs], [v for _, v in pairs])

        async def compare(question: str, mode: str = "All", model: str | None = None, protocol: str = "text",
                          max_steps: float = 5, temperature: float = 0.2, tools: list[str] | None = None,
                          fourth: str = "None", max_tokens: float | None = None,
                          oauth_token: gr.OAuthToken | None = None):
            """Run the question through the chosen modes in parallel; streams the three panels, then
            the three metrics lines, the status line, the comparison table, the export files, and the
            optional fourth (hybrid) panel with its metrics. ``max_tokens`` (the last input) caps each reply;
            None: LLM_MAX_TOKENS."""
            # preprocess=False: inputs arrive as sent (plain strings, numbers, a list); they are checked
            # here and in live_run (one clear line, no model call), which saves Gradio a thread hop per input.
            problem = validate_question(question) or compare_problem(
                mode=mode, model=model, protocol=protocol, max_steps=max_steps, temperature=temperature,
                tools=tools, fourth=fourth, registry=registry, max_tokens=max_tokens)
            if problem is not None:
                yield as_outputs(refusal(problem))
                return
            run_settings = settings.with_overrides(model=model or None,
                                                   token=oauth_token.token if oauth_token else None)
            enabled = registry.subset(tools)
            config = make_config(protocol_value(protocol), max_steps, temperature, max_tokens)
            async for frame in live_run(question, mode, run_settings, enabled, config, model_factory=model_factory,
                                        fourth=fourth, admission=admission):
                yield as_outputs(frame)

        run_event = gr.on([run_btn.click, question.submit], compare,
                          inputs=[question, mode, model, protocol, max_steps, temperature, tools, fourth, max_tokens],
                          outputs=outputs,
                          # no limit in Gradio's queue, which would leave waiting visitors with a frozen page:
                          # the run waits in `admission` instead, showing its place in line
                          api_name="compare", concurrency_limit=None, concurrency_id="compare",
                          show_progress="hidden", trigger_mode="once", preprocess=False, postprocess=False)

        replay_outputs = [*(o for o in outputs if o is not exports), question]

        async def play(path: str | None, speed_label: str = "1× (original pace)"):
            """Replay a JSON export in the panels (no model or network needed)."""
            try:  # read, checked and condensed in a worker process: a 20 MB file never stalls the app
                recording = await open_recording(path if isinstance(path, str) else "", speed_label)
            except ReplayError as exc:
                yield [*as_outputs(refusal(str(exc)), files=False), gr.skip()]
                return
            async for frame in replay(recording, speed_label):
                yield [*as_outputs(frame, files=False), recording.question]

        def reveal_fourth(path: str | None) -> tuple:
            """A replayed run with a hybrid opens the fourth panel, titled with it."""
            hybrid = hybrid_in_file(path) if isinstance(path, str) else None
            if hybrid is None:
                return gr.skip(), gr.skip()
            return gr.Column(visible=True), gr.Chatbot(label=MODE_TITLES[hybrid])

        replay_btn.click(reveal_fourth, replay_file, [col4, chat4], api_visibility="private", show_progress="hidden")
        replay_event = replay_btn.click(play, inputs=[replay_file, speed], outputs=replay_outputs, api_name="replay",
                                        concurrency_limit=RUN_CONCURRENCY, concurrency_id="replay",
                                        show_progress="hidden", postprocess=False)

        async def stopped(*panels: list) -> tuple:
            await asyncio.sleep(0.2)  # let the cancelled run's last update land first
            return mark_stopped(*panels)

        stop_btn.click(fn=None, cancels=[run_event, replay_event]).then(
            stopped, inputs=[*chats, chat4], outputs=[*chats, chat4, status], api_visibility="private",
            show_progress="hidden")

        if on_space:
            def visitor(oauth_token: gr.OAuthToken | None = None) -> str:
                return tabs.backend_line(settings, visitor_signed_in=oauth_token is not None)

            demo.load(visitor, outputs=backend_md, api_visibility="private")
    # Gradio's own queue only holds events for the moment before they start (Compare waits in `admission`);
    # its limit is a backstop against floods, above our line so that visitors see our message first.
    demo.queue(default_concurrency_limit=RUN_CONCURRENCY, max_size=2 * (RUN_CONCURRENCY + QUEUE_SIZE))
    return demo


def launch_kwargs() -> dict[str, Any]:
    """What ``launch()`` needs besides host/port (Gradio 6 takes css/theme/js here, not in Blocks).

    ``max_file_size``: an upload is a recording to replay (refused over 20 MB anyway) or a benchmark
    dataset (200 questions are a few hundred KB), so Gradio refuses anything larger before storing it.
    """
    # max_threads also caps the events Gradio processes at once (its "active jobs"), whatever their
    # concurrency limits: room for every running and waiting Compare run, plus the page's other events.
    return {"css": tabs.css(), "theme": tabs.theme(), "footer_links": ["api", "gradio"],
            "max_threads": RUN_CONCURRENCY + QUEUE_SIZE + 40, "max_file_size": MAX_UPLOAD_BYTES}


if __name__ == "__main__":
    build_demo().launch(**launch_kwargs())
