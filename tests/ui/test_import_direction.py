"""Imports point one way: ``app.py`` → ``ui/tabs`` → features → ``ui/recordings`` → ``ui/core`` →
``agents``/``tools``/``patches``.

Every module under ``ui/`` is parsed (``ast``, nothing imported), so a lazy import inside a function counts too.
A feature (``ui/compare``, ``ui/fork``, ``ui/share``, ``ui/benchmark``, ``ui/page``, ``ui/poll``, ``ui/mcp.py``) imports
no other feature; what two features need lives in ``ui/core`` (or, for saved runs, ``ui/recordings``).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
