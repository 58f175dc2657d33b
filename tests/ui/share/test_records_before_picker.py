"""Records made before the mode picker open and replay after it: a share link (its stored view had the old
eleven outputs and a ``"hybrid"`` key) and ``run@1`` exports, one with CodeAct in the panel then called the fourth,
one with a fork continued in a new panel (``"panel": "fourth"``). They were made by the code of that time
(``tests/data/before_picker/make_records.py``, commit e106cef) and are kept as files."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

from tests.frames import collect, compare_outputs
from ui.compare.handlers import OPTIONS, CompareTab
from ui.core.frame import output_index
from ui.core.modes import BESIDE, PANEL_MODES
from ui.fork.screen import load_screen
from ui.share.handlers import VIEW_FORMAT, ShareHandlers
from ui.share.store import ShareStore

RECORDS = Path(__file__).resolve().parents[2] / "data" / "before_picker"
STATUS, TABLE, FILES = 6, 7, 8


def text_of(panel) -> str:
    panel = panel.get("value", panel) if isinstance(panel, dict) and not panel.get("role") else panel
    return json.dumps(panel, ensure_ascii=False)


def test_a_share_link_made_before_the_picker_opens_with_codeact_in_its_own_panel(tmp_path):
    store_dir = tmp_path / "share"
    shutil.copytree(RECORDS / "share", store_dir)
    for path in store_dir.iterdir():  # a link lives 30 days from when it was stored: it was stored just now
        os.utime(path, (time.time(), time.time()))
    run_id = (RECORDS / "share-link-id.txt").read_text(encoding="utf-8").strip()
    old_view = json.loads((store_dir / f"{run_id}.view").read_text(encoding="utf-8"))
    assert old_view["hybrid"] == "CodeAct" and len(old_view["values"]) == 11  # as that code stored it

    handlers = ShareHandlers(compare_outputs(), ShareStore(store_dir, 10_000_000, 30 * 86400))
    values = asyncio.run(handlers.open(SimpleNamespace(query_params={"run": run_id})))
    question, expected, modes, beside = values[-4:]
    assert (question, expected, modes) == ("What is 17 * 23 + 5?", "396", ["think", "act", "react", "codeact"])
    assert beside.visible is False and "Shared run" in values[STATUS] and "**CodeAct**" in values[TABLE]
    codeact = text_of(values[output_index("codeact")])
    assert "Final answer" in codeact and "396" in codeact
    assert "roughly" in text_of(values[0]) and "396" in text_of(values[2])
    renewed = json.loads((store_dir / f"{run_id}.view").read_text(encoding="utf-8"))
    assert renewed["format"] == VIEW_FORMAT and "hybrid" not in renewed  # made again once, from the export
    assert asyncio.run(handlers.open(SimpleNamespace(query_params={"run": run_id})))[-4:-1] == [question, expected,
                                                                                                modes]


def replayed(name: str) -> list:
    tab = CompareTab(None, None, compare_outputs())  # type: ignore[arg-type]  # replay needs no backend
    return asyncio.run(collect(tab.play(str(RECORDS / name), "instant")))[-1]


def test_an_export_with_codeact_then_in_the_fourth_panel_replays_into_its_own(tmp_path):
    last = replayed("run-all-codeact.json")
    assert last[-2] == ["think", "act", "react", "codeact"] and last[-3 - len(OPTIONS)] == "What is 17 * 23 + 5?"
    codeact = text_of(last[output_index("codeact", files=False)])
    assert "Final answer" in codeact and "396" in codeact
    assert last[output_index(BESIDE, files=False)] == []  # nothing beside: CodeAct has its own panel
    assert all(last[output_index(m, files=False)] == [] for m in ("reflexion", "react_cot_sc"))  # not in the run
    assert CompareTab.reveal_beside(str(RECORDS / "run-all-codeact.json"))[0].visible is False


def test_an_export_with_a_fork_in_the_fourth_panel_replays_it_beside_and_forks_again():
    last = replayed("run-fork-new-panel.json")
    beside = text_of(last[output_index(BESIDE, files=False)])
    assert "edited by the teacher" in beside and "396" in text_of(last[output_index("react", files=False)])
    assert last[-2] == ["think", "act", "react"] and set(PANEL_MODES) >= set(last[-2])
    column, chat = CompareTab.reveal_beside(str(RECORDS / "run-fork-new-panel.json"))
    assert column.visible is True and chat.label == "ReAct (fork @1)"
    screen = load_screen(str(RECORDS / "run-fork-new-panel.json"))
    assert screen.fork == {"panel": BESIDE, "trace": "react@1"} and ("ReAct (fork @1)", "react@1") in screen.forkable()
