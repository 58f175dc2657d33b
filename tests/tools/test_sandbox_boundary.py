"""The sandbox's boundary under attack through its engine doors: ``tools.call_tool('python_repl', …)``
in this process, and CodeAct through the CLI (``python -m agents ask --mode codeact``) against the stub server,
whose scripted replies are the attack programs. The app's doors (``/compare``, MCP) are tests/app/test_sandbox_doors.py.

With ``APP_SANDBOX_FILTERS=off`` the policy and the restricted builtins are skipped, so each attack meets the
boundary alone (CPython for WASI under Wasmtime): plain ``import os``, ``open``, sockets, processes, signals,
``/proc``, ``..`` walks, links, writes outside the scratch folder, a flood of files, and the ``functools.wraps``
gadget. Each program proves it ran (a marker and its listing of ``/``: only its own scratch folder), then every
attack must have the outcome the boundary gives it, and no canary secret, no byte of the app's files, no
connection, no signal and no file outside the scratch folder may come of it (tests/tools/boundary_kit.py).
With the filters on, the gadget must be refused by the policy; legitimate programs still run; resource attacks
end at their limits; and Stop ends a running program at once.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from agents.llm.stub_server import StubLLMServer
from tests.tools.boundary_kit import (
    ATTACKS,
    GADGETS,
    MADE,
    RAISE_SIGNAL,
    ROOT,
    Attack,
    Host,
    Scripted,
    assert_nothing_leaked,
    assert_ran_and_contained,
    listing,
    planted,
    program,
    results,
    world_readable_dir,
)
from tools import call_tool
from tools.calculator import calculate
from tools.registry import ToolRegistry
from tools.sandbox_session import SandboxSession

QUESTION = "What is 17 * 23 + 5?"


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    with planted() as h:
        yield h


@pytest.fixture
def filters_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The boundary alone: ``tools.sandbox.filters_enabled`` reads this at every call."""
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setenv("APP_SANDBOX_FILTERS", "off")


@pytest.fixture
def filters_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_SANDBOX_FILTERS", "on")


def marker(name: str) -> str:
    return f"ran-{name}-{secrets.token_hex(4)}"


# --- 1 and 2: the corpus through python_repl, one attack per call ------------------------------------------------


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_python_repl_boundary_contains_each_attack(attack: Attack, host: Host, canary_env: tuple[str, ...],
                                                   filters_off: None) -> None:
    mark = marker(attack.name)
    result = call_tool("python_repl", program([attack], host.targets(), mark))
    assert not result.is_error, result.output  # every attack is caught inside the program: it ran to its end
    assert_ran_and_contained(result.output, mark, [attack], fresh=True)  # a fresh call lists an empty "/"
    assert_nothing_leaked(result.output, canary_env, host.file_canary)
    host.assert_untouched()


def test_a_signal_the_program_raises_ends_that_program_alone(host: Host, canary_env: tuple[str, ...],
                                                             filters_off: None) -> None:
    mark = marker("raise-signal")
    result = call_tool("python_repl", program([RAISE_SIGNAL], host.targets(), mark))
    assert result.is_error and "The sandbox's runtime stopped the program" in result.output, result.output
    assert listing(result.output, mark) == [] and results(result.output) == {}  # it ran, and died at the signal
    assert_nothing_leaked(result.output, canary_env, host.file_canary)
    host.assert_untouched()
    assert call_tool("python_repl", "print('next')").output == "next"  # the app (this process) is fine


def test_what_a_program_leaves_in_its_scratch_folder_is_gone_next_call_and_its_links_were_never_followed(
        filters_off: None) -> None:
    """Links a guest may make (relative ones, whose target it cannot open) point out of the scratch folder on the
    host, here at a folder beside it: removing the scratch folder removes the links, never what they point at."""
    victim = world_readable_dir("boundary-victim-")
    try:
        (victim / "keep.txt").write_text("keep", encoding="utf-8")
        first = call_tool("python_repl", "import os\nopen('mine.txt', 'w').write('x')\nos.mkdir('d')\n"
                                         f"os.symlink('../{victim.name}', 'to-dir')\n"
                                         f"os.symlink('../{victim.name}/keep.txt', 'to-file')\n"
                                         "print(sorted(os.listdir('/')))")
        assert first.output == "['d', 'mine.txt', 'to-dir', 'to-file']", first.output
        assert call_tool("python_repl", "import os\nprint(os.listdir('/'))").output == "[]"
        assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
        assert (victim / "keep.txt").read_text(encoding="utf-8") == "keep"
    finally:
        shutil.rmtree(victim, ignore_errors=True)


