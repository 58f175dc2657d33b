"""Think · Act · ReAct — the Gradio app (Hugging Face Space entry point).

Layout and wiring only: the Compare handlers live in ``ui/compare/handlers.py``, the Benchmark tab in
``ui/benchmark/tab.py``, page pieces in ``ui/page/parts.py`` (ARCHITECTURE.md maps the rest of ``ui/``).
``build_demo(settings, registry)`` lets tests inject a backend; ``python app.py`` reads the environment
(``LLM_*``/``HF_TOKEN``, and ``GRADIO_SERVER_NAME``/``GRADIO_SERVER_PORT``, which ``launch()`` honours by itself).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

import gradio as gr

import patches
from agents import gc_tuning, hosting
from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes.registry import run_options
from agents.settings import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TEMPERATURE,
    PROTOCOLS,
    REQUEST_MAX_STEPS,
    TEMPERATURE_RANGE,
)
from patches import (
    fastapi_route_match,
    gradio_generators,
    gradio_login_check,
    gradio_queue,
    gradio_sessions,
    matplotlib_probe,
    page_cache,
)
from patches.gradio_inputs import OptionalTrailingInputs, lenient
from patches.gradio_refusals import ReadableRefusals
from settings import SettingError, check_environment
from tools import children, mcp_config, sandbox_room, sandbox_wasm
from tools.hardening import make_non_dumpable
from tools.mcp_servers import app_registry
from tools.registry import ToolRegistry
from ui import mcp, poll
from ui.benchmark import open_in_compare
from ui.benchmark.tab import Shared, build_benchmark_tab
from ui.compare.handlers import CompareTab
from ui.compare.stepping import PauseBook, is_paused
from ui.core import backend, bodies, route_errors, signatures, visitors
from ui.core.admission import Admission, RunQuota
from ui.core.handlers import PAGE_EVENT
from ui.core.inputs import COMPARE_INPUTS, MAX_TOKENS_LIMIT, PAGE_TOOLS, PREVIOUS
from ui.core.launcher import launcher
from ui.core.lesson import Lessons
from ui.core.settings import AppSettings, app_settings
from ui.core.stream import Stops
from ui.fork import accordion
from ui.fork import evidence as evidence_api
from ui.page import behaviour, page_tools, parts, tool_picker
from ui.recordings.reader import MAX_REPLAY_BYTES
from ui.share.handlers import ShareHandlers
from ui.share.store import stored_export
from ui.tabs.compare import ComparePage, compare_layout

log = logging.getLogger(__name__)
MAX_UPLOAD_BYTES = MAX_REPLAY_BYTES  # the largest recording replay accepts
BURST = 32  # submissions that may arrive between two looks of Gradio's queue for new events (patches/gradio_queue.py)
# /compare and /compare_step: inputs checked by the handler (ui/core/inputs.read_request), frames sent as made; no
# limit in Gradio's queue, which would leave waiting visitors with a frozen page: a run waits in `admission` instead
RUN_EVENT: dict[str, Any] = {"concurrency_limit": None, "concurrency_id": "compare", "show_progress": "hidden",
                             "trigger_mode": "once", "preprocess": False, "postprocess": False}


class AppBlocks(mcp.OneToolMCP, OptionalTrailingInputs, ReadableRefusals, gr.Blocks):
    """``gr.Blocks`` with this app's framework patches mixed in, and what its launch adds.

    Mix-ins: ``OneToolMCP`` (``ui/mcp.py`` over ``patches/gradio_mcp.py``: MCP offers one tool, unless
    ``APP_MCP=0``), ``OptionalTrailingInputs`` (``patches/gradio_inputs.py``: a REST call may omit the
    optional last inputs ``optional_tail`` names) and ``ReadableRefusals`` (``patches/gradio_refusals.py``:
    an input Gradio refuses is one line). ``launch`` pins the peer address and gives each browser its signed
    cookie (``ui/core/visitors.py``), bounds request bodies and each visitor's uploads (``ui/core/bodies.py``),
    makes the sandboxes' memory pool its own and its workers' (``tools/sandbox_room.py``), answers a call to an
    unknown event with a 404 line
    (``ui/core/route_errors.py``), serves the page from memory
    (``patches/page_cache.py``) and the class poll's phones (``ui/poll/routes.py``), starts the run workers and,
    when it serves until stopped, settles the garbage collector (``agents/gc_tuning.py``)."""

    # /compare's expected answer and run options were added after its first callers, then `previous` (a follow-up's
    # earlier turn) and `page_tools` (a gr.State: the visitor's tools written on the page; /prompts and /benchmark
    # too); /benchmark's trials, then k (its tries per item)
    optional_tail = {"compare": 3 + len(run_options()), "compare_step": 3 + len(run_options()), "benchmark": 3,
                     "prompts": 1}

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        block = not kwargs.get("prevent_thread_lock", False)
        kwargs["prevent_thread_lock"] = True
        kwargs["app_kwargs"] = route_errors.with_handlers(kwargs.get("app_kwargs"))  # unknown events: a 404 line
        kwargs["app_kwargs"] = bodies.with_limits(kwargs["app_kwargs"])  # bodies and uploads, before Gradio's
        sandbox_room.own_pool()  # its run workers (started below) share its sandboxes' memory budget
        with visitors.pinned_peer_address():  # read by uvicorn as Gradio starts it
            result = super().launch(*args, **kwargs)
        if not visitors.peer_address_pinned(getattr(self, "server", None)):
            log.warning("the server may take client addresses from X-Forwarded-For: per-visitor limits trust them")
        gradio_login_check.install(self.server_app)  # a REST call's login check inline, not on the thread pool
        poll.routes.install(self.server_app)  # the class poll's phone page and JSON (the page cache passes them on)
        page_cache.install(self.server_app)  # the page and its files from memory, whatever runs
        visitors.install(self.server_app)  # each browser its signed cookie, a page from memory too
        launcher.call(hosting.start_default_host)  # the live runs' worker processes, off the event loop
        if block:  # this process now serves until it is stopped (tests launch and close many apps: not them)
            gc_tuning.settle()  # the start-up heap is never walked again (agents/gc_tuning.py)
            self.block_thread()
        return result


def build_demo(settings: LLMSettings | None = None, registry: ToolRegistry | None = None, *,
               model_factory: ModelBuilder | None = None, on_space: bool | None = None) -> gr.Blocks:
    """The whole app. ``settings``/``registry`` default to the environment and all tools."""
    settings = settings or LLMSettings.from_env()
    install_patches()
    if registry is None:
        registry = app_registry()  # the built-in tools, then those of APP_MCP_SERVERS' servers
    on_space = bool(os.environ.get("SPACE_ID")) if on_space is None else on_space
    stops = Stops()  # each visitor's live streams, for the Stop buttons
    lessons = Lessons()  # what each open page shows (ui/core/lesson.py): every Compare feature reads and writes it
    # Runs are I/O bound (waiting on the model): many at once. A class of 50 running "All" must not queue behind
    # itself; past APP_CONCURRENCY runs, more wait and see their place, each visitor in its share (ui/core/admission.py)
    limits = app_settings()
    admission = Admission(limits.concurrency, limits.queue_size, RunQuota.from_settings())

    with AppBlocks(title=parts.TITLE, fill_width=True, delete_cache=(3600, 3600)) as demo:
        backend_md = parts.header(settings, on_space=on_space)
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab shows, on two lines if need be
            with gr.Tab("Compare", id="compare", elem_id="compare-tab"):
                page = compare_layout(toy=settings.toy)
                teacher = poll.teacher.wire_poll(page.poll, page, lessons)  # the class poll: wired before the runs
                knobs = settings_layout(settings, registry)
            with gr.Tab("Prompts", id="prompts"):
                parts.prompts_tab(registry, knobs.protocol, knobs.max_steps, knobs.tools, demo, knobs.page_tools.own)
            with gr.Tab("Benchmark", id="benchmark"):
                shared = Shared(knobs.model, knobs.protocol, knobs.max_steps, knobs.temperature, knobs.tools,
                                knobs.options.get("trials"), knobs.page_tools.own)
                bench = build_benchmark_tab(settings, registry, shared, model_factory=model_factory,
                                            on_space=on_space, stops=stops, runs=admission.quota)
                picker = open_in_compare.picker_layout()
            with gr.Tab("About", id="about"):
                parts.about_tab()
        handlers = CompareTab(settings, registry, page.outputs, model_factory=model_factory, stops=stops,
                              admission=admission, lessons=lessons,
                              pauses=PauseBook(limits.paused_per_visitor, limits.paused_max, limits.pause_ttl_s))
        wire_new_run(page, handlers)  # before the runs: see there
        wire_compare(handlers, page, knobs)
        wire_share(ShareHandlers(page.outputs, lessons=lessons), page, demo)
        open_in_compare.wire(open_in_compare.BenchOpen(bench["folders"], page.outputs, lessons), picker,
                             bench["event"], [*page.outputs.all(), *page.on_screen()])
        picker["open"].click(fn=None, js="() => false", outputs=page.expected_given, queue=False)  # its own answer
        wire_stepping(handlers, page, knobs)
        wire_fork(accordion.ForkTab(settings, registry, page.outputs, model_factory=model_factory, stops=stops,
                                    admission=admission, lessons=lessons), page.fork, page, knobs)
        wire_closed_pages(demo, handlers, teacher)
        tester = evidence_api.register(evidence_api.Backend(settings, registry, admission, model_factory,
                                                            stored_export))  # /evidence_test; the MCP tool's too
        mcp.register(settings, registry, admission, model_factory=model_factory, evidence=tester)  # the MCP tool
        if on_space:
            wire_backend_line(settings, backend_md, demo)
    queue_up(demo, limits)
    return demo


def queue_up(demo: gr.Blocks, limits: AppSettings) -> None:
    """Gradio's own queue only holds events for the moment before they start (Compare waits in `admission`);
    its limit is a backstop against floods, above our line so that visitors see our message first.
    status_update_rate: Gradio's "auto" sends every queued event an estimate each time any event starts
    (O(n²) messages): 300 submissions at once then waited ~10 s for their first word, ~2 s with this."""
    demo.queue(default_concurrency_limit=limits.concurrency,
               max_size=2 * (limits.concurrency + limits.queue_size) + BURST, status_update_rate=1.0)
    gradio_queue.install(demo)  # the queue's idle polling, slowed down (patches/gradio_queue.py)
    signatures.pin_handlers(demo.fns.values())  # Gradio reads each handler's signature per event


def install_patches() -> None:
    """The framework patches a page's events go through, installed before the page is built."""
    gradio_sessions.install(app_settings().session_ttl_s)  # per-visitor state: cheap to make, given back when idle
    matplotlib_probe.install()  # Gradio's import of it around every frame fails at once, without a sys.path search
    gradio_generators.install()  # a streaming handler's generator made on the loop, not on the thread pool
    fastapi_route_match.install()  # a request to Gradio's routes matched once, not twice


