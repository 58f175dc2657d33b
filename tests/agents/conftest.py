"""Fixtures shared by the engine tests and the CLI tests below them."""

from __future__ import annotations

import json
import random

import pytest


@pytest.fixture
def sums(tmp_path):
    """Ten arithmetic questions with their answers, as a JSONL dataset the toy stub model can score on."""
    rng = random.Random(7)
    path = tmp_path / "sums.jsonl"
    rows = []
    for i in range(10):
        a, b, c = rng.randint(11, 99), rng.randint(11, 99), rng.randint(2, 9)
        rows.append({"id": f"s{i}", "question": f"What is {a} * {b} + {c}?", "answer": str(a * b + c)})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path
