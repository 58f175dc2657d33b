"""Answer text normalisation and the paper's EM / F1, shared by the modes (CoT-SC votes on it), the
benchmark's scoring and one question's correctness (``agents/correctness.py``).

It lives outside ``agents/evaluation/`` so a mode never imports the benchmark package:
``agents.evaluation.scoring`` builds the per-dataset scorers on it. Normalisation, EM and F1 must
stay exactly SQuAD's / HotpotQA's, so Table 1 figures remain comparable.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
NUMBER_TOLERANCE = 1e-4  # absolute, as common GSM8K harnesses use; gold answers are integers


def normalize_answer(text: str | None) -> str:
    """SQuAD normalisation: lower-case, drop ASCII punctuation and a/an/the, collapse whitespace."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str | None, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str | None, gold: str) -> float:
    """HotpotQA's token F1: a yes/no/noanswer on either side scores only on an exact match."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in ("yes", "no", "noanswer") or ref in ("yes", "no", "noanswer")) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)
