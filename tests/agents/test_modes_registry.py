"""The mode registry: one table of modes that the CLI, the app, the benchmark and the reports all read.

The toy-mode test checks the registry's promise: a mode added as ONE module (+ its prompt
file) in a copy of the repository shows up in ``python -m agents ask --mode``, runs there over
the real client against the local stub server, and appears in the Compare tab's mode picker,
the Prompts view and the Benchmark tab, with no other edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents import prompts
from agents.evaluation.report import PAPER_TABLE1, summarise, summary_table
from agents.events import FinalAnswer
from agents.llm.scripted import ScriptedModel
from agents.llm.stub_server import StubLLMServer, StubReply
from agents.modes import RunConfig
from agents.modes.registry import (
    ModeSpec,
    get_mode,
    list_modes,
    mode_ids,
    mode_title,
    panel_ids,
    register,
    run_mode,
    table_title,
)
from tests.mode_copy import add_echo_mode, copy_env
from tools.registry import ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ToolRegistry([])


@tool
def calculate(expression: str) -> str:
    """Evaluate arithmetic."""
    return expression


def _noop(question, model, registry, config):
    yield FinalAnswer("ok")


def test_the_paper_modes_are_registered_in_order_with_their_names():
    assert mode_ids("base") == ("think", "act", "react")
    assert mode_ids() == ("think", "act", "react", "react_cot_sc", "cot_sc_react", "codeact", "reflexion", "cot_sc",
                          "react_worked", "react_placebo")
    assert panel_ids() == ("think", "act", "react", "react_cot_sc", "cot_sc_react", "codeact", "reflexion")
    assert [s.label for s in list_modes("base")] == ["Think", "Act", "ReAct"]
    assert [mode_title(m) for m in mode_ids()] == ["Think-only", "Act-only", "ReAct", "ReAct → CoT-SC",
                                                    "CoT-SC → ReAct", "CodeAct", "Reflexion", "CoT-SC",
                                                    "ReAct (worked example)", "ReAct (placebo example)"]
    assert table_title("think") == "Think-only (CoT)" and table_title("act") == "Act-only"
    assert mode_title("telepathy") == "telepathy" == table_title("telepathy")  # e.g. an old recording's mode
    assert [s.prompt for s in list_modes() if s.prompt] == ["think", "act", "react", "codeact", "react",
                                                            "react_worked", "react_placebo"]
    assert not get_mode("think").uses_tools and get_mode("react").uses_tools


def test_paper_rows_map_to_modes_through_the_specs():
    rows = {r.method: r.mode for r in PAPER_TABLE1}
    assert rows == {"Standard": None, "CoT": "think", "CoT-SC": "cot_sc", "Act": "act", "ReAct": "react",
                    "CoT-SC → ReAct": "cot_sc_react", "ReAct → CoT-SC": "react_cot_sc"}
    summary = summarise([{"id": "1", "mode": "think", "em": 1.0, "f1": 1.0}], ["think"], "hotpotqa")
    assert summary_table(summary)[1][0][0] == "Think-only (CoT)"


def test_unknown_mode_is_a_clear_error_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown mode 'tot'; expected one of think, act, react, react_cot_sc"):
        get_mode("tot")
    with pytest.raises(ValueError, match="unknown mode 'tot'"):
        run_mode("tot", "q", ScriptedModel([]), REGISTRY, RunConfig())


def test_run_mode_passes_only_the_options_a_mode_names():
    model = ScriptedModel(["Final Answer: 5"])
    events = list(run_mode("think", "q", model, REGISTRY, RunConfig(), sc_n=3, vote_key=str.lower, other=1))
    assert events[-1] == FinalAnswer("5") and model.unused == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"id": "All"}, "lower-case"), ({"id": "all"}, "not all or none"), ({"id": "two words"}, "lower-case"),
    ({"placement": "hybrid"}, "placement 'hybrid'"), ({"label": "None"}, "cannot be all or none"),
])
def test_specs_are_checked_when_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModeSpec(**{"id": "x", "title": "X", "run": _noop, **kwargs})


def test_a_spec_fills_its_label_and_table_title_from_the_title():
    spec = ModeSpec("x", "Some mode", _noop)
    assert (spec.label, spec.table_title, spec.placement, spec.prompt, spec.options) == ("Some mode", "Some mode",
                                                                                    "more", None, ())


def test_an_id_taken_by_another_module_is_refused():
    with pytest.raises(ValueError, match="'react' is registered twice"):
        register(ModeSpec("react", "Mine", _noop))
    assert get_mode("react").title == "ReAct"


def test_a_mode_names_its_prompt_and_the_native_variant_is_found_by_file():
    reg = ToolRegistry([calculate])
    assert prompts.template_for("act", "tools") == "act_tools" and prompts.template_for("think", "tools") == "think"
    assert prompts.system_prompt("think", reg, protocol="tools") == prompts.system_prompt("think", reg)
    with pytest.raises(ValueError, match="unknown prompt 'tot'"):
        prompts.system_prompt("tot", reg)
    for spec in list_modes():
        if spec.prompt:
            shown = prompts.render_prompt(spec.prompt, reg, protocol="tools", uses_tools=spec.uses_tools)
            assert ("[tools" in shown) == spec.uses_tools and shown.endswith("[user]\nQuestion: <question>")


# Builds the app's Blocks and prints what the Compare, Prompts and Benchmark tabs offer.
INSPECT_APP = '''
    import json
    import gradio as gr
    import app
    from agents.llm.settings import LLMSettings
    from tools import default_registry

    demo = app.build_demo(settings=LLMSettings(), registry=default_registry())
    blocks = list(demo.blocks.values())
    picker = next(b for b in blocks if isinstance(b, gr.Dropdown) and b.elem_id == "modes")
    columns = [b.elem_id for b in blocks if isinstance(b, gr.Column) and "panel-col" in (b.elem_classes or [])]
    bench = next(b for b in blocks if isinstance(b, gr.CheckboxGroup) and b.label == "Modes")
    codes = [b.label for b in blocks if isinstance(b, gr.Code) and "prompt-code" in (b.elem_classes or [])]
    show = next(f for f in demo.fns.values() if f.api_name == "prompts").fn
    rendered = show("text", 5, None)
    from ui.recordings.reader import REPLAY_MODES
    from ui.core.modes import chosen_modes
    print(json.dumps({"picker": [list(c) for c in picker.choices], "columns": columns,
                      "bench": [list(c) for c in bench.choices], "codes": codes, "rendered": list(rendered),
                      "chosen": chosen_modes(["Echo", "react"]), "replayable": list(REPLAY_MODES)}))
'''


def test_a_toy_mode_in_one_module_appears_everywhere(app_copy):
    repo = app_copy
    add_echo_mode(repo, "_toy_test", "toy",
                  '"Toy echo", echo, label="Echo", table_title="Toy echo (test)", prompt="toy"',
                  "You are Echo. Repeat the question. Tools you will not use: $tool_names")
    env = copy_env(repo)

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=repo,
                              env={**env, **extra}, timeout=180)
        assert done.returncode == 0, done.stderr
        return done

    usage = run("-m", "agents", "ask", "--help").stdout
    listed = "".join(usage.split())  # argparse wraps the help: the mode ids, in the registry's order, the new one too
    assert "think,act,react,react_cot_sc(ReAct→CoT-SC),cot_sc_react(CoT-SC→ReAct),codeact(CodeAct)," in listed
    assert ("reflexion(Reflexion),toy(Toyecho),cot_sc(CoT-SC),react_worked(ReAct(workedexample)),"
            "react_placebo(ReAct(placeboexample))") in listed
    assert "toy" in run("-m", "agents", "eval", "--help").stdout

    with StubLLMServer() as server:
        server.script(StubReply("Echo: what is echo?"))
        out = run("-m", "agents", "ask", "what is echo?", "--mode", "toy", "--json",
                  LLM_BASE_URL=server.url, LLM_MODEL="stub").stdout
        system = server.requests[0].body["messages"][0]["content"]
    data = json.loads(out)
    assert list(data["runs"]) == ["toy"] and data["runs"]["toy"]["answer"] == "Echo: what is echo?"
    assert system.startswith("You are Echo.") and "calculate" in system

    shown = json.loads(run("-c", textwrap.dedent(INSPECT_APP)).stdout)
    assert shown["picker"] == [["Think-only", "think"], ["Act-only", "act"], ["ReAct", "react"],
                               ["ReAct → CoT-SC", "react_cot_sc"], ["CoT-SC → ReAct", "cot_sc_react"],
                               ["CodeAct", "codeact"], ["Reflexion", "reflexion"], ["Toy echo", "toy"]]
    assert shown["columns"][-2:] == ["col-toy", "col-beside"]  # a panel of its own, before the panel beside
    assert shown["chosen"] == ["react", "toy"] and "toy" in shown["replayable"]
    assert ["Toy echo (test)", "toy"] in shown["bench"] and len(shown["bench"]) == 11
    assert shown["codes"] == ["Think-only", "Act-only", "ReAct", "CodeAct", "Reflexion", "Toy echo",
                              "ReAct (worked example)", "ReAct (placebo example)"]  # the benchmark's after the panels'
    assert shown["rendered"][5].startswith("[system]\nYou are Echo.")


# Blocks agents.evaluation, imports every module of agents/ except the benchmark-facing ones, and runs a
# base mode and a hybrid through the comparison (which must not need the benchmark package to dispatch).
IMPORT_ALL = '''
    import importlib, pkgutil, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name == "agents.evaluation" or name.startswith("agents.evaluation."):
                raise ImportError(f"{name} is blocked: the core must not depend on the benchmark")
            return None

    sys.meta_path.insert(0, Blocked())
    import agents
    # the benchmark package and its CLI (agents/evaluate.py, or an eval module of an agents/cli/ package)
    BENCHMARK_FACING = ("agents.evaluation", "agents.evaluate", "agents.cli.eval")
    names = [m.name for m in pkgutil.walk_packages(agents.__path__, "agents.")
             if not m.name.startswith(BENCHMARK_FACING) and not m.name.endswith(".__main__")]  # entry points run
    for name in names:
        importlib.import_module(name)
    from agents.comparison import compare
    from agents.llm.scripted import ScriptedModel

    traces = compare("2+2?", ["think", "react_cot_sc"], model_factory=lambda: ScriptedModel(["Final Answer: 4"]))
    assert {m: t.answer for m, t in traces.items()} == {"think": "4", "react_cot_sc": "4"}, traces
    from agents.modes.registry import mode_ids
    print(len(names), ",".join(mode_ids()))
'''


def test_every_core_module_imports_without_the_benchmark_package():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(IMPORT_ALL)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    count, modes = done.stdout.split()
    assert int(count) > 20 and modes == ("think,act,react,react_cot_sc,cot_sc_react,codeact,"
                                        "reflexion,cot_sc,react_worked,react_placebo")
