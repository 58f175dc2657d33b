"""The sandbox boundary's attack corpus, shared by the tests that send it through each public door:
``tools.call_tool('python_repl', …)`` and the CLI's CodeAct (tests/tools/test_sandbox_boundary.py), ``/compare``
over REST and the MCP tool (tests/app/test_sandbox_doors.py). Not collected by pytest (no ``test_`` prefix).

Every attack program first proves that it ran: it prints a marker and what it sees of the file system
(``os.listdir('/')``: its own scratch folder, empty or holding only what the programs made), then tries its
attack and prints one ``RESULT <name> <outcome>`` line. So a boundary that refused everything (or a program that
never ran) fails the tests as surely as one that let an attack through. The attacks aim at what the test
plants on the host (:class:`Targets`): canary secrets in the app's environment, a canary file in the app's
working folder, a listening socket, a process to signal, paths outside the scratch folder.

The corpus is meant for ``APP_SANDBOX_FILTERS=off`` (the boundary alone: plain ``import os``, ``open`` …);
:data:`GADGETS` are also sent with the filters on, where the policy must refuse them.
"""

from __future__ import annotations

import ast
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from agents.llm.stub_server import StubReply, toy_policy

ROOT = Path(__file__).resolve().parents[2]
CANARY_HF_TOKEN = "hf_canary_5f3c2a9e1d7b4c6a8e0f"  # the same values as tests/tools/conftest.py's canary_env
CANARY_SECRET = "secret-canary-7d41c0b8a2"
APP_FILE_NAME = "app-canary.txt"
# Lines of the app's own source that no observation may ever hold (a read of app.py would show them).
APP_SOURCE_LINES = [line.strip() for line in (ROOT / "app.py").read_text(encoding="utf-8").splitlines()
                    if len(line.strip()) > 50][:25]
PASSWD_LINE = "root:x:0:0"


@dataclass(frozen=True)
class Targets:
    """What the attacks aim at on the host; passed to every program as the dict ``T``."""

    app_pids: tuple[int, ...]  # the app's process (and its workers): their /proc/<pid>/environ
    app_file: str  # absolute path of a canary file in the app's working folder
    outside: str  # absolute path of a file a program tries to create outside its scratch folder
    port: int  # a socket listening on 127.0.0.1
    decoy_pid: int  # a process a program tries to signal
    root: str = str(ROOT)  # the app's code

    def as_program_dict(self) -> dict:
        return {**asdict(self), "app_pids": list(self.app_pids), "app_file_name": APP_FILE_NAME}


@dataclass(frozen=True)
class Attack:
    name: str
    body: str  # the statements of a function body (``T`` holds the targets); its value or exception is printed
    outcome: str  # a regex the ``RESULT <name> …`` line must match
    makes: tuple[str, ...] = ()  # names it may leave in the scratch folder (a session's later listings show them)


_DOTS = "'../' * 16 + T['app_file'].lstrip('/')"  # a `..` walk from the scratch folder to the app's file

OBJECT_DICT_GADGET = """\
import functools
found = []
class Grab:
    def update(self, d):
        found.append(d)
class W:
    def __getattribute__(self, name):
        return Grab()
functools.wraps(object)(W())
ga = found[0]['__getattribute__']
wc = [c for c in ga(object, '__subclasses__')() if c.__name__ == '_wrap_close'][0]
g = ga(wc.__init__, '__globals__')
"""

TYPE_DICT_GADGET = """\
import functools
found = []
class Grab:
    def update(self, d):
        found.append(d)
class W:
    def __getattribute__(self, name):
        return Grab()
    def __setattr__(self, name, value):
        pass
def dict_of(obj):
    found.clear()
    functools.wraps(obj)(W())
    return found[-1]
wc = [c for c in dict_of(type)['__subclasses__'](object) if c.__name__ == '_wrap_close'][0]
slot = dict_of(type(wc.__init__))['__globals__']
g = dict_of(type(slot))['__get__'](slot, wc.__init__, type(wc.__init__))
"""