def wire_backend_line(settings: LLMSettings, backend_md: gr.Markdown, demo: gr.Blocks) -> None:
    """On a Space, the header's backend line says whether the visitor is signed in (whose quota a run spends)."""
    def visitor(oauth_token: gr.OAuthToken | None = None) -> str:
        return parts.backend_line(settings, visitor_signed_in=oauth_token is not None)

    demo.load(visitor, outputs=backend_md, api_visibility="private")


@dataclass(frozen=True)
class Knobs:
    """The Settings accordion (shared by Compare, Prompts and Benchmark)."""

    model: gr.Dropdown
    protocol: gr.Radio
    max_steps: gr.Slider
    temperature: gr.Slider
    tools: gr.CheckboxGroup
    max_tokens: gr.Number
    options: dict[str, gr.Slider]  # the modes' run options (agents/modes/registry.RunOption), by name
    page_tools: page_tools.PageToolControls  # "Add a tool": the visitor's own, written on the page


def settings_layout(settings: LLMSettings, registry: ToolRegistry) -> Knobs:
    """The Settings accordion under the panels."""
    offered = settings.models if settings.base_url else parts.ROUTER_MODELS  # a server's own list, or the router's
    models = [m for m in dict.fromkeys([settings.model, *offered]) if m]
    with gr.Accordion("Settings", open=False, elem_id="settings"):
        with gr.Row():
            model = gr.Dropdown(models, value=settings.model, allow_custom_value=True, label="Model",
                                info=parts.model_info(settings))
            protocol = gr.Radio([(label, key) for key, label in PROTOCOLS.items()], value="text", label="Protocol")
        with gr.Row():
            max_steps = lenient(gr.Slider(1, REQUEST_MAX_STEPS, value=DEFAULT_MAX_STEPS, step=1, label="Max steps"))
            temperature = lenient(gr.Slider(*TEMPERATURE_RANGE, value=DEFAULT_TEMPERATURE, step=0.1,
                                            label="Temperature"))
            own = gr.State([])  # the visitor's tools written on the page (ui/page/page_tools.py)
            tools = tool_picker.tool_picker(registry, own)  # with MCP servers named, a button to ask them again
            # a request may ask for at most MAX_TOKENS_LIMIT (a larger LLM_MAX_TOKENS still applies when it is empty)
            max_tokens = gr.Number(min(settings.max_tokens, MAX_TOKENS_LIMIT), label="Max tokens", minimum=1,
                                   maximum=MAX_TOKENS_LIMIT, precision=0, elem_id="max-tokens",
                                   info="Longest reply per model call (LLM_MAX_TOKENS); smaller for slow CPU models")
            options = {o.name: lenient(gr.Slider(o.low, o.high, value=o.default, step=1, label=o.label, elem_id=o.name,
                                                 info=o.info)) for o in run_options()}
        mine = page_tools.layout(own)
    return Knobs(model, protocol, max_steps, temperature, tools, max_tokens, options, mine)


