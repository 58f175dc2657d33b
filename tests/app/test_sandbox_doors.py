"""The sandbox's boundary attacked through the app's doors: ``/compare`` over REST with ReAct (whose
scripted action is ``python_repl``) beside CodeAct, and the MCP tool ``compare_reasoning_modes`` with
``modes: ["codeact"]``; the engine's doors are tests/tools/test_sandbox_boundary.py, the corpus
tests/tools/boundary_kit.py.

The app runs in its own process, started as in production (its own tools, its run workers) with canary secrets
in its environment (``HF_TOKEN``, ``SECRET_CANARY``), a canary file in its working folder, its own temp folder
(where the sandboxes' scratch folders and the default share store live) and ``APP_SANDBOX_FILTERS=off``, so the
programs meet the boundary alone. The local stub server plays the attacker. Each program proves it ran (marker,
listing) before it attacks; nothing of the app may come back, and nothing may be left behind. A share-like name
planted from inside the sandbox must never become a share link.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agents.llm.stub_server import StubLLMServer
from tests.gradio_rest import call
from tests.tools.boundary_kit import (
    ATTACKS,
    CANARY_HF_TOKEN,
    CANARY_SECRET,
    RAISE_SIGNAL,
    ROOT,
    Attack,
    Host,
    Scripted,
    assert_nothing_leaked,
    assert_ran_and_contained,
    chunks,
    listing,
    planted,
    program,
    results,
    world_readable_dir,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the app's run workers in /proc")

CANARIES = (CANARY_HF_TOKEN, CANARY_SECRET)
QUESTION = "What is 17 * 23 + 5?"
STATUS, EXPORTS = 6, 8  # /compare's outputs (ui/core/frame.Outputs.all)
LAUNCH = (
    "import sys\n"
    "import app\n"
    "from agents.llm.settings import LLMSettings\n"
    "demo = app.build_demo(settings=LLMSettings.from_env(), on_space=False)\n"  # the app's own tools: run workers
    "demo.launch(prevent_thread_lock=True, server_name='127.0.0.1', quiet=True, **app.launch_kwargs())\n"
    "print('URL', demo.local_url, flush=True)\n"
    "sys.stdin.read()\n"
    "demo.close()\n"
)


class App:
    """The app in its own process, against the module's stub server."""

    def __init__(self, stub: StubLLMServer, host: Host, tmp: Path) -> None:
        self.host, self.tmp = host, tmp
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LLM_", "HF_", "APP_", "BENCH_", "GRADIO_")) and k not in (
                   "TMPDIR", "SPACE_ID", "SECRET_CANARY")}
        env.update(PYTHONPATH=str(ROOT), LLM_BASE_URL=stub.url, LLM_MODEL="stub", HF_TOKEN=CANARY_HF_TOKEN,
                   SECRET_CANARY=CANARY_SECRET, APP_SANDBOX_FILTERS="off", TMPDIR=str(tmp),
                   GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH], env=env, cwd=host.app_dir,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("URL "), f"the app did not start: {line!r}"
        self.url = line.split()[1]

    def pids(self) -> tuple[int, ...]:
        """The app's process and its children (the run workers, where the sandboxes are started)."""
        kids = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == str(self.proc.pid):
                kids.append(int(entry))
        return (self.proc.pid, *kids)

    def program(self, attacks: list[Attack], mark: str) -> str:
        return program(attacks, self.host.targets(*self.pids()), mark)

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


SCRIPT = Scripted()


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    with planted() as h:
        yield h


