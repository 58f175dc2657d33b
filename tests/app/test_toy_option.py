"""A new run option costs one mode module: in a copy of the repository, a toy mode declares a ``RunOption`` in its
spec, and with no other edit the option is a slider on the page, a named ``/compare`` input that reaches the mode,
a key of the export's settings, and a value ``/replay`` puts back, against the stub model (run workers included)."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.mode_copy import copy_env

ROOT = Path(__file__).resolve().parents[2]

MODE = '''
    """Echo with a count: one call; the answer says how many echoes the visitor asked for. A toy mode for a test."""

    from agents import prompts
    from agents.events import FinalAnswer, Thought
    from agents.modes.base import complete
    from agents.modes.registry import ModeSpec, RunOption, register


    def echo(question, model, registry, config, echoes=1):
        messages = [{"role": "system", "content": prompts.system_prompt("echo", registry)},
                    {"role": "user", "content": prompts.question_message(question)}]
        reply = yield from complete(model, messages, config)
        if reply is not None:
            yield Thought(f"asked for {echoes} echoes")
            yield FinalAnswer(" ".join([reply.text.strip()] * echoes))


    register(ModeSpec("echo", "Echo", echo, placement="more", prompt="echo", order=60,
                      run_options=(RunOption("echoes", "Echoes", 1, 4, 1, "How often Echo repeats"),)))
'''

# Runs in the copy: the page's slider, one /compare call that sets the option, its export, and its replay.
DRIVE_APP = '''
    import json
    import gradio as gr
    from gradio_client import Client, handle_file
    import app
    from agents.llm.settings import LLMSettings
    from agents.llm.stub_server import StubLLMServer
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    with StubLLMServer() as stub:
        demo = app.build_demo(settings=LLMSettings(model="stub", base_url=stub.url),
                              registry=ToolRegistry([calculate]))
        demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
        try:
            client = Client(demo.local_url, verbose=False)
            out = client.predict(question="What is 17 * 23 + 5?", mode="Think", fourth="Echo", echoes=3,
                                 api_name="/compare")
            export = next(p for p in out[8] if p.endswith(".json"))  # 3 panels, 3 metrics, status, table, files
            replayed = client.predict(handle_file(export), "instant", api_name="/replay")
            refused = client.predict(question="q?", mode="Think", fourth="Echo", echoes=9, api_name="/compare")
        finally:
            demo.close()
    slider = next(b for b in demo.blocks.values() if isinstance(b, gr.Slider) and b.label == "Echoes")
    echo = "\\n".join(str(m.get("content")) + str((m.get("metadata") or {}).get("title", "")) for m in out[9])
    print(json.dumps({"slider": [slider.minimum, slider.maximum, slider.value], "echo": echo,
                      "options": json.load(open(export))["settings"].get("options"),
                      "replayed": replayed[-4:-1], "refused": refused[6]}))
'''


def test_a_toy_option_reaches_the_mode_the_export_and_the_replay_from_one_module(app_copy):
    repo = app_copy
    (repo / "agents" / "modes" / "echo.py").write_text(textwrap.dedent(MODE), encoding="utf-8")
    (repo / "prompts" / "echo.md").write_text("You are Echo. Answer: Final Answer: <answer>", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(DRIVE_APP)], capture_output=True, text=True,
                          cwd=repo, env=copy_env(repo), timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])

    assert changed_files(repo) == ["agents/modes/echo.py", "prompts/echo.md"]  # the whole cost of the option
    assert shown["slider"] == [1, 4, 1]
    assert "asked for 3 echoes" in shown["echo"] and "Final answer" in shown["echo"]
    assert shown["options"] == {"trials": 3, "echoes": 3}  # Reflexion's default, and the toy option as sent
    assert shown["replayed"] == [3, 3, ["think", "echo"]]  # the replay puts both back on the page, the picker, the map
    assert "Echoes must be a whole number from 1 to 4 (got 9)" in shown["refused"]


def changed_files(repo: Path) -> list[str]:
    """Files of the copy that differ from, or are missing in, the repository it was copied from."""
    found = []
    for path in sorted(repo.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(repo)
            original = ROOT / rel
            if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                found.append(rel.as_posix())
    return found
