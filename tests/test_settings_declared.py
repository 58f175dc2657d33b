"""The environment variables (settings.py): every one the code names is declared once and read somewhere, the docs'
tables list exactly the declared ones with their default and range, an unknown ``APP_`` name is one warning, and a
bad value one clear error (on a Space: one log line, and the default)."""

from __future__ import annotations

import ast
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import settings
from agents.llm.pricing import PRICE_RANGE
from agents.llm.settings import LLMSettings
from settings import DECLARED, SETTINGS, SettingError, check_environment, read, unknown_names
from ui.core.settings import AppSettings

ROOT = Path(__file__).resolve().parents[1]
CODE = [ROOT / "app.py", *(p for d in ("agents", "tools", "ui", "patches", "bench") for p in (ROOT / d).rglob("*.py"))]
NAME = re.compile(r"\b(?:(?:APP|LLM|BENCH)_[A-Z0-9]+(?:_[A-Z0-9]+)*|HF_TOKEN)\b")


def _strings(path: Path) -> set[str]:
    """The variable names in a module's string constants (docstrings left out: they describe, they do not read)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef
                                                                      | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {m for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
            for m in NAME.findall(n.value)}


def test_every_variable_the_code_names_is_declared_and_every_declared_one_is_read():
    named = {path.relative_to(ROOT).as_posix(): _strings(path) for path in CODE}
    undeclared = {p: sorted(n - set(SETTINGS)) for p, n in named.items() if n - set(SETTINGS)}
    assert undeclared == {}, "declare these in settings.py"
    assert set(SETTINGS) - set().union(*named.values()) == set(), "declared but read nowhere"


def test_each_declaration_is_whole():
    assert len(SETTINGS) == len(DECLARED)
    for s in DECLARED:
        assert s.kind in settings.KINDS and s.help and "\n" not in s.help, s.name
        if s.kind in ("int", "float"):
            assert s.low is not None and s.low <= s.high, s.name
            assert s.default is None or s.low <= s.default <= s.high, s.name
    assert SETTINGS["APP_PRICE_INPUT"].bounds == PRICE_RANGE  # the owner's price and a listing's alike


def _tables(text: str) -> dict[str, dict[str, str]]:
    """Each row of the docs' variable tables, by variable: its cells by column name."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif header[0] == "variable" and not set(cells[0]) <= {"-", " "}:
            rows[cells[0].strip("`")] = dict(zip(header, cells, strict=False))
    return rows


def _starts(cell: str, text: str) -> bool:
    return cell == text or (cell.startswith(text) and not cell[len(text)].isalnum())


def test_the_docs_tables_list_the_declared_variables_with_their_default_and_range():
    rows = _tables((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(SETTINGS)
    for name, row in rows.items():
        s = SETTINGS[name]
        assert s.accepted_text in row["accepted"], name
        if "default" in row:
            assert _starts(row["default"], s.default_text), name
        elif s.default is not None:
            assert re.search(rf"default:? {re.escape(s.default_text)}", row["meaning"]), name


def test_the_readers_take_the_declared_default_and_range():
    assert read("APP_QUEUE_SIZE", {}) == 200 and read("APP_QUEUE_SIZE", {"APP_QUEUE_SIZE": " 7 "}) == 7
    assert read("APP_CONCURRENCY", {}) is None and read("LLM_PROVIDER", {}) == "auto"
    assert read("APP_SECRET", {"APP_SECRET": "  "}) is None
    with pytest.raises(SettingError, match=r"^APP_BODY_MB must be an integer from 1 to 20, got '21'$") as caught:
        read("APP_BODY_MB", {"APP_BODY_MB": "21"})
    assert caught.value.name == "APP_BODY_MB"


def test_an_unknown_app_variable_is_one_warning_naming_the_closest(caplog):
    env = {"APP_CONCURENCY": "5", "APP_QUEUE_SIZE": "10", "LLM_OTHER": "x", "APP_ZZZZZZZZZZZZZZ": "1"}
    with caplog.at_level(logging.WARNING, logger="settings"):
        check_environment(environ=env)
    assert [r.getMessage() for r in caplog.records] == [
        "APP_CONCURENCY is not a setting of this app (did you mean APP_CONCURRENCY?); it is ignored",
        "APP_ZZZZZZZZZZZZZZ is not a setting of this app; it is ignored"]
    assert unknown_names({"APP_MCP": "1", "SPACE_ID": "x"}) == []


def test_a_bad_value_is_one_error_and_on_a_space_one_line_and_the_default(caplog):
    readers = (LLMSettings.from_env, AppSettings.from_env)
    with pytest.raises(SettingError, match=r"^APP_MCP must be one of 1/0, true/false, on/off, yes/no, got '2'$"):
        check_environment(readers, {"APP_MCP": "2"})
    env = {"SPACE_ID": "me/app", "APP_MCP": "2", "APP_PUBLIC_URL": "ftp://x", "APP_PRICE_INPUT": "1"}
    with caplog.at_level(logging.WARNING, logger="settings"):
        check_environment(readers, env)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and all(line.endswith("; using the default") for line in lines)
    assert lines[0].startswith("APP_MCP must be one of") and env == {"SPACE_ID": "me/app"}
    assert AppSettings.from_env(env).mcp is True and LLMSettings.from_env(env).price is None


def test_python_app_py_warns_of_an_unknown_name_then_refuses_a_bad_value():
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "APP_", "BENCH_", "SPACE_"))}
    env = {**clean, "APP_SESION_TTL": "5", "APP_QUEUE_SIZE": "lots", "GRADIO_ANALYTICS_ENABLED": "False"}
    done = subprocess.run([sys.executable, "app.py"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "APP_SESION_TTL is not a setting of this app (did you mean APP_SESSION_TTL?); it is ignored",
        "error: APP_QUEUE_SIZE must be an integer from 0 to 10000, got 'lots'"]