@pytest.fixture(scope="module")
def app_tmp() -> Iterator[Path]:
    folder = world_readable_dir("boundary-app-tmp-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def app(host: Host, app_tmp: Path) -> Iterator[App]:
    with StubLLMServer(SCRIPT) as stub:
        launched = App(stub, host, app_tmp)
        try:
            yield launched
        finally:
            launched.close()


def compare(app: App, key: str, max_steps: int) -> tuple[list, str, dict]:
    """A ``/compare`` run of ReAct (tools: python_repl, calculate) and CodeAct (named by the older ``fourth``
    input), over raw REST: its outputs, their text, and its JSON export (read where the app wrote it)."""
    event, data = call(app.url, "compare", [f"{QUESTION} [{key}]", "ReAct", "stub", "text", max_steps, 0.2,
                                            ["python_repl", "calculate"], "CodeAct", None], timeout=120)
    assert event == "complete", data
    path = next(f["path"] for f in data[EXPORTS] if f["path"].endswith(".json"))
    export = json.loads(Path(path).read_text(encoding="utf-8"))
    return data, json.dumps(data, ensure_ascii=False), export


def observations(export: dict, mode: str) -> list[str]:
    """The observations of a mode's steps (a CodeAct program's, not those of the calls it made)."""
    return [e["output"] for e in export["traces"][mode]["events"] if e["kind"] == "observation" and not e.get("nested")]


def assert_nothing_left(tmp: Path, wait_s: float = 5.0) -> None:
    """No CodeAct scratch folder outlives its run (its session closes as the run ends, give it a moment);
    python_repl's only folders are its booted spares, empty."""
    deadline = time.monotonic() + wait_s
    while [p.name for p in tmp.glob("codeact-*")] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p.name for p in tmp.glob("codeact-*")]
    assert all(not any(p.iterdir()) for p in tmp.glob("repl-*"))


def marker(name: str) -> str:
    return f"ran-{name}-{secrets.token_hex(4)}"


# --- the corpus through /compare ----------------------------------------------------------------------------------


def test_compare_over_rest_contains_the_corpus_in_react_and_codeact(app: App, host: Host, app_tmp: Path) -> None:
    parts = chunks(ATTACKS)
    react_marks = [marker(f"react-{i}") for i in range(len(parts))]
    code_marks = [marker(f"codeact-{i}") for i in range(len(parts))]
    react_signal, code_signal, after = marker("react-signal"), marker("codeact-signal"), marker("codeact-after")
    key = SCRIPT.add("corpus", react=[
        *(lambda p=p, m=m: app.program(p, m) for p, m in zip(parts, react_marks, strict=True)),
        lambda: app.program([RAISE_SIGNAL], react_signal),
    ], codeact=[
        *(lambda p=p, m=m: app.program(p, m) for p, m in zip(parts, code_marks, strict=True)),
        lambda: app.program([RAISE_SIGNAL], code_signal),
        lambda: app.program([], after),
    ])
    data, text, export = compare(app, key, max_steps=len(parts) + 3)
    react, codeact = observations(export, "react"), observations(export, "codeact")
    assert len(react) == len(parts) + 1 and len(codeact) == len(parts) + 3, (react, codeact)
    for part, mark, seen in zip(parts, react_marks, react, strict=False):
        assert_ran_and_contained(seen, mark, part, fresh=True)  # python_repl: a fresh, empty folder each call
    assert listing(react[-1], react_signal) == [] and "The sandbox's runtime stopped the program" in react[-1]
    for part, mark, seen in zip(parts, code_marks, codeact, strict=False):
        assert_ran_and_contained(seen, mark, part, fresh=False)  # CodeAct: only what its own programs made
    assert "MARKER " + code_signal in codeact[len(parts)] and results(codeact[len(parts)]) == {}
    assert codeact[len(parts) + 1].startswith("(The sandbox was started afresh")
    assert listing(codeact[len(parts) + 1], after) == []
    everything = text + json.dumps(export, ensure_ascii=False)
    assert_nothing_leaked(everything, CANARIES, host.file_canary)
    host.assert_untouched(app_tmp)
    assert_nothing_left(app_tmp)


# --- the corpus through the MCP tool -----------------------------------------------------------------------------


def test_the_mcp_tool_with_codeact_contains_the_corpus(app: App, host: Host, app_tmp: Path) -> None:
    pytest.importorskip("mcp", reason="gradio[mcp] is not installed")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    parts = chunks(ATTACKS)
    marks = [marker(f"mcp-{i}") for i in range(len(parts))]
    assert len(parts) < 5  # the tool runs with the app's default 5 steps: the programs, then final_answer
    key = SCRIPT.add("mcp", codeact=[lambda p=p, m=m: app.program(p, m) for p, m in zip(parts, marks, strict=True)])

    async def work() -> object:
        async with streamable_http_client(app.url + "gradio_api/mcp/") as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("compare_reasoning_modes",
                                           {"question": f"{QUESTION} [{key}]", "modes": ["codeact"]})

    res = asyncio.run(asyncio.wait_for(work(), 90))
    assert not res.isError, res.content
    text = res.content[0].text
    run = json.loads(text)["modes"]["codeact"]
    assert run["answer"] == "done" and run["error"] is None and run["steps"] == len(parts) + 1
    trace = run["trace"]
    for part, mark in zip(parts, marks, strict=True):
        assert f"MARKER {mark}" in trace
        for attack in part:  # the trace is Markdown: each RESULT line is there, its outcome as the boundary gives it
            line = next(ln for ln in trace.splitlines() if ln.lstrip("> ").startswith(f"RESULT {attack.name} "))
            assert re.search(attack.outcome, line.split(f"RESULT {attack.name} ", 1)[1]), line
    assert "LISTING []" in trace or "LISTING \\[\\]" in trace
    assert_nothing_leaked(text, CANARIES, host.file_canary)
    host.assert_untouched(app_tmp)
    assert_nothing_left(app_tmp)