def run_inputs(page: ComparePage, knobs: Knobs) -> dict[str, gr.Component]:
    """``/compare``'s (and ``/compare_step``'s) inputs by name, in their order: ``ui.core.inputs.COMPARE_INPUTS``,
    then the run options, ``previous`` and ``page_tools``."""
    named = {"question": page.question, "mode": page.modes, "model": knobs.model, "protocol": knobs.protocol,
             "max_steps": knobs.max_steps, "temperature": knobs.temperature, "tools": knobs.tools,
             "fourth": page.fourth, "max_tokens": knobs.max_tokens, "expected": page.expected}
    return {**{name: named[name] for name in COMPARE_INPUTS}, **knobs.options, PREVIOUS: page.previous,
            PAGE_TOOLS: knobs.page_tools.own}


def followup_inputs(page: ComparePage, knobs: Knobs) -> dict[str, gr.Component]:
    """A follow-up's inputs: a run's, without ``previous`` (the page's follow-up reads the turns from its lesson)."""
    return {name: c for name, c in run_inputs(page, knobs).items() if name != PREVIOUS}


def wire_new_run(page: ComparePage, handlers: CompareTab) -> None:
    """What a run, replay or fork changes on the page as it starts: the run comes on screen; the last link goes
    (it shows another run now; a replay takes the export too: its panels are not the live run's), and a new run
    the fork's panel (a follow-up keeps it: ``CompareTab.followup_start``). Wired before the runs: Gradio's page
    starts a trigger's events in turn, a later one only once a run before it has streamed to its end."""
    starts = [page.run_btn.click, page.step.step_btn.click, page.question.submit, page.expected.submit]
    behaviour.show_run_on([*starts, page.followup.ask_btn.click, page.followup.step_btn.click,
                           page.replay_btn.click, page.fork.button.click, page.fork.evidence.click])
    gr.on(starts, handlers.page_run, outputs=[page.share_link, page.beside_col, page.expected_given], **PAGE_EVENT)
    gr.on([page.fork.button.click, page.fork.evidence.click], lambda: "", outputs=page.share_link, **PAGE_EVENT)
    page.replay_btn.click(lambda: (None, "", False), outputs=[page.outputs.exports, page.share_link,
                                                              page.expected_given], **PAGE_EVENT)