# Once a gadget holds ``g`` (the real os module's globals), it tries the app's file and the environment.
_GADGET_TAIL = """\
try:
    got = g['read'](g['open'](T['app_file'], g['O_RDONLY']), 4096)
except OSError as exc:
    got = type(exc).__name__
return g['__name__'], dict(g['environ']), got
"""

# (name, program): functools.wraps(obj)(W()) feeding update_wrapper an object whose attribute access the program
# controls, then walking __dict__s to os._wrap_close.__init__.__globals__ (one through object's, one through type's).
GADGETS = {"wraps-object-dict": OBJECT_DICT_GADGET, "wraps-type-dict": TYPE_DICT_GADGET}

ATTACKS: list[Attack] = [
    Attack("import-os-environ", "return dict(os.environ), os.getenv('HF_TOKEN'), os.getenv('SECRET_CANARY')",
           r"ran \(\{\}, None, None\)"),
    Attack("read-app-file", "return open(T['app_file']).read()", r"FileNotFoundError"),
    Attack("read-app-file-relative", "return open(T['app_file_name']).read()", r"FileNotFoundError"),
    Attack("read-app-source", "return open(T['root'] + '/app.py').read()", r"FileNotFoundError"),
    Attack("read-etc-passwd", "return open('/etc/passwd').read()", r"FileNotFoundError"),
    Attack("proc-self-environ", "return open('/proc/self/environ', 'rb').read()", r"FileNotFoundError"),
    Attack("proc-app-environ", "return [open(f'/proc/{p}/environ', 'rb').read() for p in T['app_pids']]",
           r"FileNotFoundError"),
    Attack("proc-listing", "return os.listdir('/proc')", r"FileNotFoundError"),
    Attack("dotdot-read", f"return open({_DOTS}).read()", r"PermissionError"),
    Attack("dotdot-listdir", "return os.listdir('..'), os.listdir('/..')", r"PermissionError"),
    Attack("dotdot-chdir", "os.chdir('/..')\nreturn os.getcwd(), os.listdir('.')", r"PermissionError"),
    Attack("symlink-to-proc", "os.symlink('/proc/self/environ', 'link-environ')\nreturn open('link-environ').read()",
           r"PermissionError"),
    Attack("symlink-to-app-file", "os.symlink(T['app_file'], 'link-app')\nreturn open('link-app').read()",
           r"PermissionError"),
    Attack("symlink-relative-out", f"os.symlink({_DOTS}, 'link-out')\nreturn open('link-out').read()",
           r"PermissionError", makes=("link-out",)),
    Attack("hardlink-app-file", "os.link(T['app_file'], 'hard-app')\nreturn open('hard-app').read()",
           r"FileNotFoundError"),
    Attack("write-outside-absolute", "open(T['outside'], 'w').write('pwned')", r"FileNotFoundError"),
    Attack("write-outside-dotdot", "open('../' + os.path.basename(T['outside']), 'w').write('pwned')",
           r"PermissionError"),
    Attack("rename-outside", "open('mine.txt', 'w').write('x')\n"
                             "os.rename('mine.txt', '../' + os.path.basename(T['outside']))",
           r"PermissionError", makes=("mine.txt",)),
    Attack("socket-connect", "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
                             "return s.connect(('127.0.0.1', T['port']))", r"OSError .*Not supported"),
    Attack("socket-create-connection", "import socket\nreturn socket.create_connection(('127.0.0.1', T['port']), 2)",
           r"AttributeError .*getaddrinfo|OSError"),
    Attack("subprocess", "import subprocess\nreturn subprocess.run(['cat', T['app_file']], capture_output=True)",
           r"OSError .*does not support processes"),
    Attack("os-system", "return os.system('cat ' + T['app_file'])", r"AttributeError .*'system'"),
    Attack("ctypes", "import ctypes\nreturn ctypes.CDLL(None)", r"ModuleNotFoundError .*'ctypes'"),
    Attack("os-kill", "return os.kill(T['decoy_pid'], 9)", r"AttributeError .*'kill'"),
    Attack("os-killpg", "return os.killpg(0, 9)", r"AttributeError .*'killpg'"),
    Attack("thread", "import threading\nthreading.Thread(target=print).start()", r"RuntimeError .*thread"),
    Attack("file-too-large", "f = open('big.bin', 'wb')\ntry:\n    for _ in range(20):\n        f.write(b'x' * 2**20)\n"
                             "finally:\n    f.close()\n    os.remove('big.bin')", r"OSError .*File too large"),
    Attack("many-files", "import time\nos.mkdir('flood')\nstart, n = time.monotonic(), 0\n"  # under the 256 bound
                         "while n < 200 and time.monotonic() - start < 0.5:\n"
                         "    open(f'flood/{n}', 'w').close()\n    n += 1\n"
                         "return n >= 10 and len(os.listdir('flood')) == n", r"ran True", makes=("flood",)),
    *(Attack(name, code + _GADGET_TAIL, r"ran \('os', \{\}, 'FileNotFoundError'\)") for name, code in GADGETS.items()),
]
# Ends its program at once (the guest's runtime traps): sent as a program of its own, last.
RAISE_SIGNAL = Attack("raise-signal", "import signal\nsignal.raise_signal(signal.SIGKILL)", r"never printed")
MADE = frozenset(name for attack in ATTACKS for name in attack.makes)


