"""Makes this folder's record with the code of commit 6f77a43, the last before the step-aligned map (issue 51): run
there, from a checkout of that commit with ``tests/app/map_kit.py`` copied in (its tool without ``verb=``, which
that code did not know), as ``python make_records.py <this folder>``. Kept so the record can be made again;
tests/ui/recordings/test_step_map_replay.py and tests/app/test_browser_step_map.py replay it with today's code.

- ``run-three-modes.json``: an export (run@1) of Think-only, Act-only and ReAct on map_kit's scripted question,
  with an expected answer: no ``grounding`` block, no map.
"""

import json
import shutil
import sys
from pathlib import Path

from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tests.app.map_kit import QUESTION, map_registry, script
from tests.frames import collect_now, compare_outputs
from ui.compare.handlers import CompareTab


def main(folder: str) -> None:
    with StubLLMServer(script, latency=0.05, token_delay=0.002) as stub:
        tab = CompareTab(LLMSettings(model="stub", base_url=stub.url), map_registry(), compare_outputs())
        last = collect_now(tab.compare(question=QUESTION, mode=["think", "act", "react"], expected="1,083 ft"))[-1]
    path = next(f["path"] for f in last[8] if f["path"].endswith(".json"))
    assert "grounding" not in json.loads(Path(path).read_text(encoding="utf-8"))
    shutil.copy(path, Path(folder) / "run-three-modes.json")


if __name__ == "__main__":
    main(sys.argv[1])