def wire_compare(handlers: CompareTab, page: ComparePage, knobs: Knobs) -> None:
    """Run, Replay, Stop, the columns the mode picker shows, and Settings' Add a tool."""
    out = page.outputs
    parts.example_hints(page.examples, out.status, page.modes, toy=handlers.settings.toy)
    # the picker's value changes by a click or from a file put on screen (a replay, a link): its columns follow
    page.modes.change(CompareTab.show_modes, page.modes, list(page.columns), **PAGE_EVENT)
    gr.on([page.run_btn.click, page.question.submit, page.expected.submit], handlers.compare,
          inputs_kwargs=run_inputs(page, knobs), outputs=out.all(), api_name="compare", **RUN_EVENT)
    page.replay_btn.click(handlers.reveal_beside, page.replay_file, [page.beside_col, out.beside_chat], **PAGE_EVENT)
    replay = {"inputs": [page.replay_file, page.speed], "concurrency_limit": app_settings().concurrency,
              "concurrency_id": "replay", "show_progress": "hidden", "postprocess": False}
    replayed = [*out.all(files=False, step_map=False), page.question, *knobs.options.values(), page.modes,
                out.step_map]  # the map last: the outputs before keep their places
    page.replay_api.click(handlers.play, outputs=replayed, api_name="replay", **replay)  # the API's, unchanged
    page.replay_btn.click(handlers.play_on_page, outputs=[*replayed, page.expected], api_visibility="private",
                          **replay).then(handlers.followup_row, outputs=page.followup.row, **PAGE_EVENT)
    # Stop ends this visitor's run or replay, which renders its own stopped frame (ui/core/stream.py). No
    # `cancels=`: a cancelled generator could say nothing; a closed tab still cancels it (and ends the run).
    page.stop_btn.click(handlers.stop, **PAGE_EVENT)
    # a follow-up of the run on screen, whatever put it there (its turns are the page's lesson's): its Expected
    # answer first (its own, or empty), then every panel continues its conversation
    page.followup.ask_btn.click(handlers.followup_start, [page.expected_given, page.expected],
                                [page.expected, page.expected_given, page.share_link, page.beside_col],
                                **PAGE_EVENT).then(
        handlers.follow_up, inputs_kwargs=followup_inputs(page, knobs), outputs=out.all(), api_visibility="private",
        **RUN_EVENT)
    out.exports.change(handlers.followup_row, outputs=page.followup.row, **PAGE_EVENT)
    # Settings' Add a tool (the visitor's tools written on the page), which a replay fills with the recording's
    page_tools.wire(handlers.registry, knobs.page_tools, knobs.tools, page.replay_btn, page.replay_file)


