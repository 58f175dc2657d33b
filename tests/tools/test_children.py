"""tools/children.py: the one function that starts the app's processes, each with an allow-listed environment.

A child started the production way reports its own environment: only allow-listed names, never a canary, whatever
the app's environment holds. And no module of the app but tools/children.py starts a process (an AST scan: any
call of subprocess's, asyncio's, os's, multiprocessing's or concurrent.futures' process starters).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools import children
from tools.hardening import is_secret

ROOT = Path(__file__).resolve().parents[2]
CANARIES = {"HF_TOKEN": "hf_CANARY_children_1", "MY_API_KEY": "CANARY_children_2", "APP_SECRET": "CANARY_children_3",
            "CLASSFACTS_TOKEN": "CANARY_children_4", "LLM_API_KEY": "CANARY_children_5",
            "HUGGING_FACE_HUB_TOKEN": "CANARY_children_6", "OAUTH_CLIENT_SECRET": "CANARY_children_7",
            "DB_PASSWORD": "CANARY_children_8"}
OTHERS = {"PATH": "/usr/bin:/bin", "HOME": "/home/app", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp/x",
          "LLM_BASE_URL": "http://127.0.0.1:9/v1", "APP_SANDBOX_FILTERS": "on", "SPACE_ID": "me/space",
          "HF_HOME": "/data/hf", "HTTPS_PROXY": "http://proxy:3128", "PYTHONPATH": "/extra",
          # not allow-listed: the machine's and the shell's own, which a child does not need
          "SSH_AUTH_SOCK": "/tmp/agent", "AWS_REGION": "eu-west-1", "GITHUB_ACTIONS": "true", "OLDPWD": "/root",
          "GRADIO_SERVER_PORT": "7860", "OPENAI_BASE_URL": "http://elsewhere", "DATABASE_URL": "postgres://u:p@db/x"}
ENVIRON = {**OTHERS, **CANARIES}
KINDS = {"sandbox host": children.NOTHING, "recording reader": children.PLAIN, "run worker": children.ENGINE}
PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def allowed_names(allowed: children.Allowed) -> set[str]:
    return {n for n in ENVIRON if allowed.admits(n)}


@pytest.mark.parametrize("kind", KINDS)
def test_a_childs_environment_holds_only_allow_listed_names(kind):
    allowed = KINDS[kind]
    env = children.environment(allowed, ENVIRON)
    assert set(env) == allowed_names(allowed) and not any(map(is_secret, env))
    assert not set(CANARIES.values()) & set(env.values())
    assert not {"SSH_AUTH_SOCK", "AWS_REGION", "GITHUB_ACTIONS", "OLDPWD", "GRADIO_SERVER_PORT", "OPENAI_BASE_URL",
                "DATABASE_URL"} & set(env)


def test_what_each_kind_receives():
    assert children.environment(children.NOTHING, ENVIRON) == {}
    assert set(children.environment(children.PLAIN, ENVIRON)) == {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR",
                                                                   "PYTHONPATH"}
    assert set(children.environment(children.ENGINE, ENVIRON)) == {
        "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "LLM_BASE_URL", "APP_SANDBOX_FILTERS", "SPACE_ID",
        "HF_HOME", "HTTPS_PROXY"}
    with pytest.raises(ValueError, match="HF_TOKEN is not a variable"):
        children.environment(children.ENGINE, ENVIRON, {"HF_TOKEN": "x"})


@pytest.mark.parametrize("kind", KINDS)
def test_a_started_child_sees_only_its_allow_list(kind, monkeypatch):
    """The real start, from an app's environment full of canaries: the child prints what it was given."""
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + ":/usr/bin:/bin")
    proc = children.start([sys.executable, "-I", "-c", PRINT_ENV], KINDS[kind], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    seen = json.loads(out)
    seen.pop("LC_CTYPE", None)  # Python's own locale coercion may set it in the child (PEP 538)
    assert all(KINDS[kind].admits(name) for name in seen) and not set(CANARIES.values()) & set(seen.values())
    with pytest.raises(TypeError, match="allow-list"):
        children.start([sys.executable, "-c", "pass"], children.PLAIN, env={})


# What starts a process, by module; the names in UNIQUE start one whatever they are called on (loop.subprocess_exec).
STARTERS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe",
           "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle",
           "spawnlp", "spawnlpe"},
    "multiprocessing": {"Process", "Pool", "get_context", "set_start_method"},
    "pty": {"spawn", "fork"},
    "concurrent.futures": {"ProcessPoolExecutor"},
}
UNIQUE = frozenset({"Popen", "create_subprocess_exec", "create_subprocess_shell", "subprocess_exec",
                    "subprocess_shell", "ProcessPoolExecutor", "posix_spawn", "posix_spawnp", "forkpty"})


def app_modules() -> list[Path]:
    return [ROOT / "app.py", *(p for package in ("agents", "tools", "ui", "patches")
                               for p in sorted((ROOT / package).rglob("*.py")))]


def starts(path: Path) -> list[str]:
    """The calls in ``path`` that start a process, and the starters it imports by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # a local name → the module it is (import multiprocessing as mp)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names if a.name in STARTERS})
        elif isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            found += [f"from {node.module} import {a.name}" for a in node.names if a.name in STARTERS[node.module]]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
            attr = node.func.attr
            if attr in UNIQUE or attr in STARTERS.get(modules.get(owner, ""), ()):
                found.append(f"line {node.lineno}: {owner}.{attr}(...)")
    return found


def test_no_module_but_tools_children_starts_a_process():
    offenders = {str(p.relative_to(ROOT)): s for p in app_modules() if p.name != "children.py" or p.parent.name
                 != "tools" for s in [starts(p)] if s}
    assert offenders == {}
    assert starts(ROOT / "tools" / "children.py")  # the scan does see a start


def test_the_scan_sees_each_way_of_starting_a_process(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import subprocess, asyncio, os\nfrom multiprocessing import Process\n"
                      "subprocess.run(['x'])\nasyncio.create_subprocess_exec('x')\nos.fork()\n"
                      "subprocess.Popen(['x'])\nx: subprocess.Popen\nsubprocess.TimeoutExpired\n", encoding="utf-8")
    assert len(starts(sample)) == 5
