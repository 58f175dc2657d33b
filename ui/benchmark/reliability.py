"""The Benchmark tab's reliability pieces: the k slider, the runs a request makes, and the reliability table.

k tries per item give pass@1 and pass^k with their counts and the cost (or tokens) per correct answer
(``agents/evaluation/report.reliability_table``); the form says how many runs a request makes before it starts,
and each figure has one line on the page, with the work it compares to (docs/benchmark.md says more).
"""


from typing import Any

import gradio as gr

from agents.evaluation.report import reliability_table
from agents.evaluation.runner import MAX_K
from patches.gradio_inputs import lenient
from ui.core.handlers import PAGE_EVENT
from ui.core.inputs import range_problem
from ui.core.settings import app_settings

K_LABEL = "k (tries per item)"
HEADERS = reliability_table({"modes": {}})[0]  # the table's columns before any run (one try per item)
FIGURES = f"""\
**The reliability table**, one line per figure and the work it compares to:
- **EM % (pass@1)**: the share of tries answered right; with k = 1 it is the first table's EM (or accuracy), as
  the ReAct paper's Table 1 reports one try per question.
- **pass^k**: the share of items right on *every* one of their k tries, counted once all k have finished
  (τ-bench, Yao et al., 2024, arXiv 2406.12045: there gpt-4o's pass^8 on retail was under 25 %). It says most
  with k > 1 and a temperature above 0 (Settings): 3–5 tries with a real model (up to {MAX_K}).
- **Cost per correct**: the priced tokens of every try, right or wrong, over the correct answers ("—" with none);
  cost beside accuracy, as Kapoor et al. ask of agent benchmarks ("AI Agents That Matter", 2024, arXiv
  2407.01502). **Tokens per correct**: the same in tokens, the only one shown when no price is known.
- **ReAct (worked example)** and **ReAct (placebo example)**, two modes of their own: ReAct with one worked
  example in its prompt, and the same example with each thought replaced by one neutral line ("I will take the
  next step."); nothing else differs (the Prompts tab shows both). Verma et al. ("On the Brittle Foundations of
  ReAct Prompting", 2024, arXiv 2405.13966) found on ALFWorld that such placebo thoughts did about as well.
  Whether that holds for this model on these questions is what the two rows measure: it is not assumed here.
"""


def runs_line(n: Any, k: Any, modes: Any, *, limit: int, visitor_limit: int | None = None) -> str:
    """What a request will run, before it starts: ``10 items × 3 tries × 3 modes = 90 runs``, and the N × k limit.
    Whatever the form sent (a slider's text, nothing) gives a line, never an error."""
    items, tries = _whole(n, 1, 100_000), _whole(k, 1, MAX_K)
    count = len(modes) if isinstance(modes, list | tuple) else 0
    cap = f"{visitor_limit} unless signed in, {limit} signed in" if visitor_limit is not None else f"{limit}"
    return (f"**{_count(items * tries * count, 'run')}** if it starts: {_count(items, 'item')} × "
            f"{_count(tries, 'try', 'tries')} × {_count(count, 'mode')}, each run one model call or more. "
            f"N × k may be at most {cap}.")


def k_problem(k: Any) -> str | None:
    """One line for a k no slider could send (the form's own or an API caller's); None leaves the default."""
    return None if k is None else range_problem(k, K_LABEL, 1, MAX_K, whole=True)


def tries(k: Any) -> int:
    """The tries per item of a k :func:`k_problem` let through (1 when it was left out)."""
    return 1 if k is None else int(float(k))


def _whole(value: Any, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(float(value))))
    except (TypeError, ValueError, OverflowError):
        return low


def _count(number: int, word: str, words: str | None = None) -> str:
    return f"{number} {word if number == 1 else words or word + 's'}"


def k_slider() -> gr.Slider:
    """The form's k: a value no slider could send reaches the handler, whose check names the range."""
    return lenient(gr.Slider(1, MAX_K, value=1, step=1, label=K_LABEL, scale=2,
                             info="For pass^k: 3–5 with a real model"))


def table() -> gr.Dataframe:
    """The reliability table, its real headers before any run, and the line per figure under it."""
    frame = gr.Dataframe(headers=HEADERS, label="Reliability and cost per mode (live)", interactive=False, wrap=True,
                         elem_id="bench-reliability")
    with gr.Accordion("What the reliability table measures", open=True):
        gr.Markdown(FIGURES, elem_id="bench-figures")
    return frame


def _limits(on_space: bool) -> dict[str, Any]:
    """The N × k limits the runs line names: a Space visitor's beside the signed-in one on a Space."""
    limits = app_settings()
    return {"limit": limits.bench_max_n, "visitor_limit": limits.bench_visitor_max_n if on_space else None}


def runs_box(modes: list[str], on_space: bool) -> gr.Markdown:
    """The runs line as the form first stands: 10 items (the N slider's start), one try, ``modes``."""
    return gr.Markdown(runs_line(10, 1, modes, **_limits(on_space)), elem_id="bench-runs")


def wire_runs_line(parts: dict[str, Any], on_space: bool) -> None:
    """The runs line follows the tab's N, k and modes (no queue: it is a line of text)."""
    limits = _limits(on_space)

    def line(n: Any, k: Any, modes: Any) -> str:
        return runs_line(n, k, modes, **limits)

    fields = [parts["n"], parts["k"], parts["modes"]]
    gr.on([f.change for f in fields], line, inputs=fields, outputs=parts["runs"], trigger_mode="always_last",
          **PAGE_EVENT)