def wire_share(share: ShareHandlers, page: ComparePage, demo: gr.Blocks) -> None:
    """Share gives a link to the run on screen; a page opened with ``?run=<id>`` shows that run at once."""
    out = page.outputs
    page.share_btn.click(share.share, None, page.share_link, api_visibility="private", show_progress="hidden")
    # not queued: every page load calls it, and without ?run= it returns at once (no slot in Gradio's queue);
    # with one, the handler bounds opens itself (a few at a time, a rate per visitor) and sends a stored view as is
    behaviour.show_linked_run_after(demo.load(share.open, outputs=[*out.all(), *page.on_screen()], postprocess=False,
                                              **PAGE_EVENT))


def wire_stepping(handlers: CompareTab, page: ComparePage, knobs: Knobs) -> None:
    """Step, Next step and Continue (ui/compare/stepping.py). Step runs ``/compare_step`` — ``/compare``'s inputs and
    outputs — while Next step and Continue show; ``/step_next`` and ``/step_continue`` act on the caller's
    session's stepping run (an API client keeps one session: one ``gradio_client.Client``)."""
    out, buttons = page.outputs, page.step
    controls = [buttons.next_btn, buttons.continue_btn]

    def show(visible: bool) -> Any:  # Next step starts disabled: it is enabled by the first pause
        return lambda: [gr.Button(visible=visible, interactive=False), gr.Button(visible=visible)]

    buttons.step_btn.click(show(True), outputs=controls, **PAGE_EVENT).then(
        handlers.step_compare, inputs_kwargs=run_inputs(page, knobs), outputs=out.all(), api_name="compare_step",
        **RUN_EVENT).then(
        show(False), outputs=controls, **PAGE_EVENT)
    page.followup.step_btn.click(handlers.followup_start, [page.expected_given, page.expected],  # a follow-up, stepping
                                 [page.expected, page.expected_given, page.share_link, page.beside_col],
                                 **PAGE_EVENT).then(
        show(True), outputs=controls, **PAGE_EVENT).then(
        handlers.step_follow_up, inputs_kwargs=followup_inputs(page, knobs), outputs=out.all(),
        api_visibility="private", **RUN_EVENT).then(
        show(False), outputs=controls, **PAGE_EVENT)
    # Next step is clickable only while the run waits: disabled at the click, enabled by the next pause
    # (the status line says so). A click that slips through is harmless: the engine grants one step per pause.
    buttons.next_btn.click(lambda: gr.Button(interactive=False), outputs=buttons.next_btn, **PAGE_EVENT)
    out.status.change(lambda status: gr.Button(interactive=is_paused(status)), out.status, buttons.next_btn,
                      **PAGE_EVENT)
    buttons.next_btn.click(handlers.next_step, api_name="step_next", concurrency_limit=None, concurrency_id="step",
                           show_progress="hidden")
    buttons.continue_btn.click(handlers.continue_run, api_name="step_continue", concurrency_limit=None,
                               concurrency_id="step", show_progress="hidden")
    buttons.continue_btn.click(show(False), outputs=controls, **PAGE_EVENT)


