"""No code outside ``patches/`` changes a third-party library's internals.

Every module of ``app.py``, ``agents/``, ``tools/``, ``ui/``, ``bench/`` and ``prompts/`` is parsed (nothing is
imported). A name bound by an import of a third-party module, or of a name from one (a class, a function, a
submodule), is followed through plain aliases (``q = gradio.queueing``, ``getattr(gr, "Blocks")``). Found:
an assignment, augmented assignment or ``del`` of an attribute of such a name (``gradio.routes.StateHolder =
…``), a ``setattr``/``delattr`` on one, and a write of a library's entry in ``sys.modules``. Instances (what
a call returns) are the app's own objects and are not followed. Such a change belongs in ``patches/``
(docs/upstream.md).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("app.py", "agents", "tools", "ui", "bench", "prompts")
OWN = {"app", "agents", "tools", "ui", "bench", "prompts", "patches", "tests"}  # this repository's packages
SKIP_DIRS = {"__pycache__", "node_modules"}


def third_party(module: str | None) -> bool:
    top = (module or "").split(".")[0]
    return bool(top) and top not in OWN and top not in sys.stdlib_module_names and top != "__future__"


def _root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from (``a`` of ``a.b.c``), or of ``getattr(a, "b")``; None otherwise."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and node.args):
            node = node.args[0]
        else:
            return node.id if isinstance(node, ast.Name) else None


def _library_names(tree: ast.AST) -> set[str]:
    """Names bound (anywhere in the module) to a third-party module or to something imported from one."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if third_party(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and third_party(node.module):
            names |= {a.asname or a.name for a in node.names}
    changed = True
    while changed:  # plain aliases of those names, in any scope
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _root(node.value) in names:
                if isinstance(node.value, ast.Name | ast.Attribute | ast.Call):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in names:
                            names.add(target.id)
                            changed = True
    return names


def _is_sys_modules(node: ast.AST) -> bool:
    """``sys.modules[name]`` for a third-party ``name`` (a library's import blocked or replaced)."""
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules" and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "sys" and isinstance(node.slice, ast.Constant)
            and third_party(str(node.slice.value)))


def changes(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each change of a library's attribute in ``source``."""
    tree = ast.parse(source)
    names = _library_names(tree)
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and getattr(node, "value", True) is not None:
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            for part in (target.elts if isinstance(target, ast.Tuple | ast.List) else [target]):
                if isinstance(part, ast.Attribute) and _root(part) in names:
                    yield node.lineno, f"assigns {ast.unparse(part)}"
                elif _is_sys_modules(part):
                    yield node.lineno, f"writes {ast.unparse(part)}"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
                and node.args and _root(node.args[0]) in names):
            yield node.lineno, f"calls {ast.unparse(node)[:80]}"


def scanned_files() -> list[Path]:
    found = []
    for entry in SCANNED:
        path = ROOT / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
        found += [p for p in paths if not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return found


def test_no_code_outside_patches_changes_a_library_s_attributes():
    files = scanned_files()
    assert len(files) > 50  # the scan found the app's code
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in files
             for line, what in changes(path.read_text(encoding="utf-8"))]
    assert found == [], "a library internal changed outside patches/ (move it there, or use a public lever):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("source", [
    "import gradio.routes\ngradio.routes.StateHolder = object",
    "from gradio import routes\nroutes.StateHolder = object",
    "import gradio as gr\ngr.Blocks.validate_inputs = lambda *a: None",
    "from gradio.blocks import Blocks\nsetattr(Blocks, 'x', 1)",
    "import gradio.queueing\nq = gradio.queueing\nq.asyncio = None",
    "def f():\n    import anyio\n    anyio.to_thread.run_sync = None",
    "import httpx2\ndelattr(httpx2.HTTPTransport, 'x')",
    "import huggingface_hub as h\nh.constants.X += 1",
    "from fastapi import routing\nrouting._IncludedRouter._match, x = None, 1",
    "import sys\nsys.modules['matplotlib'] = None",
    "import gradio as gr\nB = getattr(gr, 'Blocks')\nB.x = 1",
])
def test_the_scan_finds_a_change_of_a_library(source: str):
    assert list(changes(source)), source


@pytest.mark.parametrize("source", [
    "import gradio as gr\ndemo = gr.Blocks()\ndemo.title = 'x'",  # an instance the app made
    "import gradio as gr\nclass AppBlocks(gr.Blocks):\n    optional_tail = {}",  # a subclass of its own
    "import os\nos.environ['X'] = '1'",  # the process's environment, not a library
    "from agents import events\nevents.X = 1",  # the repository's own module
    "import gradio as gr\nx = {}\nx['a'] = gr.Blocks",
    "import sys\nsys.modules['_functools'] = None",  # the standard library's own (the sandbox guest's lru_cache)
])
def test_the_scan_leaves_the_app_s_own_objects_alone(source: str):
    assert list(changes(source)) == [], source
