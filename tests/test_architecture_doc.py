"""ARCHITECTURE.md stays a short map, and what it (and every page of docs/) cites exists in the code.

Nothing is imported: files are looked up on disk and Python modules are parsed (``ast``). A citation is a
backticked token outside fenced code, plus the repository paths in an unlabelled fence (ARCHITECTURE.md's
picture). Which tokens are checked, and how:

* a path (``agents/hosting/host.py``, ``ui/core/``, ``tools/sandbox*.py``): the file, folder or glob exists;
* a path with names after the module (``ui/core/stream.Stops``): the module defines them;
* a dotted name (``agents.hosting.make_run``, ``app.wire_compare``, ``processes.hub_tokens``): the longest
  prefix that is a module of the repository (or, for a short first part, any module so named) defines the rest;
* a capitalised name (``HostedRun``, ``Trace.steps``): some module of the repository defines it (a class, or a
  module-level name such as a type alias), and the class the rest as a member;
* a file name (``hf.py``) exists somewhere in the repository; ``python -m X`` names a module, ``python X.py`` a file;
* in a ``python`` fence, what it imports from the repository exists.

Other tokens (environment variables, flags, endpoints, JSON, code of other libraries) are not checked; names the
docs cite that are not the repository's (other projects' classes, an HTTP header) are listed in :data:`ELSEWHERE`.
The patch table of ARCHITECTURE.md names every module of ``patches/``, which are the patches' switch names.
"""

import ast
import builtins
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "ARCHITECTURE.md"
MAX_LINES = 150
DOCS = [MAP, *sorted((ROOT / "docs").glob("*.md"))]
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".mypy_cache", ".ruff_cache"}
CODE = ("agents", "ui", "tools", "patches", "bench")  # where a module's short name is looked up
FILE_ENDINGS = (".py", ".md", ".css", ".js", ".txt")
# Classes of other projects (Gradio, huggingface_hub, smolagents, openai-agents, pydantic-ai, …) the docs name,
# and other capitalised names that are not this repository's.
ELSEWHERE = frozenset({
    "InferenceClient", "ChatCompletionStreamOutput", "BaseInferenceType", "CodeAgent", "FunctionModel",
    "SessionState", "StateHolder", "GradioMCPServer", "FnIndexInferError", "Blocks", "ChatMessage",
    "Authorization", "Queue", "Slider", "ConnectionPool", "HTTPTransport", "Depends", "_IncludedRouter",
})

IDENT = r"[A-Za-z_]\w*"
DOTTED = re.compile(rf"{IDENT}(?:\.{IDENT})+")
CAPITALISED = re.compile(r"_?[A-Z]\w*[a-z]\w*")  # HostedRun, Trace; not LLM_TIMEOUT
PATH_CHARS = re.compile(r"[\w./*-]+")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def repo_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if path.is_file() and not any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts):
            found.append(path)
    return found


@functools.cache
def file_names() -> frozenset[str]:
    return frozenset(p.name for p in repo_files())


@functools.cache
def top_level() -> frozenset[str]:
    return frozenset(p.name for p in ROOT.iterdir() if p.name not in SKIP_DIRS)


def module_file(dotted: str) -> Path | None:
    """The file of a module of the repository (``agents.hosting`` → ``agents/hosting/__init__.py``), or None."""
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _bound_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names a module or class body binds (defs, classes, assignments, imports), nested ifs and trys included."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names[leaf.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", []),
                          *[h.body for h in getattr(node, "handlers", [])]):
                names.update(_bound_names(block))
    return names


def _members(cls: ast.ClassDef) -> set[str]:
    """A class's members: its body's names, and every ``self.x = …`` in its methods."""
    members = set(_bound_names(cls.body))
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign | ast.AugAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                members.add(target.attr)
    return members


@functools.cache
def python_files() -> tuple[Path, ...]:
    return tuple(p for p in repo_files() if p.suffix == ".py")


@functools.cache
def classes() -> dict[str, list[ast.ClassDef]]:
    found: dict[str, list[ast.ClassDef]] = {}
    for path in python_files():
        try:
            tree = parsed(path)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
    return found