# --- a planted share-like name never becomes a link ---------------------------------------------------------------


def dependency(url: str, name: str) -> int:
    config = httpx.get(f"{url}config", timeout=30).json()
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == name)


def open_link(url: str, run_id: str) -> tuple[httpx.Response, list]:
    """Open ``/?run=<id>`` as a browser does: the page, then its load event (not queued: ``run/predict``)."""
    page = httpx.get(url, params={"run": run_id}, timeout=30)
    loaded = httpx.post(f"{url}gradio_api/run/predict", params={"run": run_id}, timeout=60,
                        json={"data": [], "fn_index": dependency(url, "open"), "session_hash": secrets.token_hex(6),
                              "event_data": None})
    assert loaded.status_code == 200, loaded.text
    return page, loaded.json()["data"]


def plant_attacks(ids: dict[str, str], store: Path) -> list[Attack]:
    """Share-like names planted in the scratch folder (a look-alike export and view, links to /proc, to the app's
    file and into the store), writes into the store, then a pause while the test looks at the host."""
    a, b, c, d = ids["file"], ids["environ"], ids["app-file"], ids["store"]
    up = "'../' * 16 + "
    view = json.dumps({"format": 1, "values": [], "question": "planted"})
    return [
        Attack("plant-export-and-view", f"open('{a}.json', 'w').write('{{\"question\": \"planted\"}}')\n"
                                        f"open('{a}.view', 'w').write({view!r})\nreturn sorted(os.listdir('/'))",
               rf"ran .*'{a}\.json'"),
        Attack("plant-link-to-environ", f"os.symlink({up}'proc/self/environ', '{b}.json')\n"
                                        f"return os.readlink('{b}.json')", r"ran '(\.\./)+proc/self/environ'"),
        Attack("plant-absolute-link", f"os.symlink('/proc/self/environ', '{b}.view')", r"PermissionError"),
        Attack("plant-link-to-app-file", f"os.symlink({up}T['app_file'].lstrip('/'), '{c}.json')\n"
                                         f"return open('{c}.json').read()", r"PermissionError"),
        Attack("plant-link-into-store", f"os.symlink('../{store.name}/{a}.json', '{d}.json')\n"
                                        f"return os.readlink('{d}.json')", rf"ran '\.\./{store.name}/{a}\.json'"),
        Attack("write-into-store-by-dotdot", f"open('../{store.name}/{a}.json', 'w').write('{{}}')",
               r"PermissionError"),
        Attack("write-into-store-by-path", f"open({str(store / (a + '.json'))!r}, 'w').write('{{}}')",
               r"FileNotFoundError"),
        Attack("a-store-of-its-own", f"os.makedirs('{store.name}')\nopen('{store.name}/{a}.json', 'w').write('{{}}')\n"
                                     f"return os.listdir('{store.name}')", rf"ran \['{a}\.json'\]"),
        Attack("pause", "import time\ntime.sleep(3)\nreturn len(os.listdir('/'))", r"ran \d+"),
    ]