# --- the functools.wraps gadget: contained by the boundary alone, refused by the policy ---------------------------


@pytest.mark.parametrize("name", GADGETS)
def test_the_wraps_gadget_reaches_only_the_guests_own_os_with_the_filters_off(name: str, host: Host,
                                                                             canary_env: tuple[str, ...],
                                                                             filters_off: None) -> None:
    """The control for the refusal below: the gadget works (it reaches ``os``'s globals), and what it reaches is
    the guest's os: an empty environment and no file of the host's."""
    code = GADGETS[name] + "print('REACHED', g['__name__'], dict(g['environ']), g['listdir']('/'))\n"
    result = call_tool("python_repl", code)
    assert result.output == "REACHED os {} []", result.output
    assert_nothing_leaked(result.output, canary_env, host.file_canary)


@pytest.mark.parametrize("name", GADGETS)
def test_the_wraps_gadget_is_refused_by_the_policy_with_the_filters_on(name: str, canary_env: tuple[str, ...],
                                                                      filters_on: None) -> None:
    code = GADGETS[name] + "print('REACHED', g['__name__'], dict(g['environ']))\n"
    result = call_tool("python_repl", code)
    assert result.is_error and result.output.startswith("Refused before running (nothing was executed)"), \
        result.output
    assert "__getattribute__" in result.output or "wraps" in result.output
    assert "REACHED" not in result.output
    assert all(canary not in result.output for canary in canary_env)


# --- 4: legitimate programs still run, with the filters on (as deployed) and off ------------------------------------

