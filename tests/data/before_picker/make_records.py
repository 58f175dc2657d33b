"""Makes this folder's records with the code of commit e106cef, the last before the mode picker (issue 26):
run there, from a checkout of that commit, as ``python make_records.py <this folder>``. Kept so the records can be
made again; tests/ui/share/test_records_before_picker.py opens them with today's code.

- ``run-all-codeact.json``: an export (run@1) of "All" with CodeAct in the panel then called the fourth;
- ``run-fork-new-panel.json``: an export of a ReAct fork continued in a new panel (``"panel": "fourth"``);
- ``share/``: a share store holding a link to the first, with the view that code stored (its ``"hybrid"`` key).
"""

import asyncio
import json
import shutil
import sys
from pathlib import Path

import gradio as gr

import app
from agents.comparison import compare, default_model_factory
from agents.events import Observation
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import toy_policy
from agents.request import RunRequest
from agents.trace import Trace
from tools.calculator import calculate
from tools.registry import ToolRegistry
from ui.recordings.export import export_dict, settings_block
from ui.share.handlers import ShareHandlers
from ui.share.store import ShareStore

QUESTION = "What is 17 * 23 + 5?"


def main(folder: Path) -> None:
    registry = ToolRegistry([calculate])
    with StubLLMServer(toy_policy, models=("toy",)) as server:
        settings = LLMSettings(base_url=server.url, model="toy")
        modes = ("think", "act", "react", "codeact")
        traces = compare(QUESTION, modes, model_factory=default_model_factory(settings), registry=registry)
    block = settings_block(settings, RunRequest(QUESTION, modes), ["calculate"])
    block["backend"] = "the toy model (records made before the mode picker)"
    data = export_dict(QUESTION, "All", traces, block, expected="396")
    (folder / "run-all-codeact.json").write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")

    react = traces["react"]  # a fork of ReAct from its first observation, edited, shown in a new panel
    cut = next(i for i, (_, e) in enumerate(react.events) if isinstance(e, Observation))
    t, first = react.events[cut]
    fork = Trace("react@1", QUESTION)
    for at, event in [*react.events[:cut], (t, Observation(tool=first.tool, output="400 (edited by the teacher)")),
                      *react.events[cut + 1:]]:
        fork.add(event, at)
    fork_traces = {m: traces[m] for m in ("think", "act", "react")} | {"react@1": fork}
    fork_data = export_dict(QUESTION, "All", fork_traces, block, expected="396")
    fork_data["fork"] = {"panel": "fourth", "trace": "react@1"}
    (folder / "run-fork-new-panel.json").write_text(json.dumps(fork_data, ensure_ascii=False, indent=1),
                                                    encoding="utf-8")

    store_dir = folder / "share"
    shutil.rmtree(store_dir, ignore_errors=True)
    store = ShareStore(store_dir, 50 * 1024 * 1024, 10 * 365 * 86400)
    with gr.Blocks():
        page = app.compare_layout()
    handlers = ShareHandlers(page.outputs, store)
    source = folder / "run-all-codeact.json"
    admitted = store.admit(source, "198.51.100.1")
    view = asyncio.run(handlers.view_of(source))
    run_id = store.store(source, admitted, view)
    (folder / "share-link-id.txt").write_text(run_id + "\n", encoding="utf-8")
    print(run_id, json.loads(view)["hybrid"])


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