def test_a_share_like_name_planted_in_the_sandbox_never_becomes_a_link(app: App, host: Host, app_tmp: Path) -> None:
    store = app_tmp / "think-act-react-shared"  # the default store: the app's temp folder, beside the scratch folders
    ids = {kind: secrets.token_urlsafe(16) for kind in ("file", "environ", "app-file", "store")}
    attacks = plant_attacks(ids, store)
    react_mark, code_mark = marker("plant-react"), marker("plant-codeact")
    key = SCRIPT.add("plant", react=[lambda: app.program(attacks, react_mark)],
                     codeact=[lambda: app.program(attacks, code_mark)])
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(run=compare(app, key, max_steps=3)))
    runner.start()
    wanted = {f"{rid}.json" for rid in ids.values()}
    seen: dict[str, bool] = {}  # "<scratch folder>/<name>" -> is a link: what the programs planted, seen from the host
    served: dict[str, httpx.Response] = {}  # ... and what the app's file route answers for it, while it is there
    deadline = time.monotonic() + 60
    while runner.is_alive() and time.monotonic() < deadline and len(seen) < 2 * len(wanted):
        for folder in app_tmp.iterdir():
            if not folder.name.startswith(("repl-", "codeact-")):
                continue
            try:
                names = set(os.listdir(folder)) & wanted
            except OSError:
                continue  # removed meanwhile
            for name in names - {k.split("/")[1] for k in seen if k.startswith(folder.name + "/")}:
                seen[f"{folder.name}/{name}"] = os.path.islink(folder / name)
                served[f"{folder.name}/{name}"] = httpx.get(f"{app.url}gradio_api/file={folder / name}", timeout=30)
        time.sleep(0.02)
    runner.join(120)
    assert "run" in outcome, "the /compare call did not finish"
    data, text, export = outcome["run"]

    # the programs ran and planted (a boundary that refused everything would fail here) ...
    for mode, mark in (("react", react_mark), ("codeact", code_mark)):
        assert_ran_and_contained(observations(export, mode)[0], mark, attacks, fresh=True)
    assert sorted(k.split("-")[0] for k in seen) == ["codeact"] * 4 + ["repl"] * 4, seen
    assert sorted(seen.values()) == [False] * 2 + [True] * 6  # per folder: the look-alike export, and three links
    # ... the app's file route serves none of it ...
    for name, response in served.items():
        assert response.status_code in (403, 404), (name, response.status_code)
        assert_nothing_leaked(response.text, CANARIES, host.file_canary)
    # ... no planted id opens a run ...
    for rid in ids.values():
        page, values = open_link(app.url, rid)
        assert page.status_code == 200
        assert "That shared run is unknown or has expired" in json.dumps(values), values[STATUS]
        assert_nothing_leaked(page.text + json.dumps(values), CANARIES, host.file_canary)
    # ... and the store, and the whole temp folder, hold no entry of that name.
    for rid in ids.values():
        assert not [p for p in app_tmp.rglob(f"*{rid}*")], rid
    assert not store.exists() or not [p.name for p in store.iterdir() if any(r in p.name for r in ids.values())]
    assert_nothing_leaked(text + json.dumps(export, ensure_ascii=False), CANARIES, host.file_canary)
    host.assert_untouched(app_tmp)
    assert_nothing_left(app_tmp)


# --- legitimate programs through /compare -----------------------------------------------------------------------


def test_legitimate_programs_run_through_compare_with_tool_calls_and_state(app: App) -> None:
    key = SCRIPT.add("legit", react=[
        "import math, statistics, json, re, datetime, collections, itertools\n"
        "print(17 * 23 + 5, math.factorial(5), statistics.mean([1, 2, 3, 4]), json.dumps({'a': [1, None]}),\n"
        "      re.findall(r'\\d+', 'a1b22'), datetime.date(2024, 2, 28) + datetime.timedelta(days=2),\n"
        "      collections.Counter('abca').most_common(1), list(itertools.accumulate([1, 2, 3])), 'Ab'.lower())",
    ], codeact=[
        "import math\nbase = calculate('17 * 23')\ntotal = int(base) + 5\nprint(base, total, math.isqrt(total))",
        "print(total * 2, [calculate(f'{total} - {i}') for i in range(2)])",
        "final_answer(total)",
    ])
    data, text, export = compare(app, key, max_steps=4)
    assert observations(export, "react") == ["396 120 2.5 {\"a\": [1, null]} ['1', '22'] 2024-03-01 [('a', 2)] "
                                             "[1, 3, 6] ab"]
    assert observations(export, "codeact") == ["391 396 19", "792 ['396', '395']", "(final_answer was called.)"]
    calls = [e["input"] for e in export["traces"]["codeact"]["events"] if e["kind"] == "action" and e.get("nested")]
    assert calls == [{"expression": "17 * 23"}, {"expression": "396 - 0"}, {"expression": "396 - 1"}]
    answers = {mode: next(e["text"] for e in reversed(export["traces"][mode]["events"]) if e["kind"] == "answer")
               for mode in ("react", "codeact")}
    assert answers == {"react": "done", "codeact": "396"}