def program(attacks: list[Attack], targets: Targets, marker: str) -> str:
    """One program: the marker and the listing, then each attack in turn, each printing its RESULT line."""
    lines = ["import os", f"T = {targets.as_program_dict()!r}", f"print('MARKER', {marker!r})",
             "print('LISTING', sorted(os.listdir('/')))"]
    for i, attack in enumerate(attacks):
        lines += [f"def attack_{i}():", textwrap.indent(attack.body.rstrip("\n"), "    "),
                  "try:", f"    print('RESULT', {attack.name!r}, 'ran', repr(attack_{i}())[:200])",
                  "except BaseException as exc:",
                  f"    print('RESULT', {attack.name!r}, type(exc).__name__, str(exc)[:60].replace(chr(10), ' '))"]
    return "\n".join(lines) + "\n"


def chunks(attacks: list[Attack], size: int = 8) -> list[list[Attack]]:
    """The corpus in programs whose output fits an observation (a mode cuts one at 1,500 characters)."""
    return [attacks[i:i + size] for i in range(0, len(attacks), size)]


def results(output: str) -> dict[str, str]:
    """The ``RESULT <name> <outcome>`` lines of an output: name -> outcome."""
    found = {}
    for line in output.splitlines():
        if line.startswith("RESULT "):
            _, name, rest = (line.split(" ", 2) + [""])[:3]
            found[name] = rest
    return found


def listing(output: str, marker: str) -> list[str]:
    """What the program listed at ``/`` right after printing ``marker``."""
    lines = output.splitlines()
    assert f"MARKER {marker}" in lines, f"the program never ran (no marker {marker!r}):\n{output}"
    at = lines.index(f"MARKER {marker}")
    assert lines[at + 1].startswith("LISTING "), output
    return ast.literal_eval(lines[at + 1][len("LISTING "):])


def assert_ran_and_contained(output: str, marker: str, attacks: list[Attack], *, fresh: bool) -> None:
    """The program ran (its marker, a listing of nothing but its scratch folder: empty when ``fresh``, else only
    what the corpus makes) and every attack had the outcome the boundary gives it."""
    seen = listing(output, marker)
    assert (seen == []) if fresh else (set(seen) <= MADE), (seen, output)
    got = results(output)
    for attack in attacks:
        assert attack.name in got, (attack.name, output)
        assert re.search(attack.outcome, got[attack.name]), (attack.name, got[attack.name])


def assert_nothing_leaked(text: str, canaries: tuple[str, ...], file_canary: str) -> None:
    """No canary secret, no byte of the app's canary file, the app's source or the host's passwd in ``text``."""
    for secret in (*canaries, file_canary):
        assert secret not in text, f"{secret!r} leaked"
    for line in APP_SOURCE_LINES:
        assert line not in text, f"app.py leaked: {line!r}"
    assert PASSWD_LINE not in text


