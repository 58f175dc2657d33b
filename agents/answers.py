"""Answer text normalisation shared by the modes (CoT-SC votes on it) and the benchmark's scoring.

It lives outside ``agents/evaluation/`` so a mode never imports the benchmark package:
``agents.evaluation.scoring`` builds the paper's EM / F1 on top of it, and must stay exactly
SQuAD's, so Table 1 figures remain comparable.
"""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str | None) -> str:
    """SQuAD normalisation: lower-case, drop ASCII punctuation and a/an/the, collapse whitespace."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())
