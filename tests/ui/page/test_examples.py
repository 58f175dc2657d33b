"""The page's examples (ui/page/examples.py): each one with a stable answer carries it, computed here from first
principles, never by a model."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from agents.correctness import judge
from ui.page.examples import EXAMPLES, find


def fibonacci(n: int) -> int:
    """F(n) with F(1) = F(2) = 1 (the indexing the example's question states)."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def primes_below(n: int) -> int:
    sieve = bytearray([1]) * n
    sieve[0:2] = b"\x00\x00"
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
    return sum(sieve)


COMPUTED = {
    "17 × 23 + 5": str(17 * 23 + 5),
    "987654 × 123457": str(987654 * 123457),
    "Seconds in 13 weeks": str(13 * 7 * 24 * 60 * 60),
    "3.7% of 48,250": str((Decimal("3.7") / 100 * Decimal("48250")).quantize(Decimal("0.01"), ROUND_HALF_UP)),
    "30th Fibonacci number": str(fibonacci(30)),
    "Primes below 10,000": str(primes_below(10_000)),
    "Sort the words": ", ".join(sorted(["pear", "fig", "banana", "kiwi", "apple", "date"], key=lambda w: (len(w), w))),
    # facts, not computations: stable for a century
    "Pride and Prejudice": "Jane Austen",
    "Hitchhiker's author's college": "St John's College, Cambridge",
}


def test_stable_examples_carry_their_computed_answer():
    for label, answer in COMPUTED.items():
        example = find(label)
        assert example is not None, label
        assert example.answer == answer, label
        assert judge(answer, example.answer, example.question).correct


def test_known_values():
    assert fibonacci(1) == fibonacci(2) == 1 and fibonacci(30) == 832040
    assert primes_below(10_000) == 1229 and primes_below(10) == 4


def test_fresh_facts_and_open_questions_have_no_answer():
    for example in EXAMPLES:
        if example.category == "fresh":
            assert example.answer is None, example.label
    assert find("Why is the sky blue?").answer is None
    assert {e.label for e in EXAMPLES if e.answer} == set(COMPUTED)