def wire_fork(handlers: accordion.ForkTab, controls: accordion.ForkControls, page: ComparePage, knobs: Knobs) -> None:
    """The Fork accordion (ui/fork/accordion.py, private events); a new run closes the panel beside the modes
    (:func:`wire_new_run`)."""
    accordion.wire(handlers, controls, page.outputs, page.beside_col,
                   [knobs.model, knobs.protocol, knobs.max_steps, knobs.temperature, knobs.tools, knobs.max_tokens])


def wire_closed_pages(demo: gr.Blocks, handlers: CompareTab, teacher: poll.teacher.Teacher) -> None:
    """A page that closes gives its lesson back (a stream it still had ends), and its class poll room ends after
    ``APP_POLL_GRACE_S`` unless one of the teacher's pages shows it again."""
    demo.unload(handlers.closed)
    demo.unload(teacher.closed)


def launch_kwargs() -> dict[str, Any]:
    """What ``launch()`` needs besides host/port (Gradio 6 takes css/theme/js here, not in Blocks).

    ``max_file_size``: an upload is a recording to replay (refused over 20 MB anyway) or a benchmark
    dataset (200 questions are a few hundred KB), so Gradio refuses anything larger before storing it.
    """
    # max_threads also caps the events Gradio processes at once (its "active jobs"), whatever their
    # concurrency limits: room for every running and waiting Compare run, plus the page's other events.
    # ssr_mode: never Gradio's Node server (a Space turns it on by default), which it would start with a copy of the
    # app's environment, secrets and all (tools/children.py starts every process the app starts)
    limits = app_settings()
    return {"css": parts.css(), "theme": parts.theme(), "js": behaviour.page_js(), "footer_links": ["api", "gradio"],
            "max_threads": limits.concurrency + limits.queue_size + 40, "max_file_size": MAX_UPLOAD_BYTES,
            "ssr_mode": False}


def main() -> int:
    """``python app.py``: every setting is checked before anything starts; a bad one is one line and exit 2."""
    make_non_dumpable()  # it holds HF_TOKEN: no other process of this user may read it (tools/hardening.py)
    children.tidy_on_sigterm(sandbox_wasm.shutdown)  # asked to stop: no sandbox host or scratch folder outlives it
    try:  # every variable once; on a Space a bad one is a log line and its default (settings.py)
        check_environment((LLMSettings.from_env, AppSettings.from_env, hosting.workers_from_env, patches.check_env,
                           mcp_config.check_env))
        settings, limits = LLMSettings.from_env(), app_settings()
    except SettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sandbox_wasm.warm_up()  # the sandbox's runtime compiles once per machine (seconds): not on a visitor's first call
    on_space = bool(os.environ.get("SPACE_ID"))
    # a named model as is; a server's listed one; or, off a Space with nothing configured, the toy model
    settings = backend.choose_backend(settings, on_space=on_space, toy=limits.toy_model)
    build_demo(settings, on_space=on_space).launch(**launch_kwargs())
    return 0


if __name__ == "__main__":
    sys.exit(main())
