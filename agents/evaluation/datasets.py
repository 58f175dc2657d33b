"""Question sets for the benchmark: the paper's samples in ``data/`` and a user's own CSV/JSONL.

Every set becomes a list of :class:`Item` with a stable ``id`` (what resuming keys on) and
the name of the scorer that judges it, so the runner never needs to know where an item
came from. Problems with a file are :class:`DatasetError` with one readable line.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.comparison import MAX_QUESTION_CHARS, validate_question
from agents.evaluation.scoring import FEVER_LABELS, SCORERS

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
BUILTIN_FILES = {
    "hotpotqa": "hotpotqa_dev_200.jsonl",
    "fever": "fever_dev_200.jsonl",
    "gsm8k": "gsm8k_test_250.jsonl",
    "handwritten": "handwritten.jsonl",
    "arithmetic": "handwritten.jsonl",  # its arithmetic questions only (BUILTIN_CATEGORY): what the toy model answers
}
BUILTIN_CATEGORY = {"arithmetic": "arithmetic"}  # a built-in set that is one category of its file
BUILTIN_SCORERS = {"hotpotqa": "squad", "fever": "fever", "gsm8k": "number", "handwritten": "squad",
                   "arithmetic": "number"}
_PLAIN_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?%?")

# As in the paper's FEVER prompt: the claim is posed as a three-way classification.
FEVER_QUESTION = (
    "Determine whether there is evidence that SUPPORTS or REFUTES the following claim, or whether there is "
    "NOT ENOUGH INFO. Answer with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.\nClaim: {claim}"
)


class DatasetError(ValueError):
    """A dataset that cannot be loaded; ``str(exc)`` is the message to show."""


@dataclass(frozen=True)
class Item:
    """One question with its gold answer and how to score it."""

    id: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    scorer: str = "squad"  # "squad" (EM/F1) | "fever" (label) | "number" (last number)
    category: str = ""
    dataset: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)


def dataset_name(name_or_path: str) -> str:
    """A short name for folders and reports: the built-in name, or the file's stem."""
    return name_or_path if name_or_path in BUILTIN_FILES else Path(name_or_path).stem


def load_dataset(name_or_path: str, n: int | None = None) -> list[Item]:
    """The first ``n`` items (all when ``n`` is None or < 1) of a built-in set or a CSV/JSONL file.

    Built-ins: ``hotpotqa`` and ``fever`` (200 each, in the ReAct paper's sampling order),
    ``gsm8k`` (the first 250 test items), ``handwritten`` and ``arithmetic`` (its arithmetic questions). A user's
    file needs ``question`` and ``answer`` columns; ``id``, ``aliases``, ``category`` and ``scorer`` are optional.
    """
    if name_or_path in BUILTIN_FILES:
        path, name = DATA_DIR / BUILTIN_FILES[name_or_path], name_or_path
        if not path.is_file():
            raise DatasetError(f"the built-in dataset file {path} is missing")
    else:
        path, name = Path(name_or_path).expanduser(), dataset_name(name_or_path)
        if not path.is_file():
            builtins = ", ".join(BUILTIN_FILES)
            raise DatasetError(f"no dataset named {name_or_path!r} and no such file (built-in: {builtins})")
    rows = _read_rows(path)
    if name == "fever" and name_or_path in BUILTIN_FILES:
        items = [_fever_item(row, i) for i, row in enumerate(rows)]
    else:
        default = BUILTIN_SCORERS.get(name_or_path) or _guess_scorer(rows, path)
        items = [_item(row, i, name, default, path) for i, row in enumerate(rows)]
    if category := BUILTIN_CATEGORY.get(name_or_path):
        items = [i for i in items if i.category == category]
    if not items:
        raise DatasetError(f"{path.name}: no items")
    _check_unique(items, path)
    _check_questions(items, path)
    return items[:n] if n and n > 0 else items


def _read_rows(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from None
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        try:
            rows = [{(k or "").strip().lower(): v for k, v in row.items()} for row in reader]
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):
                raise DatasetError(f"{path.name} line {reader.line_num}: a cell is longer than "
                                   f"{csv.field_size_limit():,} characters; questions may have at most "
                                   f"{MAX_QUESTION_CHARS:,}") from None
            raise DatasetError(f"{path.name} line {reader.line_num}: not a valid CSV row ({exc})") from None
        _require_columns([(h or "").strip().lower() for h in reader.fieldnames or []], path)
        return rows
    if suffix in (".jsonl", ".json"):
        if suffix == ".json" and text.lstrip().startswith("["):
            return _json_array(text, path)
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path.name} line {number}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise DatasetError(f"{path.name} line {number}: nested too deeply to be a question") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path.name} line {number}: expected a JSON object")
            rows.append({str(k).strip().lower(): v for k, v in row.items()})
        return rows
    raise DatasetError(f"{path.name}: unsupported file type {suffix or '(none)'}; use .csv or .jsonl")


