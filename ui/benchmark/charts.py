"""The Benchmark tab's charts: one group of bars per mode, a colour per source (this run, the paper).

``gr.BarPlot`` stacks the bars of one x value and cannot group them, so the charts are Vega-Lite specs
shown by ``gr.Plot`` (with the Vega that Gradio's page bundles: no request leaves the app). The bars
are horizontal: each mode's name gets a line of its own, so no label can run into another however
many modes a benchmark has and however narrow the screen; the value axis has a few ticks whose labels keep
apart (short ones for tokens: 1.5k). The data is
:func:`agents.evaluation.report.chart_data`'s long format (``mode``, ``series``, ``value``).
"""

from __future__ import annotations

import json
from typing import Any

from gradio.components.plot import PlotData

from agents.evaluation.report import chart_data

THIS_RUN = "this run"
RUN_COLOUR = "#4f46e5"  # this run: the page's indigo
PAPER_COLOURS = ("#94a3b8", "#f59e0b", "#10b981")  # the ReAct paper's figures, then later papers' (Reflexion)
BAR_PX = 16  # one bar's thickness; a mode's group is one bar per source
VALUE_TICKS = 4  # about so many ticks on the value axis (Vega: one per 40 px, crowded for "12k" on a phone)
LABEL_GAP_PX = 8  # the least space between two of its labels
FONT = "ui-sans-serif, system-ui, Segoe UI, Roboto, Helvetica, Arial, sans-serif"  # the page's (ui/page/parts.theme)


def score_chart(summary: dict[str, Any]) -> PlotData:
    """Score (%) per mode, each mode's bar beside its paper's figure where the paper has one."""
    title = "Accuracy %" if summary.get("metric") == "accuracy" else "EM %"
    return grouped_bars(_records(chart_data(summary, "score")), value_title=title, domain=(0, 100))


def tokens_chart(summary: dict[str, Any]) -> PlotData:
    """Mean tokens per pair, per mode."""
    return grouped_bars(_records(chart_data(summary, "tokens")), value_title="Mean tokens per pair",
                        value_format="~s")  # 1.5k, 12k: short labels


def grouped_bars(rows: list[dict[str, Any]], *, value_title: str, domain: tuple[float, float] | None = None,
                 value_format: str | None = None) -> PlotData:
    """A Vega-Lite spec of horizontal bars: a row per mode (in ``rows``' order), a bar per series inside it.

    The value axis has few ticks and keeps its labels :data:`LABEL_GAP_PX` apart (Vega drops every other one until
    they are). Its last label is centred on its tick, not flushed to the edge: Vega moves a flushed label after its
    overlap check, so on a narrow chart it ran into the one before ("850900")."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    series = list(dict.fromkeys([*(r["series"] for r in rows if r["series"] == THIS_RUN),
                                 *(r["series"] for r in rows)]))
    papers = [s for s in series if s != THIS_RUN]
    colours = [RUN_COLOUR if s == THIS_RUN else PAPER_COLOURS[papers.index(s) % len(PAPER_COLOURS)] for s in series]
    axis: dict[str, Any] = {"tickCount": VALUE_TICKS, "labelOverlap": True, "labelSeparation": LABEL_GAP_PX,
                            "labelFlush": False}
    if value_format:
        axis["format"] = value_format
    value: dict[str, Any] = {"field": "value", "type": "quantitative", "title": value_title, "axis": axis}
    if domain is not None:
        value["scale"] = {"domain": list(domain)}
    spec = {
        "data": {"values": rows},
        "mark": {"type": "bar", "tooltip": True, "cornerRadiusEnd": 2},
        "encoding": {
            "y": {"field": "mode", "type": "nominal", "sort": modes, "title": None,
                  "axis": {"labelLimit": 220, "labelFontSize": 13}},
            "yOffset": {"field": "series", "type": "nominal", "sort": series},
            "x": value,
            "color": {"field": "series", "type": "nominal", "title": None,
                      "scale": {"domain": series, "range": colours},
                      "legend": {"orient": "bottom", "direction": "horizontal", "labelFontSize": 12}},
        },
        "height": {"step": BAR_PX},  # per bar (the offset band): a mode's group is a bar per source
        "width": "container",
        "autosize": {"type": "fit-x", "contains": "padding"},
        "usermeta": {"embedOptions": {"renderer": "svg"}},  # text a reader (and a test) can select and measure
        "config": {"font": FONT, "view": {"stroke": None}, "axis": {"labelColor": "#374151", "titleColor": "#374151"}},
    }
    return PlotData(type="altair", plot=json.dumps(spec))


def _records(frame: Any) -> list[dict[str, Any]]:
    """``chart_data``'s rows as plain dicts (a DataFrame when pandas is there, which it is with Gradio)."""
    return frame.to_dict("records") if hasattr(frame, "to_dict") else list(frame)
