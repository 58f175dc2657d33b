"""The loader: the built-in sets in data/, a user's CSV or JSONL, and readable errors."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agents.evaluation.datasets import DATA_DIR, DatasetError, load_dataset
from agents.evaluation.scoring import FEVER_LABELS, fever_label, score


def test_hotpotqa_is_the_papers_sample_in_order():
    items = load_dataset("hotpotqa")
    assert len(items) == 200 and len({i.id for i in items}) == 200
    assert items[0].id == "hotpot-3687" and items[0].answer == "Beyond the Clouds"  # the paper's first draw
    assert all(i.scorer == "squad" and i.dataset == "hotpotqa" for i in items)
    assert [i.id for i in load_dataset("hotpotqa", n=5)] == [i.id for i in items[:5]]


def test_fever_claims_become_classification_questions():
    items = load_dataset("fever")
    assert len(items) == 200
    first = items[0]
    assert first.answer == "REFUTES" and first.scorer == "fever"
    assert "Paramore is not from Tennessee." in first.question
    for label in FEVER_LABELS:
        assert label in first.question
    assert first.meta["claim"] == "Paramore is not from Tennessee."
    assert {i.answer for i in items} == set(FEVER_LABELS)
    assert all(fever_label(i.answer) == i.answer for i in items)


def test_gsm8k_keeps_at_least_200_numeric_answers():
    items = load_dataset("gsm8k", n=0)
    assert len(items) >= 200 and items[0].id == "gsm8k-test-0"
    assert all(i.scorer == "number" for i in items)
    assert score("number", "She makes $18.", items[0].answer).em == 1.0


def test_handwritten_set_covers_every_category_with_stable_answers():
    items = load_dataset("handwritten")
    assert len(items) >= 30
    counts = Counter(i.category for i in items)
    example_buttons = {"knowledge", "fresh", "multihop", "arithmetic", "code"}  # ui/page/examples.py's categories
    assert set(counts) == example_buttons and min(counts.values()) >= 5
    for item in items:
        assert item.question and item.answer
        assert score(item.scorer, item.answer, item.answer, item.aliases).em == 1.0  # gold scores as correct
        for alias in item.aliases:
            assert score(item.scorer, alias, item.answer, item.aliases).em == 1.0
    assert not any("today" in i.question.lower() or "current" in i.question.lower() for i in items)


def test_licences_and_readme_sit_beside_the_data():
    readme = (DATA_DIR / "README.md").read_text()
    for name in ("hotpotqa_dev_200.jsonl", "fever_dev_200.jsonl", "gsm8k_test_250.jsonl", "handwritten.jsonl"):
        assert (DATA_DIR / name).is_file() and name in readme
    assert "CC BY-SA 4.0" in (DATA_DIR / "LICENSE-hotpotqa.txt").read_text()
    assert "CC BY-SA 3.0" in (DATA_DIR / "LICENSE-fever.txt").read_text()
    assert "Copyright (c) 2021 OpenAI" in (DATA_DIR / "LICENSE-gsm8k.txt").read_text()


def test_custom_csv_with_bom_aliases_and_extra_columns(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("\ufeffQuestion,Answer,aliases,notes\n"
                    "Capital of France?,Paris,Paree|City of Light,x\n"
                    "\"Who wrote \"\"Emma\"\"?\",Jane Austen,,y\n", encoding="utf-8")
    items = load_dataset(str(path))
    assert [i.id for i in items] == ["mine-1", "mine-2"]
    assert items[0].aliases == ("Paree", "City of Light") and items[1].question == 'Who wrote "Emma"?'
    assert all(i.scorer == "squad" and i.dataset == "mine" for i in items)


def test_custom_jsonl_with_ids_numbers_and_n(tmp_path):
    path = tmp_path / "sums.jsonl"
    rows = [{"id": f"s{i}", "question": f"What is {i}+{i}?", "answer": 2 * i} for i in range(5)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = load_dataset(str(path), n=3)
    assert [(i.id, i.answer) for i in items] == [("s0", "0"), ("s1", "2"), ("s2", "4")]
    assert items[0].scorer == "number"  # every gold answer is a number


def test_custom_json_array_and_explicit_scorer(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([{"question": "Is water wet?", "answer": "yes", "scorer": "squad"}]))
    assert load_dataset(str(path))[0].scorer == "squad"


@pytest.mark.parametrize(("name", "content", "message"), [
    ("no_answer.csv", "question,reply\nq,a\n", "missing column(s) answer (found: question, reply)"),
    ("empty.csv", "", "missing column(s) question, answer"),
    ("bad.jsonl", '{"question": "q", "answer": "a"}\n{oops\n', "line 2: not valid JSON"),
    ("noq.jsonl", '{"answer": "a"}\n', "missing column(s) question"),
    ("blank.jsonl", '{"question": "q", "answer": ""}\n', "empty question or answer"),
    ("dupes.jsonl", '{"id": "1", "question": "q", "answer": "a"}\n{"id": "1", "question": "r", "answer": "b"}\n',
     "duplicate id '1'"),
    ("weird.jsonl", '{"question": "q", "answer": "a", "scorer": "bleu"}\n', "unknown scorer 'bleu'"),
    ("nothing.jsonl", "\n", "no items"),
    ("data.txt", "question,answer\n", "unsupported file type .txt"),
])
def test_bad_files_give_one_readable_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DatasetError) as info:
        load_dataset(str(path))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unknown_name_lists_the_builtins(tmp_path):
    with pytest.raises(DatasetError, match="no dataset named 'squad2'.*hotpotqa, fever, gsm8k, handwritten"):
        load_dataset("squad2")
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(str(tmp_path / "missing.csv"))


def test_every_question_passes_compares_rules(tmp_path):
    from agents.evaluation.datasets import DatasetError, load_dataset

    long_csv = tmp_path / "long.csv"
    long_csv.write_text('question,answer\nok?,1\n"' + "x" * 2001 + '",2\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"item 2 \(id 'long-2'\): That question is 2,001 characters long"):
        load_dataset(str(long_csv))
    huge = tmp_path / "huge.csv"
    huge.write_text('question,answer\n"' + "y" * 140_000 + '",1\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="a cell is longer than 131,072 characters"):
        load_dataset(str(huge))
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="nested too deeply"):
        load_dataset(str(deep))