@dataclass
class Host:
    """What a test plants on the host (see :func:`planted`) and checks afterwards."""

    file_canary: str
    app_dir: Path
    outside: Path
    listener: socket.socket
    decoy: subprocess.Popen

    def targets(self, *app_pids: int) -> Targets:
        """The targets, with the app's process ids (this process's first: it is the app for the tools door)."""
        return Targets(app_pids=(os.getpid(), *app_pids), app_file=str(self.app_dir / APP_FILE_NAME),
                       outside=str(self.outside), port=self.listener.getsockname()[1], decoy_pid=self.decoy.pid)

    def connections(self) -> int:
        """Connections the listener received (none may come from a sandbox)."""
        count = 0
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return count
            conn.close()
            count += 1

    def assert_untouched(self, *temp_dirs: Path) -> None:
        """No connection, no signal, nothing written outside a scratch folder (``outside`` itself, or beside the
        scratch folders in ``temp_dirs``), the canary file unchanged and alone in the app's folder."""
        assert self.connections() == 0
        assert self.decoy.poll() is None, "the decoy process was signalled"
        for folder in (self.outside.parent, *temp_dirs):
            assert not os.path.lexists(folder / self.outside.name)
        assert (self.app_dir / APP_FILE_NAME).read_text(encoding="utf-8") == self.file_canary
        assert sorted(p.name for p in self.app_dir.iterdir()) == [APP_FILE_NAME]


def world_readable_dir(prefix: str) -> Path:
    """A folder in the system's temp folder that any user may read: when the tests run as root the sandbox's host
    drops to nobody, and only the boundary (not the file's permissions) may keep a program from what is inside."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    return folder


@contextmanager
def planted() -> Iterator[Host]:
    """The host side of an attack: the app's working folder with a canary file (world-readable), a listener on
    127.0.0.1, a decoy process, and a path outside any scratch folder that must never be created."""
    app_dir = world_readable_dir("boundary-app-")
    file_canary = f"file-canary-{secrets.token_hex(8)}"
    (app_dir / APP_FILE_NAME).write_text(file_canary, encoding="utf-8")
    (app_dir / APP_FILE_NAME).chmod(0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    outside = Path(tempfile.gettempdir()) / f"boundary-outside-{secrets.token_hex(6)}.txt"
    try:
        yield Host(file_canary, app_dir, outside, listener, decoy)
    finally:
        decoy.kill()
        decoy.wait()
        listener.close()
        shutil.rmtree(app_dir, ignore_errors=True)
        outside.unlink(missing_ok=True)


Program = str | Callable[[], str]  # a callable is rendered when the model is asked (it may need a pid known late)


class Scripted:
    """A stub-server responder playing the attacker: for a question holding one of its keys, CodeAct's i-th reply
    is the i-th program in a ``<code>`` block and ReAct's i-th reply calls ``python_repl`` with it; after the last
    program, CodeAct calls ``final_answer('done')`` and ReAct answers ``done``. Other questions get the toy model."""

    def __init__(self) -> None:
        self.scripts: dict[str, dict[str, list[Program]]] = {}

    def add(self, key: str, *, codeact: list[Program] | None = None, react: list[Program] | None = None) -> str:
        self.scripts[key] = {"codeact": list(codeact or []), "react": list(react or [])}
        return key

    def __call__(self, body: dict) -> StubReply:
        messages = body.get("messages") or []
        system = str(messages[0].get("content") or "") if messages else ""
        question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        key = next((k for k in self.scripts if k in question), None)
        step = sum(1 for m in messages if m.get("role") == "assistant")
        mode = "codeact" if "<code>" in system and "final_answer(" in system else \
            "react" if "Action Input" in system else None
        if key is None or mode is None:
            return toy_policy(body)
        programs = self.scripts[key][mode]
        code = programs[step] if step < len(programs) else None
        code = code() if callable(code) else code
        if mode == "codeact":
            return StubReply(f"Thought: step {step + 1}.\n<code>\n{code or 'final_answer(' + repr('done') + ')'}\n"
                             "</code>")
        if code is None:
            return StubReply("Thought: I have seen enough.\nFinal Answer: done")
        return StubReply(f"Thought: step {step + 1}.\nAction: python_repl\nAction Input: {code}")
