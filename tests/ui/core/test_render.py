"""Rendering helpers: event → panel content, metrics line, comparison table, export/replay round trip."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from agents.events import Action, FinalAnswer, LLMError, Observation, ParseError, Thought, TokenDelta, Usage
from agents.llm.base import Chunk, LLMFailure
from agents.llm.settings import NOT_CONFIGURED, LLMSettings
from agents.request import RunRequest
from agents.trace import Trace
from tests.frames import collect_now, content
from ui.compare.live_run import Serving, live_run
from ui.core import render, safe_text
from ui.core.inputs import make_config
from ui.core.modes import BASE as MODES
from ui.core.render import Panel, safe_markdown
from ui.core.table import agreement, answers_agree, comparison_markdown, metrics_markdown
from ui.page.examples import CATEGORIES, EXAMPLES, by_category
from ui.recordings.export import export_dict, export_markdown, settings_block, write_exports
from ui.recordings.playback import play
from ui.recordings.reader import RecordingError, read_recording, schedule

XSS = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=1</script>'


def texts(panel: Panel) -> list[str]:
    return [m.content for m in panel.value()]


def titles(panel: Panel) -> list[str]:
    return [m.metadata.get("title", "") for m in panel.value()]


def react_trace(question: str = "What is 2+2?", answer: str = "4", mode: str = "react") -> Trace:
    trace = Trace(mode, question)
    for t, event in enumerate([
        TokenDelta("Thought: add\n", "thought"), Usage(10, 5, 0.1),
        Thought("add"), Action("calculate", "2+2", "add"), Observation("calculate", "4", elapsed_s=0.01),
        TokenDelta("Final Answer: 4", "answer"), Usage(20, 4, 0.1), FinalAnswer(answer),
    ]):
        trace.add(event, t * 0.1)
    return trace


# -- safe text ---------------------------------------------------------------------------------


def test_safe_markdown_escapes_html_outside_code():
    out = safe_markdown(f"Answer: {XSS} & more")
    assert "<img" not in out and "<script" not in out
    assert "&lt;img" in out and "&lt;script" in out and "&amp; more" in out


def test_safe_markdown_keeps_code_verbatim():
    """Code reads as written; a tag in it gets a zero-width space after its ``<`` (see the next tests)."""
    text = "Use `x < 5` here\n\n```python\nif a < b:\n    print('<b>')\n```\nand <b>bold</b>"
    out = safe_markdown(text)
    assert "`x < 5`" in out
    assert "if a < b:\n    print('<b>')" in out.replace(safe_text.ZWSP, "")
    assert "<b>" not in out
    assert out.endswith("and &lt;b>bold&lt;/b>")


FETCHING = [
    "![beacon](http://127.0.0.1:9/a.png)",  # an inline image
    "![beacon][ref]\n\n[ref]: http://127.0.0.1:9/b.png",  # by reference
    "![ref]\n\n[ref]: http://127.0.0.1:9/c.png",  # the shortcut form
    "[a](http://x/`)![i](http://127.0.0.1:9/d.png)`",  # code-span bounds that Markdown reads differently
    "$$ `<img src=http://127.0.0.1:9/e.png>` $$",  # Gradio's LaTeX block pastes its text into the page as HTML
    "```mermaid\ngraph TD; A[<img src=http://127.0.0.1:9/f.png>]\n```",  # and so does its mermaid block
    "- item\n   ```\n<img src=http://127.0.0.1:9/g.png>\n   ```",  # a fence that a list item ends early
]


@pytest.mark.parametrize("text", FETCHING)
def test_untrusted_text_keeps_no_image_tag_or_diagram(text):
    for out in (safe_markdown(text), render.fenced(text), safe_text.escape_html(text)):
        assert "![" not in out and "<img" not in out and "```mermaid" not in out
        assert out.replace(safe_text.ZWSP, "").replace("&lt;", "<").count("http://127.0.0.1:9/") == 1  # still shown
    one_line = safe_text.plain(text)  # every Markdown character escaped, and no "$$" LaTeX block
    assert "$$" not in one_line and re.search(r"(?<!\\)[<!\[`]", one_line) is None


def test_a_link_stays_a_link_and_text_reads_the_same():
    assert safe_markdown("see [the page](http://example.org) or <http://example.org>") == \
        "see [the page](http://example.org) or &lt;http://example.org>"
    assert safe_markdown("![cat](http://x/c.png)") == "!" + safe_text.ZWSP + "[cat](http://x/c.png)"


def test_safe_markdown_unclosed_fence_is_escaped():
    out = safe_markdown("```\n<script>alert(1)</script>")
    assert "<script" not in out


def test_fenced_survives_backticks_inside():
    block = render.fenced("a ``` b ```` c")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


def test_plain_escapes_markdown_and_html():
    assert render.plain("<b>*x*</b>") == "\\<b\\>\\*x\\*\\</b\\>"


# -- panel -------------------------------------------------------------------------------------


def test_tokens_stream_into_a_pending_draft_then_become_a_thought():
    panel = Panel("react")
    panel.add(TokenDelta("Thought: I need", "thought"))
    panel.add(TokenDelta(" to add", "thought"))
    assert panel.streaming
    [draft] = panel.value()
    assert draft.metadata["status"] == "pending" and "Writing" in draft.metadata["title"]
    assert draft.content == "Thought: I need to add"
    panel.add(Usage(10, 5, 0.2))
    panel.add(Thought("I need to add"))
    assert titles(panel) == ["✎ Thought"] and texts(panel) == ["I need to add"]
    assert not panel.streaming


def test_action_and_observation_show_tool_input_duration():
    panel = Panel("act")
    panel.add(Action("calculate", {"expression": "2+2"}))
    assert titles(panel)[0] == "⚙ Action 1: calculate"
    assert '"expression": "2+2"' in texts(panel)[0]
    pending = panel.value()[1]
    assert pending.metadata["status"] == "pending" and "running" in pending.metadata["title"]
    panel.add(Observation("calculate", "4", elapsed_s=0.25, cached=True))
    obs = panel.value()[1]
    assert obs.metadata["title"] == "↳ Observation 1 · calculate"
    assert obs.metadata["duration"] == 0.25 and obs.metadata["log"] == "cached"
    assert "status" not in obs.metadata  # short result: open
    assert obs.content == "```text\n4\n```"


def test_long_or_failed_observation_is_collapsed_and_flagged():
    panel = Panel("react")
    panel.add(Action("search", "x"))
    panel.add(Observation("search", "y" * 1000, is_error=True, elapsed_s=1.5))
    obs = panel.value()[1]
    assert obs.metadata["status"] == "done" and obs.metadata["log"] == "error"
    assert obs.metadata["title"].startswith("✗ Observation 1")


def test_tool_output_html_is_fenced_not_rendered():
    panel = Panel("react")
    panel.add(Action("search", "x"))
    panel.add(Observation("search", XSS))
    content = panel.value()[1].content
    assert content.startswith("```text\n") and XSS in content.replace(safe_text.ZWSP, "")  # in a code block: shown
    assert "<img" not in content and "<script" not in content  # ... and never a tag, wherever Gradio pastes it


def test_parse_error_shows_the_corrective_reprompt():
    panel = Panel("react")
    panel.add(TokenDelta("I think so", "thought"))
    panel.add(Usage(1, 1, 0.1))
    panel.add(ParseError("Invalid format: write 'Action:' or 'Final Answer:'.", "I think so"))
    [msg] = panel.value()
    assert "corrective re-prompt" in msg.metadata["title"]
    assert "I think so" in msg.content and "Invalid format" in msg.content


def test_llm_error_keeps_the_partial_reply_and_is_prominent():
    panel = Panel("think")
    panel.add(TokenDelta("Partial <b>text</b>", "thought"))
    panel.add(LLMError("the server closed the connection mid-reply after 4 tokens", "incomplete"))
    partial, error = panel.value()
    assert "Incomplete reply" in partial.metadata["title"] and partial.metadata["status"] == "done"
    assert "&lt;b>" in partial.content
    assert "Model error" in error.content and "mid-reply after 4 tokens" in error.content and not error.metadata


def test_final_answer_is_set_apart_escaped_and_flags_forced():
    panel = Panel("react")
    panel.add(FinalAnswer(XSS, forced=True))
    [msg] = panel.value()
    assert not msg.metadata.get("title")  # a plain message, not a collapsible box
    assert msg.content.startswith("**✔ Final answer**") and "forced" in msg.content
    assert "<img" not in msg.content and "<script" not in msg.content


def test_reasoning_channel_gets_its_own_box():
    panel = Panel("react")
    panel.add(TokenDelta("hmm", "reasoning"))
    panel.add(TokenDelta("Final Answer: 4", "answer"))
    reasoning, draft = panel.value()
    assert "Hidden reasoning" in reasoning.metadata["title"] and reasoning.metadata["status"] == "pending"
    assert "answer" in draft.metadata["title"]
    panel.add(Usage(1, 1, 0.4))
    assert reasoning.metadata["status"] == "done" and reasoning.metadata["duration"] == 0.4


def test_finish_closes_spinners_and_notes_a_stop():
    panel = Panel("react")
    panel.add(Action("calculate", "1+1"))
    panel.add(TokenDelta("more", "thought"))
    panel.finish(stopped=True)
    assert all(m.metadata.get("status") != "pending" for m in panel.value())
    assert "Stopped" in texts(panel)[-1]
    done = Panel("think")
    done.add(FinalAnswer("4"))
    done.finish()
    assert len(done.value()) == 1


def test_not_run_panel_says_so():
    [msg] = render.not_run("think", "Act")
    assert "Think-only was not run" in msg.content


# -- metrics and comparison --------------------------------------------------------------------


def test_metrics_line_has_all_numbers_and_flags():
    trace = react_trace()
    trace.add(ParseError("fix it"), 1.0)
    trace.add(FinalAnswer("4", forced=True), 1.1)
    trace.add(Usage(5, 5, 0.1, estimated=True), 1.2)
    line = metrics_markdown(trace)
    for part in ("1 step", "3 LLM calls", "1 tool call", "in /", "out", "1.2 s", "forced answer", "1 format retry"):
        assert part in line, part
    assert "\\~35 in" in line  # estimated tokens keep their ~, escaped so Markdown does not strike through
    assert metrics_markdown(trace, running=True).startswith("● ")
    assert metrics_markdown(None) == "_not run_"


@pytest.mark.parametrize(("a", "b", "same"), [
    ("396", "The calculator says 396.", True),
    ("Paris", "The capital is Paris", True),
    ("Paris", "Lyon", False),
    ("1,234", "1234", True),
    ("roughly 17 * 23 + 5", "396", False),
    ("", "x", False),
    (None, "x", False),
])
def test_answers_agree(a, b, same):
    assert answers_agree(a, b) is same


def test_comparison_table_and_agreement():
    traces = {"think": react_trace(answer="400", mode="think"), "act": react_trace(mode="act"),
              "react": react_trace(answer="The answer is 4 | <b>sure</b>")}
    table = comparison_markdown(traces)
    assert table.count("\n| **") == 3
    assert "| **Think-only** | 400 | 1 | 1 | 30\u00a0/\u00a09 | 0.7\u00a0s | — |" in table  # numbers never wrap
    assert "\\|" in table and "&lt;b>" in table
    assert "Think-only differs; Act-only and ReAct agree" in table
    same = {m: react_trace(mode=m) for m in ("think", "act", "react")}
    assert "All answers agree" in agreement(same)
    differ = {"think": react_trace(answer="1"), "act": react_trace(answer="2"), "react": react_trace(answer="3")}
    assert "all differ" in agreement(differ)
    assert "nothing to compare" in agreement({"act": react_trace()})


# -- examples ----------------------------------------------------------------------------------


def test_examples_cover_every_category():
    assert len(EXAMPLES) >= 12
    assert {e.category for e in EXAMPLES} == {c.id for c in CATEGORIES}
    assert all(len(items) >= 2 for _, items in by_category())
    assert len({e.label for e in EXAMPLES}) == len(EXAMPLES)


# -- export and replay -------------------------------------------------------------------------


def test_export_round_trip_without_token(tmp_path):
    settings = LLMSettings(model="m", base_url="http://user:pw@127.0.0.1:9/v1", token="hf_SECRET_TOKEN_123")
    traces = {m: react_trace(mode=m) for m in ("think", "act", "react")}
    data = export_dict("What is 2+2?", "All", traces,
                       settings_block(settings, RunRequest("What is 2+2?", MODES), ["calculate"]))
    json_path, md_path = write_exports(data, tmp_path)
    raw_json, raw_md = (open(p, encoding="utf-8").read() for p in (json_path, md_path))
    assert "hf_SECRET" not in raw_json + raw_md and "pw@" not in raw_json + raw_md
    assert json.loads(raw_json)["settings"] == {"model": "m", "backend": "m at http://127.0.0.1:9/v1", "provider": None,
                                                "protocol": "text", "max_steps": 5, "temperature": 0.2,
                                                "tools": ["calculate"]}
    rec = read_recording(json_path)
    assert rec.question == "What is 2+2?" and rec.selection == "All"
    for mode, trace in traces.items():
        assert rec.traces[mode].events == trace.events
    md = export_markdown(data)
    assert "# Think · Act · ReAct" in md and "**Question:** What is 2+2?" in md and "### ReAct" in md


def test_read_recording_accepts_a_bare_trace_and_refuses_junk(tmp_path):
    bare = react_trace().to_json()
    rec = read_recording(bare)
    assert list(rec.traces) == ["react"] and rec.selection == "ReAct"
    bad_event = '{"traces": [{"mode": "react", "events": [{"kind": "nope"}]}]}'
    for junk, why in (("{", "does not read"), ("{}", "No traces"), (bad_event, "could not be read")):
        with pytest.raises(RecordingError, match=why):
            read_recording(junk)
    with pytest.raises(RecordingError):
        read_recording(str(tmp_path / "missing.json"))


def test_schedule_merges_traces_by_offset():
    a, b = Trace("think"), Trace("act")
    a.add(Thought("a0"), 0.0)
    a.add(FinalAnswer("a1"), 0.5)
    b.add(Thought("b0"), 0.2)
    order = [(m, e.text) for _, m, e in schedule({"think": a, "act": b})]
    assert order == [("think", "a0"), ("act", "b0"), ("think", "a1")]


def test_replay_plays_back_with_pacing():
    rec = read_recording(json.dumps({"question": "q", "traces": {"react": react_trace().to_dict()}}))
    start = time.perf_counter()
    frames = collect_now(play(rec, 4.0))
    took = time.perf_counter() - start
    assert 0.7 / 4 <= took < 0.7  # events span 0.7 s; 4× faster
    assert frames[0].question == "q"
    last = frames[-1]
    assert "Final answer" in content(last.panels[2][-1]) and "not run" in content(last.panels[0][0])
    assert "ReAct" in last.table and last.metrics[2].startswith("1 step")
    instant = collect_now(play(rec, "instant"))
    assert len(instant) == 2 and content(instant[-1].panels[2][-1]) == content(last.panels[2][-1])


# -- live runs (no HTTP: a fake model) ---------------------------------------------------------


class FakeModel:
    """Answers '4' in every mode, except Think-only, which fails (or whatever ``fail`` says)."""

    model_id = "fake"
    calls: list[str] = []

    def __init__(self, settings: LLMSettings, fail: str = "careful reasoner") -> None:
        self.fail = fail

    def stream(self, messages, **kw) -> Iterator[Chunk]:
        system = messages[0]["content"]
        FakeModel.calls.append(system[:20])
        if self.fail and self.fail in system:
            raise LLMFailure("the model server answered HTTP 500")
        yield Chunk(text="Thought: easy\nFinal Answer: 4")
        yield Chunk(prompt_tokens=3, completion_tokens=2)

    def close(self) -> None:
        pass


def test_live_run_error_stays_in_its_panel(registry):
    settings = LLMSettings(model="fake", base_url="http://127.0.0.1:9/v1")
    frames = collect_now(live_run(RunRequest("What is 2+2?", MODES, selection="All"), settings, registry,
                                      Serving(FakeModel, export=False)))
    think, act, react = frames[-1].panels[:3]
    assert "Model error" in content(think[-1]) and "HTTP 500" in content(think[-1])
    assert "Final answer" in content(act[-1]) and "Final answer" in content(react[-1])
    assert "Done" in frames[-1].status and "Agrees with" in frames[-1].table


def test_live_run_refuses_without_calling_the_model(registry):
    FakeModel.calls.clear()
    frames = collect_now(live_run(RunRequest("What is 2+2?", MODES, selection="All"), LLMSettings(), registry,
                                      Serving(FakeModel)))
    assert len(frames) == 1 and NOT_CONFIGURED[:30] in frames[0].status
    assert "No model is configured" in content(frames[0].panels[1][0])
    assert FakeModel.calls == []


def test_make_config_clamps_api_values():
    cfg = make_config("bogus", 99, "hot")
    assert (cfg.protocol, cfg.max_steps, cfg.temperature) == ("text", 10, 0.2)
    assert make_config("tools", 0, -1).max_steps == 1
    assert cfg.max_tokens is None  # left out: the model's default, LLM_MAX_TOKENS
    assert [make_config("text", 5, 0.2, v).max_tokens for v in (256, 1e9, 0, "lots", float("nan"), float("inf"))] == [
        256, 32768, 1, None, None, None]


def test_a_recording_with_a_hybrid_replays_into_its_own_panel(tmp_path):
    import asyncio

    from ui.core.frame import output_index
    from ui.recordings.playback import beside_of, final_frame, modes_on_screen

    traces = {m: react_trace(mode=m) for m in ("react", "react_cot_sc")}
    settings = settings_block(LLMSettings(model="m"), RunRequest("q", ("react",)), [])
    json_path, _ = write_exports(export_dict("q", "ReAct", traces, settings), tmp_path)
    rec = read_recording(json_path)
    assert list(rec.traces) == ["react", "react_cot_sc"] and beside_of(rec) is None
    assert modes_on_screen(rec) == ["react", "react_cot_sc"]
    frame, beside = asyncio.run(final_frame(rec, "Shown"))
    values = frame.values()
    assert beside is None and "Final answer" in str(values[output_index("react_cot_sc")])
    assert values[output_index("beside")] == []
    assert beside_of(read_recording(react_trace().to_json())) is None


def test_waiting_retry_and_token_limit_are_shown():
    from agents.events import Retry, Truncated, Usage, Waiting

    panel = Panel("act")
    panel.add(Waiting())
    assert "Waiting for the model server" in panel.value()[0].metadata["title"]
    panel.add(TokenDelta("Thought: hm", "thought"))  # the call got its turn: the notice goes
    assert [m.metadata.get("title", "") for m in panel.value()][0].startswith("✍ Writing")
    panel.add(Usage(10, 3, 0.1, estimated=True))
    panel.add(LLMError("the server closed this reply when another request arrived", "interrupted"))
    panel.add(Retry("running it again"))
    panel.add(Usage(10, 3, 0.1))
    panel.add(Truncated("the reply hit the token limit of 9 tokens and may be cut short"))
    titles = [m.metadata.get("title", "") for m in panel.value()]
    assert titles[0].startswith("⚠ Incomplete reply") and "Running this mode again" in titles[2]
    assert titles[1] == "✗ That attempt failed" and not panel.value()[1].content.startswith("⚠")  # history now
    assert "hit the token limit" in titles[3] and "Max tokens" in panel.value()[3].content
    panel.finish()
    assert not any("Waiting" in t for t in titles)


def test_a_wait_for_the_servers_turn_is_a_spinner_and_a_closed_reply_is_asked_for_again():
    from agents.events import Waited, Waiting

    panel = Panel("react")
    panel.add(TokenDelta("Thought: half a repl", "thought"))  # the server closed this reply
    panel.add(Waiting("the model server closed this reply when another request arrived: it serves one request at a "
                      "time, so the app now sends it one at a time, and asks for this reply again in its turn",
                      "turn", learned=True))
    [shown] = panel.value()
    assert shown.metadata == {"title": "⏳ Waiting for the model server · LLM call 1", "status": "pending"}
    assert "half a repl" not in shown.content and "Model error" not in shown.content
    panel.add(Waiting("waiting for the model server: retry 2 in 4.0 s (it answered HTTP 503)", "backoff",
                      seconds=4.0))
    assert len(panel.value()) == 1 and "retry 2 in 4.0 s" in panel.value()[0].content  # one wait, said anew
    panel.add(Waited(12.34, "turn"))
    assert panel.value()[0].metadata == {"title": "⏳ Waited 12.3 s for the model server's turn", "status": "done"}
    panel.add(Waiting("waiting for the model server: it serves one request at a time, 1 ahead of this one", "turn"))
    panel.add(Waited(0.5, "turn"))
    assert len(panel.value()) == 1  # an ordinary wait leaves nothing behind once over


def test_a_mode_waiting_to_run_again_shows_no_error_and_its_metrics_keep_running():
    from agents.events import Retry, Waited, Waiting
    from ui.core.frame import PanelsView

    view = PanelsView("q", "All", ("think", "act"))
    view.add("act", TokenDelta("Thought: cut off", "thought"))
    view.add("act", Waiting("the model server closed this mode's reply when another mode's request arrived: it runs "
                            "again once the other modes have finished", "turn", rerun=True, reason="interrupted"))
    texts = [str(m.content) for m in view.panels["act"].value()]
    assert not any("Model error" in t for t in texts) and not view.finished("act")
    assert view.metrics("act", running=True).startswith("●")
    assert [m.metadata.get("title") for m in view.panels["act"].value()] == [
        "⚠ Incomplete reply — cut off, not used as an answer", "⏳ Waiting to run again"]
    view.add("act", Waited(2.0, "turn"))
    view.add("act", Retry("running it again now that the other modes have finished"))
    assert not view.finished("act")


def test_a_panel_ends_with_one_warning_line_after_a_failed_retry():
    from agents.events import Retry

    panel = Panel("think")
    panel.add(LLMError("the server closed this reply when another request arrived", "interrupted"))
    panel.add(Retry("running it again"))
    panel.add(LLMError("the provider is unavailable (HTTP 503) after 3 tries"))
    panel.finish()
    warnings = [m.content for m in panel.value() if str(m.content).startswith("⚠")]
    assert warnings == ["⚠ **Model error:** the provider is unavailable (HTTP 503) after 3 tries"]


def test_a_codeact_program_shows_its_calls_under_it_and_its_output_after_them():
    from agents.events import Action, Observation

    panel = Panel("codeact")
    for event in [Thought("compute"), Action("python", "x = calculate('2+2')\nprint(x)", code=True),
                  Action("calculate", {"expression": "2+2"}, nested=True),
                  Observation("calculate", "4", nested=True), Observation("python", "4"),
                  Action("python", "final_answer('4')", code=True), Observation("python", "(final_answer was called.)"),
                  FinalAnswer("4")]:
        panel.add(event)
    titles = [m.metadata.get("title", "") for m in panel.value()]
    assert titles == ["✎ Thought", "⚙ Program 1", "⚙ Call 1.1: calculate", "↳ Result 1.1 · calculate",
                      "↳ Observation 1 · python", "⚙ Program 2", "↳ Observation 2 · python", ""]
    assert panel.value()[1].content.startswith("```python\nx = calculate")
    assert panel.value()[3].content == "```text\n4\n```" and panel.value()[4].content == "```text\n4\n```"


def test_reflexion_shows_each_trial_as_one_line_over_its_verdict_and_reflection():
    from agents.events import Evaluation, Reflection, Trial

    panel = Panel("reflexion")
    for event in [Trial(1, 3), TokenDelta("Thought: x"), Evaluation(False, "expected", "not the expected answer", "3"),
                  TokenDelta("It went wrong"), Reflection("Use the calculator next time."), Trial(2, 3),
                  Evaluation(True, "self", "the check said yes", "4"), FinalAnswer("4")]:
        panel.add(event)
    texts = [m.content for m in panel.value()]
    titles = [m.metadata.get("title", "") for m in panel.value()]
    parents = [m.metadata.get("parent_id") for m in panel.value()]
    assert titles[0] == "Trial 1 of 3 · ✗ · reflection: Use the calculator next time."
    assert titles[3] == "Trial 2 of 3 · ✓ · answer: 4"
    assert parents == [None, "trial-1", "trial-1", None, "trial-2", None]
    assert [m.metadata.get("status") for m in panel.value()][::3] == ["done", "done"]  # each trial collapsed to a line
    assert titles[1] == "⚖ Trial verdict (graded against the expected answer)" and texts[1].startswith("**✗ Wrong**")
    assert titles[2] == "💭 Reflection for the next trial" and "calculator" in texts[2]
    assert "the model's own judgement" in titles[4] and texts[4].startswith("**✓ Right**")
    assert texts[5].startswith("**✔ Final answer**") and not titles[5]  # the answer stays in view, under no trial
    assert not any("Writing" in t for t in titles)  # the check's and the reflection's drafts gave way


def test_a_codeact_program_waiting_for_the_sandbox_says_so_until_it_runs():
    from agents.events import SANDBOX, Action, Observation, Waited, Waiting

    panel = Panel("codeact")
    panel.add(Action("python", "print(42)", "Compute.", code=True))
    panel.add(Waiting("waiting for room in the Python sandbox: other runs' programs hold its memory", SANDBOX))
    titles = [m.metadata.get("title", "") for m in panel.value()]
    assert "⏳ Waiting for room in the Python sandbox" in titles and not any("model server" in t for t in titles)
    panel.add(Waited(2.5, SANDBOX))  # the sandbox got its room: the notice goes
    assert not any("Waiting" in m.metadata.get("title", "") for m in panel.value())
    panel.add(Observation("python", "42"))
    assert not any("Wait" in m.metadata.get("title", "") for m in panel.value())
