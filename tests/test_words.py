"""Words in the code: a module docstring says what the module is and why, briefly, and no comment or docstring
carries a date (commit messages hold history).

Every module of ``app.py``, ``agents/``, ``tools/``, ``ui/``, ``patches/`` and ``bench/`` is read, not imported:
docstrings with ``ast``, comments with ``tokenize``. String literals that are data, not docs, are not checked.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "tools", "ui", "patches", "bench")
MODULES = sorted(
    p.relative_to(ROOT).as_posix() for p in [ROOT / "app.py", *(q for d in PACKAGES for q in (ROOT / d).rglob("*.py"))]
)
MAX_MODULE_DOC = 800
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def docstrings(tree: ast.Module) -> list[str]:
    """The docstrings of a module: its own, and those of its classes and functions."""
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))]
    return [doc for doc in (ast.get_docstring(n, clean=False) for n in nodes) if doc]


def comments(source: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_is_short(name):
    doc = ast.get_docstring(ast.parse((ROOT / name).read_text(encoding="utf-8")), clean=False) or ""
    assert len(doc) <= MAX_MODULE_DOC, f"{name}: module docstring of {len(doc)} characters (at most {MAX_MODULE_DOC})"


@pytest.mark.parametrize("name", MODULES)
def test_no_dates_in_words(name):
    source = (ROOT / name).read_text(encoding="utf-8")
    dated = [text for text in docstrings(ast.parse(source)) + comments(source) if DATE.search(text)]
    assert not dated, f"{name}: a date in a comment or docstring: {dated[0][:120]!r}"