@functools.cache
def module_level_names() -> frozenset[str]:
    names: set[str] = set()
    for path in python_files():
        try:
            names.update(n for n, node in _bound_names(parsed(path).body).items()
                         if not isinstance(node, ast.Import | ast.ImportFrom))
        except SyntaxError:
            continue
    return frozenset(names)


def class_has(name: str, attrs: list[str], seen: frozenset[str] = frozenset()) -> bool:
    """Some class ``name`` of the repository has the member chain ``attrs`` (its own, or a base class's)."""
    if not attrs:
        return True
    for cls in classes().get(name, []):
        if attrs[0] in _members(cls):
            member = _bound_names(cls.body).get(attrs[0])
            if len(attrs) == 1 or (isinstance(member, ast.ClassDef) and class_has(member.name, attrs[1:])):
                return True
        for base in cls.bases:
            base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if base_name and base_name not in seen | {name} and class_has(base_name, attrs, seen | {name}):
                return True
    return False


def defines(path: Path, attrs: list[str]) -> bool:
    """Module ``path`` binds ``attrs[0]``, and the class it names has the rest."""
    if not attrs:
        return True
    node = _bound_names(parsed(path).body).get(attrs[0])
    if node is None:
        return False
    if len(attrs) == 1:
        return True
    if isinstance(node, ast.ImportFrom | ast.Import):  # a re-export: follow it by name
        return class_has(attrs[0], attrs[1:])
    return isinstance(node, ast.ClassDef) and class_has(node.name, attrs[1:])


@functools.cache
def modules_named(short: str) -> tuple[Path, ...]:
    """The application's modules whose last name is ``short`` (``processes`` → ``agents/hosting/processes.py``)."""
    ours = [p for p in python_files() if p.parent == ROOT or p.relative_to(ROOT).parts[0] in CODE]
    return tuple(p for p in ours if (p.parent.name if p.name == "__init__.py" else p.stem) == short)


def check_dotted(token: str) -> str | None:
    parts = token.split(".")
    for cut in range(len(parts), 0, -1):  # the longest prefix that is a module of the repository
        path = module_file(".".join(parts[:cut]))
        if path is not None:
            return None if defines(path, parts[cut:]) else f"{'.'.join(parts[:cut])} does not define {parts[cut:]}"
    if CAPITALISED.fullmatch(parts[0]):
        return check_name(parts[0], parts[1:])
    candidates = modules_named(parts[0])
    if not candidates:
        return None  # not ours (a library, or a variable in an example): not checked
    if any(defines(p, parts[1:]) for p in candidates):
        return None
    return f"no module named {parts[0]} defines {'.'.join(parts[1:])}"


def check_name(name: str, attrs: list[str]) -> str | None:
    if name in ELSEWHERE or hasattr(builtins, name):
        return None
    if name in classes():
        return None if class_has(name, attrs) else f"class {name} has no {'.'.join(attrs)}"
    if not attrs and name in module_level_names():
        return None
    return f"no class {name} in the repository"


def check_path(token: str) -> str | None:
    token = token.rstrip("/")
    if any(ch in token for ch in "*?["):
        return None if list(ROOT.glob(token)) else f"nothing matches {token}"
    if (ROOT / token).exists():
        return None
    head, _, last = token.rpartition("/")
    stem, dot, rest = last.partition(".")
    if dot and (ROOT / head / f"{stem}.py").is_file():  # ui/core/stream.Stops
        attrs = rest.removesuffix("()").split(".")
        if all(re.fullmatch(IDENT, a) for a in attrs):
            ok = defines(ROOT / head / f"{stem}.py", attrs)
            return None if ok else f"{head}/{stem}.py does not define {'.'.join(attrs)}"
    return f"{token} does not exist"


def is_path(token: str) -> bool:
    if "/" not in token or not PATH_CHARS.fullmatch(token) or token.startswith(("/", ".", "~")):
        return False
    return token.split("/")[0] in top_level() or token.endswith(FILE_ENDINGS)