LEGIT = {
    "arithmetic": "print(17 * 23 + 5, 2 ** 100 % 97, 7 / 2, 7 // 2, -7 % 3, round(2.675, 2), 10 ** 20 + 1)",
    "strings": "s = 'Hello, World'\nprint(s.lower().replace('world', 'there'), s[::-1], s.split(', '), "
               "f'{3.14159:.2f}', 'abc'.upper().center(9, '*'), 'ab' * 3, 'x' in s)",
    "math": "import math\nprint(math.factorial(10), round(math.sqrt(2), 6), math.gcd(84, 36), math.isqrt(396), "
            "round(math.log(math.e ** 3), 9), math.comb(10, 3), math.pi)",
    "statistics": "import statistics\nprint(statistics.mean([1, 2, 3, 4]), statistics.median([3, 1, 2]), "
                  "round(statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9]), 4), statistics.mode('abracadabra'))",
    "json": "import json\nd = json.loads('{\"a\": [1, 2, {\"b\": null}], \"c\": \"\\u00e9\"}')\n"
            "print(json.dumps(d, sort_keys=True), d['a'][2]['b'] is None, json.dumps(d, ensure_ascii=False))",
    "re": "import re\nprint(re.findall(r'\\d+', 'a1b22c333'), re.sub(r'(\\w+)@(\\w+)', r'\\2 at \\1', 'me@home'), "
          "bool(re.fullmatch(r'[a-z]+', 'abc')), re.split(r'[,;]\\s*', 'a, b;c'))",
    "datetime": "import datetime\nd = datetime.date(2024, 2, 28) + datetime.timedelta(days=2)\n"
                "print(d.isoformat(), d.strftime('%A %d %B'), (datetime.date(2025, 1, 1) - datetime.date(2024, 1, 1))"
                ".days, datetime.datetime(2024, 1, 1, 12, 30).isoformat())",
    "collections": "import collections\nc = collections.Counter('mississippi')\nd = collections.defaultdict(list)\n"
                   "for w in ['apple', 'avocado', 'banana']:\n    d[w[0]].append(w)\n"
                   "q = collections.deque([1, 2, 3], maxlen=3)\nq.append(4)\nP = collections.namedtuple('P', 'x y')\n"
                   "print(c.most_common(2), dict(d), list(q), P(1, 2), list(collections.OrderedDict(a=1, b=2)))",
    "itertools": "import itertools\nprint(list(itertools.combinations('abc', 2)), "
                 "list(itertools.accumulate([1, 2, 3, 4])), len(list(itertools.permutations(range(5)))), "
                 "list(itertools.islice(itertools.count(10, 5), 3)), [k for k, _ in itertools.groupby('aabbbc')])",
    "functions-and-classes": "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
                             "    def __repr__(self):\n        return f'Point({self.x}, {self.y})'\n"
                             "def gen(n):\n    for i in range(n):\n        yield i * i\n"
                             "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    caught = str(e)\n"
                             "print(sorted([Point(2, 1), Point(1, 5)], key=lambda p: p.x), list(gen(4)), caught)",
    "functools": "import functools\n@functools.lru_cache(None)\ndef fib(n):\n"
                 "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                 "def logged(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n    return inner\n"
                 "@logged\ndef add(a, b):\n    \"\"\"Add two numbers.\"\"\"\n    return a + b\n"
                 "print(fib(40), add(2, 3), add.__name__, add.__doc__, "
                 "functools.reduce(lambda a, b: a * b, range(1, 6)))",
    "fractions-decimal": "from fractions import Fraction\nfrom decimal import Decimal\n"
                         "print(Fraction(1, 3) + Fraction(1, 6), Decimal('0.1') + Decimal('0.2'), "
                         "sum([0.1] * 3) == 0.3)",
}


def cpython(code: str) -> str:
    """What CPython itself prints for one of the programs above (they are the test's own, plain and safe)."""
    out = StringIO()
    with redirect_stdout(out):
        exec(code, {"__name__": "__main__"})  # the test's own program
    return out.getvalue().rstrip("\n")


@pytest.mark.parametrize("name", LEGIT)
def test_legitimate_programs_run_through_python_repl_with_the_filters_on(name: str, filters_on: None) -> None:
    result = call_tool("python_repl", LEGIT[name])
    assert not result.is_error and result.output == cpython(LEGIT[name]), result.output


def test_legitimate_programs_run_with_the_filters_off_too_and_a_last_expression_is_shown(filters_off: None) -> None:
    code = "\n".join(LEGIT.values()) + "\nx = sum(range(101))\nx * 2"
    result = call_tool("python_repl", code)
    assert not result.is_error and result.output == cpython(code) + "\n10100", result.output


# --- the CLI's CodeAct --------------------------------------------------------------------------------------------


class Cli:
    """``python -m agents ask --mode codeact --json`` in its own process, as a user runs it, against a stub server
    playing :class:`Scripted`: canary secrets in its environment, the app's canary folder as its working folder,
    and a temp folder of its own (where its sandboxes' scratch folders live, so the test sees what is left)."""

    def __init__(self, host: Host, canaries: tuple[str, ...], filters: str) -> None:
        self.host, self.canaries, self.filters = host, canaries, filters
        self.script = Scripted()
        self.pid = 0  # the CLI's: set before its first model call (it is a program's target)

    def run(self, key: str, steps: int, tmp: Path, timeout: float = 120) -> tuple[dict, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LLM_", "HF_", "APP_", "TMPDIR")) and k not in ("SECRET_CANARY", "SPACE_ID")}
        env.update(PYTHONPATH=str(ROOT), LLM_MODEL="stub", HF_TOKEN=self.canaries[0], SECRET_CANARY=self.canaries[1],
                   APP_SANDBOX_FILTERS=self.filters, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
        with StubLLMServer(self.script) as server:
            env["LLM_BASE_URL"] = server.url
            proc = subprocess.Popen([sys.executable, "-m", "agents", "ask", f"{QUESTION} [{key}]", "--mode", "codeact",
                                     "--json", "--tools", "calculate", "--max-steps", str(steps)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    cwd=self.host.app_dir)
            self.pid = proc.pid
            try:
                out, err = proc.communicate(timeout=timeout)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        assert proc.returncode == 0, err
        return json.loads(out)["runs"]["codeact"], out + err


def scratch_left(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(("codeact-", "repl-")))


@pytest.fixture
def cli_tmp() -> Iterator[Path]:
    folder = world_readable_dir("boundary-cli-tmp-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_codeact_through_the_cli_contains_the_corpus_step_by_step(host: Host, canary_env: tuple[str, ...],
                                                                  cli_tmp: Path) -> None:
    """One CodeAct run, one attack per step, then a signal that ends the guest, then a step in the fresh one: the
    session's later listings show only what its own programs made, and the restarted one an empty folder."""
    cli = Cli(host, canary_env, "off")
    marks = [marker(a.name) for a in ATTACKS]
    signal, after = marker("raise-signal"), marker("after-signal")
    programs = [lambda a=a, m=m: program([a], host.targets(cli.pid), m) for a, m in zip(ATTACKS, marks, strict=True)]
    programs += [lambda: program([RAISE_SIGNAL], host.targets(cli.pid), signal),
                 lambda: program([], host.targets(cli.pid), after)]
    cli.script.add("corpus", codeact=programs)
    run, everything = cli.run("corpus", len(programs) + 1, cli_tmp)
    assert run["answer"] == "done" and run["error"] is None
    *observations, last = [step["observation"] for step in run["steps"]]
    assert len(observations) == len(programs) and last == "(final_answer was called.)"
    for attack, mark, seen in zip(ATTACKS, marks, observations[:len(ATTACKS)], strict=True):
        assert_ran_and_contained(seen, mark, [attack], fresh=False)
    # The guest's libc says "Program recieved termination signal" on its stderr, which in a session is the tool
    # channel: the parent reads it as an oversized frame and ends the step (the one-shot sandbox names the trap).
    ended = ("The sandbox's runtime stopped the program", "broke the tool channel's protocol")
    assert any(reason in observations[-2] for reason in ended), observations[-2]
    assert set(listing(observations[-2], signal)) == MADE  # the first guest's folder held what its programs made
    assert observations[-1].startswith("(The sandbox was started afresh") and listing(observations[-1], after) == []
    assert_nothing_leaked(everything, canary_env, host.file_canary)
    host.assert_untouched(cli_tmp)
    assert scratch_left(cli_tmp) == []  # the session's folders (the first guest's and the restarted one's) are gone


def test_codeact_through_the_cli_refuses_the_gadget_and_runs_legitimate_steps_with_state(
        host: Host, canary_env: tuple[str, ...], cli_tmp: Path) -> None:
    """The filters on (as deployed): a refused gadget costs its step only; variables, imports and the calculator
    carry on across steps."""
    cli = Cli(host, canary_env, "on")
    cli.script.add("legit", codeact=[
        "import math\nbase = calculate('17 * 23')\ntotal = int(base) + 5\nprint(base, total, math.isqrt(total))",
        GADGETS["wraps-object-dict"] + "print('REACHED', g['__name__'])",
        "print(total * 2, [calculate(f'{total} - {i}') for i in range(2)], math.floor(2.5))",
        "final_answer(total)",
    ])
    run, everything = cli.run("legit", 5, cli_tmp)
    assert run["answer"] == "396" and run["error"] is None and not run["forced"]
    first, gadget, third, _final = run["steps"]
    assert first["observation"] == "391 396 19"
    assert [c["input"] for c in first["calls"]] == [{"expression": "17 * 23"}]
    assert gadget["observation"].startswith("Refused before running (nothing was executed)"), gadget
    assert all("REACHED os" not in step["observation"] for step in run["steps"])
    assert third["observation"] == "792 ['396', '395'] 2"
    assert run["tool_calls"] == 3
    assert_nothing_leaked(everything, canary_env, host.file_canary)
    assert scratch_left(cli_tmp) == []


@pytest.mark.slow
def test_resource_attacks_through_the_cli_end_at_their_limits_and_leave_nothing(host: Host,
                                                                                canary_env: tuple[str, ...],
                                                                                cli_tmp: Path) -> None:
    """A busy loop (5 s of CPU), 1 GB, deep recursion (Python's, and through built-ins), a flood of files (the
    scratch folder's bound of 256) and 5,000 tool calls in one step: each step ends at its limit, and the session
    carries on afresh."""
    cli = Cli(host, canary_env, "off")
    cli.script.add("resources", codeact=[
        "print('MARKER busy')\nwhile True:\n    pass",
        "print('MARKER memory')\nb = bytearray(2**30)\nprint('allocated')",
        "print('MARKER recursion')\ndef f(n):\n    return f(n + 1)\nf(0)",
        "import sys\nprint('MARKER c-stack')\nsys.setrecursionlimit(10**6)\n"
        "def g(n):\n    return 0 if n == 0 else sorted([n], key=lambda x: g(n - 1))[0]\nprint(g(100000))",
        "import os\nprint('MARKER flood')\nn = 0\nwhile True:\n    open(f'f{n}', 'w').close()\n    n += 1",
        "print('MARKER calls')\nn = 0\nfor i in range(5000):\n    try:\n        calculate('1+1')\n        n += 1\n"
        "    except ToolError:\n        pass\nprint('never', n)",
        "import os\nprint('MARKER after', os.listdir('/'))",
    ])
    start = time.monotonic()
    run, everything = cli.run("resources", 8, cli_tmp, timeout=110)
    elapsed = time.monotonic() - start
    busy, memory, recursion, c_stack, flood, calls, after = (s["observation"] for s in run["steps"][:7])
    assert busy.startswith("Output before the error:\nMARKER busy\nTimed out after "), busy  # CPU, or wall if starved
    assert "MARKER memory" in memory and "Memory limit exceeded (512 MB)" in memory and "allocated" not in memory
    assert "MARKER recursion" in recursion and "RecursionError: maximum recursion depth exceeded" in recursion
    assert "MARKER c-stack" in c_stack and "exhausted the interpreter's stack" in c_stack, c_stack
    assert "MARKER flood" in flood and "more than 256 files and folders in its scratch folder" in flood, flood
    assert "MARKER calls" in calls and "after the limit of 20 calls in one step" in calls and "never" not in calls
    made = run["steps"][5]["calls"]  # 20 ran, the 21st was refused, the 22nd ended the step
    assert [c["observation"] for c in made[:20]] == ["2"] * 20 and len(made) == 21, made[20:]
    assert made[20]["observation"].startswith("calculate: too many tool calls in one step (the limit is 20)")
    assert after == "(The sandbox was started afresh after the last step ended it: earlier variables are gone.)\n" \
                    "MARKER after []"
    assert run["answer"] == "done"
    assert elapsed < 60, elapsed
    assert_nothing_leaked(everything, canary_env, host.file_canary)
    assert scratch_left(cli_tmp) == []  # the flooded folder too


# --- 5: resource attacks through python_repl ------------------------------------------------------------------------


@pytest.mark.parametrize("code, message", [
    ("while True:\n    pass", "Timed out after "),  # 5 s of CPU; on a starved machine the 8 s wall clock first
    ("b = bytearray(2**30)", "Memory limit exceeded (512 MB)."),
    ("chunks = []\nwhile len(chunks) < 1024:\n    chunks.append(bytearray(2**20))", "Memory limit exceeded (512 MB)."),
    ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError: maximum recursion depth exceeded"),
    ("import sys\nsys.setrecursionlimit(10**6)\n"
     "def g(n):\n    return 0 if n == 0 else sorted([n], key=lambda x: g(n - 1))[0]\ng(100000)",
     "exhausted the interpreter's stack"),
], ids=["busy-loop", "one-gigabyte", "gigabyte-by-megabytes", "deep-recursion", "c-stack-recursion"])  # fmt: skip
def test_resource_attacks_through_python_repl_end_at_their_limits(code: str, message: str, filters_off: None) -> None:
    start = time.monotonic()
    result = call_tool("python_repl", "print('MARKER started')\n" + code)
    elapsed = time.monotonic() - start
    assert result.is_error and result.output.startswith("Output before the error:\nMARKER started\n"), result.output
    assert message in result.output, result.output
    assert elapsed < 8 + 4, elapsed  # the wall clock (8 s) bounds every one of them
    assert call_tool("python_repl", "print(6 * 7)").output == "42"


# --- Stop -------------------------------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _drive(session: SandboxSession, code: str) -> object:
    step = session.run(code)
    while True:
        try:
            next(step)
        except StopIteration as done:
            return done.value


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["close", "stop"])
def test_stop_ends_a_running_program_within_about_50_ms(how: str, record_property: pytest.RecordProperty) -> None:
    """CodeAct's Stop (the run's cancel event) or ``close()`` from another thread while a busy loop runs: the time
    from the call to the guest's process being gone, and to the step's return. The design says ~50 ms (one poll);
    the assertion on the process leaves room for a loaded machine but stays well under a second."""
    gone, returned = [], []
    for _ in range(3):
        cancel = threading.Event()
        session = SandboxSession(ToolRegistry([calculate]), cancel=cancel)
        try:
            assert _drive(session, "x = 1").ok
            pid = session.pid
            box: dict = {}

            def loop(s: SandboxSession = session, b: dict = box) -> None:
                b["result"] = _drive(s, "while True:\n    pass")
                b["at"] = time.monotonic()

            runner = threading.Thread(target=loop)
            runner.start()
            time.sleep(0.4)  # the loop is running
            assert _alive(pid) and "result" not in box
            t0 = time.monotonic()
            session.close() if how == "close" else cancel.set()
            while _alive(pid) and time.monotonic() - t0 < 5:
                time.sleep(0.0005)
            gone.append(time.monotonic() - t0)
            runner.join(5)
            returned.append(box["at"] - t0)
            assert box["result"].status == "stopped" and not _alive(pid)
        finally:
            session.close()
    record_property(f"stop_{how}_process_gone_ms", [round(s * 1000, 1) for s in gone])
    record_property(f"stop_{how}_step_returned_ms", [round(s * 1000, 1) for s in returned])
    print(f"\n{how}: process gone after {[round(s * 1000, 1) for s in gone]} ms, step returned after "
          f"{[round(s * 1000, 1) for s in returned]} ms (median {statistics.median(gone) * 1000:.1f} ms)")
    assert max(gone) < 0.5, gone
    assert max(returned) < 2.0, returned  # the step's own clean-up (reap, pipes, folder) on a loaded machine

