"""Tables for the terminal (``python -m agents eval``): the summary's and the grounding shares'."""

from __future__ import annotations

from typing import Any


def text_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """A table's lines for the terminal: columns aligned, "–" for a missing number."""
    cells = [headers] + [["–" if v is None else (f"{v:g}" if isinstance(v, float) else str(v)) for v in row]
                         for row in rows]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
    return ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                  strict=True)))
            for row in cells]