def _json_array(text: str, path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path.name}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise DatasetError(f"{path.name}: nested too deeply to be a list of questions") from None
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        raise DatasetError(f"{path.name}: expected a list of JSON objects")
    return [{str(k).strip().lower(): v for k, v in row.items()} for row in data]


def _require_columns(columns: list[str], path: Path, where: str = "") -> None:
    missing = [c for c in ("question", "answer") if c not in columns]
    if missing:
        found = ", ".join(c for c in columns if c) or "none"
        raise DatasetError(f"{path.name}{where}: missing column(s) {', '.join(missing)} (found: {found})")


def _item(row: dict[str, Any], index: int, name: str, default_scorer: str, path: Path) -> Item:
    if "question" not in row or "answer" not in row:
        _require_columns(list(row), path, where=f" item {index + 1}")
    for column in ("question", "answer", "id"):
        if isinstance(row.get(column), dict | list | bool):
            kind = type(row[column]).__name__
            raise DatasetError(f"{path.name} item {index + 1}: the {column} must be text, not {kind}")
    question, answer = str(row.get("question") or "").strip(), _text(row.get("answer"))
    if not question or not answer:
        raise DatasetError(f"{path.name} item {index + 1}: empty question or answer")
    scorer = str(row.get("scorer") or default_scorer).strip().lower()
    if scorer not in SCORERS:
        raise DatasetError(f"{path.name} item {index + 1}: unknown scorer {scorer!r} (use one of {', '.join(SCORERS)})")
    return Item(
        id=str(row.get("id") or f"{name}-{index + 1}").strip(),
        question=question,
        answer=answer,
        aliases=_aliases(row.get("aliases")),
        scorer=scorer,
        category=str(row.get("category") or "").strip(),
        dataset=name,
    )


def _fever_item(row: dict[str, Any], index: int) -> Item:
    claim, label = str(row.get("claim") or "").strip(), str(row.get("label") or "").strip().upper()
    if not claim or label not in FEVER_LABELS:
        raise DatasetError(f"fever item {index + 1}: needs a claim and a label in {FEVER_LABELS}")
    return Item(id=str(row.get("id") or f"fever-{index + 1}"), question=FEVER_QUESTION.format(claim=claim),
                answer=label, scorer="fever", dataset="fever", meta={"claim": claim})


def _guess_scorer(rows: list[dict[str, Any]], path: Path) -> str:
    """A user's file: numbers-only gold answers are scored as numbers, FEVER labels as labels, else EM/F1."""
    answers = [_text(r.get("answer")) for r in rows if "answer" in r]
    if answers and all(a.upper() in FEVER_LABELS for a in answers):
        return "fever"
    if answers and all(_is_number(a) for a in answers):
        return "number"
    return "squad"


def _is_number(text: str) -> bool:
    return bool(_PLAIN_NUMBER.fullmatch(text.strip()))


def _text(value: Any) -> str:
    """Gold answers may be numbers in JSON; compare them as the text a person would write."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "" if value is None else str(value).strip()


def _aliases(value: Any) -> tuple[str, ...]:
    """A JSON list, or in a CSV cell a JSON list or ``|``-separated text."""
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text.strip("[]").split(",")
        else:
            value = text.split("|")
    if not isinstance(value, list):
        value = [value]
    return tuple(a for a in (_text(v) for v in value) if a)


def _check_questions(items: list[Item], path: Path) -> None:
    """Compare's rules for every question (length, visible text), whatever the file: no model sees a bad one."""
    bad = [(i, item, why) for i, item in enumerate(items, 1) if (why := validate_question(item.question))]
    if bad:
        lines = "; ".join(f"item {i} (id {item.id[:40]!r}): {why}" for i, item, why in bad[:3])
        more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise DatasetError(f"{path.name}: {len(bad)} question(s) cannot be run — {lines}{more}")


def _check_unique(items: list[Item], path: Path) -> None:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise DatasetError(f"{path.name}: duplicate id {item.id!r} (ids must be unique to resume a run)")
        seen.add(item.id)
