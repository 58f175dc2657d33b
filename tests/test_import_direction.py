"""Imports point one way: ``app.py`` → ``ui/tabs`` → features → ``ui/recordings`` → ``ui/core`` →
``agents`` → ``tools`` → ``settings.py`` (the environment's variables, which every layer may import), and they make
no circle.

Every module is parsed (``ast``, nothing imported), so an import inside a function counts too; one under
``if TYPE_CHECKING:`` does not (it never runs). A feature (``ui/compare``, ``ui/fork``, ``ui/share``, ``ui/benchmark``,
``ui/page``, ``ui/poll``, ``ui/mcp.py``) imports no other feature; what two features need lives in ``ui/core`` (or, for
saved runs, ``ui/recordings``). An import inside a function says why in a comment (a start-up cost, a child process).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "tools", "ui", "patches", "bench")
CORE, RECORDINGS = "core", "recordings"
FEATURES = ("compare", "fork", "share", "benchmark", "page", "mcp", "poll")
LAYER = {CORE: 0, RECORDINGS: 1, **dict.fromkeys(FEATURES, 2), "tabs": 3}  # tabs: a tab's layout, of features


def imported(path: Path) -> set[str]:
    """Every module name a file imports (``from ui import x`` counts as ``ui.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def part_of(module: str) -> str | None:
    """The ``ui`` package a module name belongs to (``ui.fork.view`` → ``fork``), None outside ``ui``."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ui" and len(parts) > 1 else None


def ui_modules() -> list[Path]:
    return sorted((ROOT / "ui").rglob("*.py"))


def package_of(path: Path) -> str:
    """``core`` for ``ui/core/frame.py``, ``mcp`` for ``ui/mcp.py``, ``__init__`` for ``ui/__init__.py``."""
    return path.relative_to(ROOT / "ui").parts[0].removesuffix(".py")


def test_every_ui_module_belongs_to_a_known_package():
    strays = [str(p.relative_to(ROOT)) for p in ui_modules() if package_of(p) not in (*LAYER, "__init__")]
    assert strays == [], "a new ui/ package needs a place in LAYER (and in ARCHITECTURE.md)"


@pytest.mark.parametrize("path", ui_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_ui_module_imports_only_its_own_package_or_lower_layers(path: Path):
    own = package_of(path)
    if own == "__init__":
        return
    wrong = sorted(m for m in imported(path) if m.split(".")[0] == "app"
                   or ((other := part_of(m)) in LAYER and other != own and LAYER[other] >= LAYER[own]))
    assert wrong == [], f"{path.relative_to(ROOT)} imports against the grain: {wrong}"


@pytest.mark.parametrize("package", ["agents", "tools", "patches"])
def test_the_engine_and_the_patches_never_import_the_page(package: str):
    wrong = {str(p.relative_to(ROOT)): sorted(m for m in imported(p) if m.split(".")[0] in ("ui", "app"))
             for p in sorted((ROOT / package).rglob("*.py"))}
    assert {k: v for k, v in wrong.items() if v} == {}


@pytest.mark.parametrize("package", ["tools"])
def test_the_tools_never_import_the_engine(package: str):
    wrong = {str(p.relative_to(ROOT)): sorted(m for m in imported(p) if m.split(".")[0] == "agents")
             for p in sorted((ROOT / package).rglob("*.py"))}
    assert {k: v for k, v in wrong.items() if v} == {}


def project_modules() -> dict[str, Path]:
    """Every module of the project by its dotted name (``agents.fork``; a package by its own name)."""
    found = {"app": ROOT / "app.py", "settings": ROOT / "settings.py"}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_the_settings_module_imports_nothing_of_the_project():
    """``settings.py`` (every environment variable, declared once) is the bottom layer: every layer may import it."""
    modules = project_modules()
    assert imports_of("settings", modules["settings"], modules) == set()


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run: those under ``if TYPE_CHECKING:`` are left out."""
    guards = [node for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)]
    skipped = {id(n) for guard in guards for child in guard.body for n in ast.walk(child)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in skipped]


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports: ``from pkg import sub`` is ``pkg.sub`` when that is a module."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while (top := stack.pop()) != node:
                    group.append(top)
                group.append(node)
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_project_imports_in_no_circle():
    modules = project_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    found = circles(graph)
    detail = [" → ".join(g) + f"  ({'; '.join(f'{a} imports {b}' for a in g for b in sorted(graph[a] & set(g)))})"
              for g in found]
    assert detail == [], "modules that import one another:\n" + "\n".join(detail)


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_says_why():
    """A function-level import of the project's own module carries a comment on its line or just above its group."""
    modules = project_modules()
    silent = []
    for path in modules.values():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom) and _ours(node):
                    if not _explained(lines, node.lineno - 1):
                        silent.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert silent == [], "say why each of these is imported inside a function:\n" + "\n".join(silent)


def _ours(node: ast.Import | ast.ImportFrom) -> bool:
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
    relative = isinstance(node, ast.ImportFrom) and node.level > 0
    return relative or any(n.split(".")[0] in (*PACKAGES, "app", "settings") for n in names)


def _explained(lines: list[str], at: int) -> bool:
    """A comment on the import's line, or on the line above the run of import lines it belongs to."""
    if "#" in lines[at]:
        return True
    while at > 0 and lines[at - 1].strip().startswith(("from ", "import ")):
        at -= 1
        if "#" in lines[at]:
            return True
    return at > 0 and lines[at - 1].strip().startswith("#")
