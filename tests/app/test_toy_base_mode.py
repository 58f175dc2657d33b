"""Another base mode needs no edit of ``ui/``: one module and one prompt in a copy of the repository give one more
Compare panel on screen by default, one more row of the table and one more trace in the export, through
``/compare`` against the stub model (the app's run workers included). The default three keep ``/compare``'s
contract (``tests/app/test_app_api.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.mode_copy import add_echo_mode, copy_env

# Runs in the copy: the app against the stub, one "All" run through /compare, what it shows and exports.
DRIVE_APP = '''
    import json
    import gradio as gr
    from gradio_client import Client
    import app
    from agents.llm.settings import LLMSettings
    from agents.llm.stub_server import StubLLMServer
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    def text(panel):
        return "\\n".join(str(m.get("content")) + str((m.get("metadata") or {}).get("title", "")) for m in panel)

    with StubLLMServer() as stub:
        demo = app.build_demo(settings=LLMSettings(model="stub", base_url=stub.url),
                              registry=ToolRegistry([calculate]))
        demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
        try:
            out = Client(demo.local_url, verbose=False).predict(question="What is 17 * 23 + 5?", mode="All",
                                                                api_name="/compare")
        finally:
            demo.close()
    picker = next(b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.elem_id == "modes")
    export = next(p for p in out[10] if p.endswith(".json"))
    print(json.dumps({"n": len(out), "panels": [text(p) for p in out[:4]], "metrics": out[4:8], "status": out[8],
                      "table": out[9], "traces": list(json.load(open(export))["traces"]),
                      "picker": [c[0] for c in picker.choices], "chosen": picker.value}))
'''


def test_another_base_mode_is_one_more_panel_row_and_trace(app_copy):
    repo = app_copy
    add_echo_mode(repo, "echo", "echo", '"Echo-only", echo, placement="base", label="Echo", prompt="echo", order=35',
                  "You are Echo, without any tools. Answer: Final Answer: <answer>")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(DRIVE_APP)], capture_output=True, text=True,
                          cwd=repo, env=copy_env(repo), timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])

    # four panels, four metrics lines, status, table, files, the panel beside and its metrics, then the four others'
    # panels and metrics, and last the step-aligned map
    assert shown["n"] == 4 + 4 + 3 + 2 + 4 + 4 + 1
    assert shown["picker"] == ["Think-only", "Act-only", "ReAct", "Echo-only", "ReAct → CoT-SC", "CoT-SC → ReAct",
                               "CodeAct", "Reflexion"]  # the panels' names
    assert shown["chosen"] == ["think", "act", "react", "echo"]  # on screen by default
    assert all("Final answer" in panel for panel in shown["panels"]), shown["panels"]
    assert "396" in shown["panels"][1] and "396" in shown["panels"][2]
    assert all("LLM call" in line for line in shown["metrics"]) and "Done" in shown["status"]
    rows = [line for line in shown["table"].splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 4 and "Echo-only" in shown["table"]
    assert shown["traces"] == ["think", "act", "react", "echo"]
