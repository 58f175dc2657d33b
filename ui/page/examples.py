"""Example questions, grouped by what they demonstrate — plain data, reused outside the UI.

Each category names the mode expected to shine (or to fail), so a teacher can pick a row of
buttons and tell the class in advance what to look for. The benchmark dataset reuses
:data:`CATEGORIES` (ids are stable; labels and blurbs are for people).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.modes.acting import REACT
from agents.modes.codeact import CODEACT


@dataclass(frozen=True)
class Category:
    id: str
    label: str
    blurb: str  # what the category demonstrates, one line


@dataclass(frozen=True)
class Example:
    category: str  # a Category.id
    label: str  # short button text
    question: str
    demonstrates: str  # what to watch for in the panels
    answer: str | None = None  # the expected answer when it is stable (None: a fresh fact, or no single answer)
    modes: tuple[str, ...] = ()  # the modes its button puts on screen (the picker), when the example is about them
    toy: bool = False  # the built-in toy model answers it (Act and ReAct, through the calculator): a claim
    # tests/ui/page/test_toy_examples.py checks by running every example through the toy


CATEGORIES: tuple[Category, ...] = (
    Category("knowledge", "Knowledge the model already has",
             "Think is enough: the tools add calls and time, not accuracy."),
    Category("fresh", "Fresh facts",
             "Needs search or weather: Think-only can only guess or admit it does not know."),
    Category("multihop", "Multi-hop lookups",
             "ReAct wins: each observation decides the next lookup; Act-only loses the thread."),
    Category("arithmetic", "Arithmetic traps",
             "The calculator beats mental arithmetic: watch Think-only get close but wrong."),
    Category("code", "Code",
             "The Python REPL runs the program instead of imagining its output."),
    Category("composed", "Several lookups, one program",
             "CodeAct calls the tools from one program: one step where ReAct takes one per call."),
)

REACT_CODEACT = (REACT.id, CODEACT.id)  # "ReAct against CodeAct": one step per call, or one program

EXAMPLES: tuple[Example, ...] = (
    # knowledge
    Example("knowledge", "Pride and Prejudice",
            "Who wrote the novel 'Pride and Prejudice'?",
            "All three answer; Act/ReAct spend a search to confirm what Think already knew.", "Jane Austen"),
    Example("knowledge", "Gold's symbol",
            "What is the chemical symbol for gold, and which Latin word does it come from?",
            "Textbook knowledge: Think answers in one call."),
    Example("knowledge", "Why is the sky blue?",
            "In two sentences: why is the sky blue?",
            "An explanation, not a fact to look up: tools do not help."),
    # fresh facts
    Example("fresh", "Weather in Paris now",
            "What is the weather in Paris right now?",
            "Think cannot know today's weather; Act and ReAct call get_weather."),
    Example("fresh", "Oslo vs Helsinki",
            "Is it colder right now in Oslo or in Helsinki?",
            "Two weather calls and a comparison."),
    Example("fresh", "Latest Python release",
            "What is the latest stable release of Python, and when was it released?",
            "The model's training data is out of date; search is not."),
    # multi-hop
    Example("multihop", "Hitchhiker's author's college",
            "Which college did the author of 'The Hitchhiker's Guide to the Galaxy' attend, and in which city is it?",
            "Find the author first, then the college: the second lookup depends on the first.",
            "St John's College, Cambridge"),
    Example("multihop", "Where the Rhine ends",
            "What is the population of the capital of the country where the Rhine flows into the sea?",
            "Three hops: river → country → capital → population."),
    Example("multihop", "Parasite's director's birthplace",
            "In which city was the director of the film 'Parasite' (2019) born, and what is its population?",
            "ReAct's thoughts carry the director's name into the next search."),
    # arithmetic
    Example("arithmetic", "17 × 23 + 5",
            "What is 17 * 23 + 5?",
            "Small but exact: Think often gets it right, sometimes not.", "396", toy=True),
    Example("arithmetic", "987654 × 123457",
            "What is 987654 * 123457?",
            "Twelve digits: mental multiplication fails, the calculator does not.", "121932799878", toy=True),
    Example("arithmetic", "Seconds in 13 weeks",
            "How many seconds are there in 13 weeks?",
            "A unit chain (weeks → days → hours → seconds) where one slip ruins the answer.", "7862400",
            toy=True),
    Example("arithmetic", "3.7% of 48,250",
            "What is 3.7% of 48,250, rounded to two decimals?",
            "Percentages and rounding: exact arithmetic matters.", "1785.25", toy=True),
    # code
    Example("code", "30th Fibonacci number",
            "What is the 30th Fibonacci number (with F(1) = F(2) = 1)? Compute it with code.",
            "A loop the REPL runs in milliseconds.", "832040"),
    Example("code", "Primes below 10,000",
            "How many prime numbers are there below 10,000?",
            "Counting is hard in your head and trivial in Python.", "1229"),
    Example("code", "Sort the words",
            "Sort these words by length, then alphabetically: pear, fig, banana, kiwi, apple, date.",
            "A small program beats reasoning about ties.", "fig, date, kiwi, pear, apple, banana"),
    # several tool calls composed in one program (CodeAct)
    Example("composed", "Warmest of three cities",
            "Which is the warmest right now: Lisbon, Madrid or Rome? Give the city and its temperature.",
            "CodeAct loops over the three cities in one program and compares; ReAct spends a step per city.",
            modes=REACT_CODEACT),
    Example("composed", "Average of three heights",
            "What is the average height in metres of the Eiffel Tower, the Statue of Liberty and the Leaning "
            "Tower of Pisa?",
            "Three lookups and a mean: CodeAct keeps the numbers in variables; ReAct must carry them in its "
            "thoughts.", modes=REACT_CODEACT),
)


def by_category() -> list[tuple[Category, list[Example]]]:
    """Categories in display order, each with its examples."""
    return [(c, [e for e in EXAMPLES if e.category == c.id]) for c in CATEGORIES]


def toy_category() -> Category | None:
    """The first category whose examples the toy model all answers (the page opens on it when the toy runs)."""
    return next((c for c, items in by_category() if items and all(e.toy for e in items)), None)


def find(label_or_question: str) -> Example | None:
    """The example with this button label or question, if any."""
    return next((e for e in EXAMPLES if label_or_question in (e.label, e.question)), None)