def check(token: str) -> str | None:
    """Why a cited token names nothing in the repository, or None (also for tokens not checked)."""
    token = token.strip()
    if token.startswith("python "):
        words = token.split()
        if len(words) > 2 and words[1] == "-m" and re.fullmatch(rf"{IDENT}(\.{IDENT})*", words[2]):
            if words[2].split(".")[0] in top_level() and module_file(words[2]) is None:
                return f"no module {words[2]}"
        elif words[1].endswith(".py") and not (ROOT / words[1]).is_file():
            return f"no file {words[1]}"
        return None
    if any(ch in token for ch in "<>…{} "):
        return None  # a placeholder, a command or code
    token = re.sub(r"\(.*$", "", token)  # a call: check what is called
    if is_path(token):
        return check_path(token)
    if token.endswith(FILE_ENDINGS) and "/" not in token:
        return None if token in file_names() else f"no file named {token}"
    if DOTTED.fullmatch(token):
        return check_dotted(token)
    if CAPITALISED.fullmatch(token):
        return check_name(token, [])
    return None


def citations(path: Path) -> list[tuple[int, str]]:
    """``(line, token)``: backticked tokens outside fences; the repository's paths and file names inside an
    unlabelled fence (a picture); ``module.name`` for each name a ``python`` fence imports from the repository."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    label, code, start = "", [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence, label, code, start = opened.group(2), opened.group(3).strip(), [], number
            continue
        if fence is not None:
            if opened and opened.group(2).startswith(fence[0]) and not opened.group(3).strip():
                fence = None
                if label in ("python", "py"):
                    found += [(start, token) for token in imported(code)]
            elif not label:
                found += [(number, m) for m in re.findall(r"[\w.]+/[\w./*]*|\b\w+\.py\b", line)
                          if is_path(m) or "/" not in m]
            else:
                code.append(line)
            continue
        found += [(number, m) for m in re.findall(r"``?([^`]+?)``?", line)]
    return found


def imported(code: list[str]) -> list[str]:
    """``module.name`` for every ``from module import name`` of the repository's modules in a code sample."""
    try:
        tree = ast.parse("\n".join(code))
    except SyntaxError:
        return []
    return [f"{node.module}.{alias.name}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in top_level()
            for alias in node.names]


def patch_table() -> list[str]:
    """The first column of ARCHITECTURE.md's table under "Framework patches"."""
    section = MAP.read_text(encoding="utf-8").split("## Framework patches", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [row.split("`")[1] for row in rows]


def patch_switches() -> list[str]:
    """``patches.NAMES``, the names ``APP_PATCHES_OFF`` accepts (read from the source, not imported)."""
    node = _bound_names(parsed(ROOT / "patches" / "__init__.py").body)["NAMES"]
    assert isinstance(node, ast.Assign)
    return list(ast.literal_eval(node.value))


def test_the_map_is_short():
    lines = MAP.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"ARCHITECTURE.md has {len(lines)} lines; it is a map of at most {MAX_LINES}"


def test_the_patch_table_names_every_patch_by_its_module_and_switch():
    modules = sorted(p.stem for p in (ROOT / "patches").glob("*.py") if p.name != "__init__.py")
    assert sorted(patch_table()) == modules
    assert sorted(patch_switches()) == modules


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_what_the_docs_cite_exists(doc: Path):
    wrong = [f"{doc.name}:{n}: `{token}`: {why}" for n, token in citations(doc) if (why := check(token))]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("token", ["agents/hosting/host.py", "agents/hosting/", "tools/sandbox*.py", "HostedRun",
                                   "agents.hosting.make_run", "app.wire_compare", "ui/core/stream.Stops",
                                   "processes.hub_tokens", "HostedRun.poll", "ComparisonRun(question, modes)",
                                   "python -m agents.hosting", "hf.py", "LLM_TIMEOUT", "/compare", "run.step()"])
def test_the_checks_accept_what_exists(token: str):
    assert check(token) is None


@pytest.mark.parametrize("token", ["agents/hosting/nowhere.py", "ui/nowhere/", "tools/nowhere*.py", "ProcessRun",
                                   "agents.hosting.NoSuchRun", "app.wire_nothing", "ui/core/stream.NoSignal",
                                   "processes.no_tokens", "HostedRun.no_such_member", "python -m agents.nowhere",
                                   "nowhere.py"])
def test_the_checks_refuse_what_does_not(token: str):
    assert check(token) is not None
