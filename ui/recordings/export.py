"""Export a run: the JSON (every event with its time offset, the settings, never a token) and a Markdown report.

``ui/recordings/reader.py`` reads these files back.
"""

from __future__ import annotations

import re
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gradio.utils import get_upload_folder

from agents import strict_json
from agents.alignment import step_map
from agents.evidence import verdict_line
from agents.followup import FollowupError
from agents.grounding import Claim, counts
from agents.llm import pricing
from agents.llm.settings import LLMSettings
from agents.request import RunRequest
from agents.trace import Trace
from ui.core.step_map import map_markdown
from ui.core.table import agreement, comparison_rows
from ui.core.verdicts import comparison_table, export_fields, verdicts
from ui.recordings.reader import MAX_REPLAY_BYTES, traces_in

FORMAT = "think-act-react/run@1"
# Inside Gradio's own file cache: Gradio serves a file from there as it is, where a file from anywhere else is
# hashed, its folder made and the file copied into that cache (``Block.async_move_resource_to_block_cache``) on
# the event loop, for every finished run — syscalls that each wait for the GIL while 150 streams are live.
EXPORT_DIR = Path(get_upload_folder()) / "think-act-react-exports"
EXPORT_TTL_S = 3600.0
_last_cleanup = 0.0


def backend_description(settings: LLMSettings) -> str:
    """``settings.describe()`` minus any credentials written into a URL (``//user:pass@host``)."""
    return settings.redact(re.sub(r"//[^/@\s]+@", "//", settings.describe()))


def settings_block(settings: LLMSettings, request: RunRequest, tools: Iterable[str]) -> dict[str, Any]:
    """The export's settings: what a reader needs to reproduce the run (no token, ever). The modes' run options
    (Reflexion's trials) are under ``options``, which a replay puts back on the page."""
    return {
        "model": settings.model,
        "backend": backend_description(settings),
        "provider": None if settings.base_url else settings.provider,
        "protocol": request.protocol,
        "max_steps": request.max_steps,
        "temperature": request.temperature,
        "tools": list(tools),
        **({"options": dict(request.options)} if request.options else {}),
        **({"page_tools": [p.to_dict() for p in request.page_tools]} if request.page_tools else {}),  # their source
        # the price of the run's model as its traces use it (the server's listing, then the owner's)
        **({"price": price.to_dict()} if (price := pricing.price_of(settings.model, settings.price)) is not None
           else {}),
    }


def export_dict(question: str, selection: str, traces: dict[str, Trace], settings: dict[str, Any],
                stopped: bool = False, expected: str | None = None,
                claims: Mapping[str, Sequence[Claim]] | None = None,
                evidence: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The export's JSON; ``claims``: each mode's marked claims as the run's map has them (a follow-up's earlier
    turns counted), else made from the traces' map; written under ``grounding``, each with its source's row;
    ``evidence``: the evidence tests run on the page, by the rerun's panel (``agents/evidence.py``)."""
    claims = claims if claims is not None else step_map(traces).claims
    claims = {m: list(claims.get(m, ())) for m in traces}
    return {
        "format": FORMAT,
        "question": question,
        "selection": selection,
        "created_at": datetime.fromtimestamp(time.time(), timezone.utc).isoformat(timespec="seconds"),
        "stopped": stopped,
        "settings": settings,
        "elapsed_s": round(max((t.elapsed_s for t in traces.values()), default=0.0), 4),
        "comparison": {"rows": comparison_rows(traces, {m: counts(c) for m, c in claims.items()}),
                       "agreement": agreement(traces, {m: v.correct for m, v in verdicts(traces, expected,
                                                                                         question).items()} or None)},
        **export_fields(traces, expected, question),  # "expected" and each mode's ✓/✗ verdict
        "grounding": {m: {"counts": counts(c), "claims": [claim.to_dict() for claim in c]} for m, c in claims.items()},
        **({"evidence": {p: dict(b) for p, b in evidence.items() if p in traces}} if evidence else {}),
        "traces": {mode: trace.to_dict() for mode, trace in traces.items()},
    }


def export_markdown(data: dict[str, Any], traces: dict[str, Trace] | None = None) -> str:
    """A readable report: question, settings, comparison table, then each mode's transcript."""
    traces = traces if traces is not None else traces_in(data)
    s = data.get("settings", {})
    lines = [
        "# Think · Act · ReAct — run report",
        "",
        f"**Question:** {data.get('question', '')}",
        "",
        f"**Model:** {s.get('backend', s.get('model', '?'))} · protocol `{s.get('protocol', '?')}` · "
        f"max steps {s.get('max_steps', '?')} · temperature {s.get('temperature', '?')} · "
        f"tools: {', '.join(s.get('tools') or []) or 'none'}",
        *_price_line(s.get("price")),
        *_page_tools_lines(s.get("page_tools")),
        f"**Date:** {data.get('created_at', '')}" + (" · stopped by the user" if data.get("stopped") else ""),
        "",
        "## Comparison",
        "",
        comparison_table(traces, data.get("expected") if isinstance(data.get("expected"), str) else None,
                         claims=_claim_counts(data.get("grounding"))),
        "",
        *(["## Step by step", "", shown] if (shown := map_markdown(step_map(traces), _marks(data))) else []),
        *_evidence_lines(data.get("evidence")),
    ]
    for trace in traces.values():
        lines += [trace.to_markdown(), ""]
    return "\n".join(lines).rstrip() + "\n"


def _evidence_lines(saved: Any) -> list[str]:
    """"## Evidence tests" and one line per test the export keeps (a panel id, then its verdict line)."""
    lines = [f"- `{panel}`: {line}" for panel, block in (saved.items() if isinstance(saved, dict) else ())
             if (line := verdict_line(block))]
    return ["## Evidence tests", "", *lines, ""] if lines else []


def _marks(data: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Each mode's claims as the ``grounding`` block holds them: ``(text, mark)``."""
    blocks = data.get("grounding") if isinstance(data.get("grounding"), dict) else {}
    return {m: [(str(c.get("text")), str(c.get("mark"))) for c in b.get("claims") or [] if isinstance(c, dict)]
            for m, b in blocks.items() if isinstance(b, dict)}


def _claim_counts(saved: Any) -> dict[str, dict[str, int]]:
    """The ``grounding`` block's counts per mode (a mode it lacks is counted from its trace)."""
    blocks = saved if isinstance(saved, dict) else {}
    return {m: {k: v for k, v in b["counts"].items() if isinstance(v, int)} for m, b in blocks.items()
            if isinstance(b, dict) and isinstance(b.get("counts"), dict)}


def _page_tools_lines(saved: Any) -> list[str]:
    """The source of each tool written on the page that the run had (``tools/page_tools.py``)."""
    tools = [t for t in saved if isinstance(t, dict)] if isinstance(saved, list) else []
    return [f"\n**Tool written on the page:** `{t.get('name')}`: {t.get('description')}\n\n```python\n"
            f"{str(t.get('source', '')).replace('```', '` ``')}\n```\n" for t in tools]


def _price_line(saved: Any) -> list[str]:
    """The report's price line, when the run had a price (costs in the table are tokens × this price)."""
    price = pricing.Price.from_dict(saved)
    if price is None:
        return []
    return [f"**Price:** ${price.input:g} / ${price.output:g} per million tokens in / out ({price.source})"]


def write_exports(data: dict[str, Any], directory: Path | None = None,
                  traces: dict[str, Trace] | None = None) -> tuple[str, str]:
    """Write ``run-<time>.json`` (one event per line) and ``.md`` into a fresh folder; returns both paths."""
    base = directory or EXPORT_DIR
    _cleanup(base)
    folder = base / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path, md_path = folder / f"run-{stamp}.json", folder / f"run-{stamp}.md"
    json_path.write_text(to_json(data), encoding="utf-8")
    md_path.write_text(export_markdown(data, traces), encoding="utf-8")
    return str(json_path), str(md_path)


def json_of(files: Any) -> str | None:
    """The ``.json`` among a File component's export files (a path, Gradio's file dicts, or a list of them)."""
    for f in files if isinstance(files, list) else [files]:
        path = f.get("path") if isinstance(f, dict) else getattr(f, "path", f)
        if isinstance(path, str) and path.endswith(".json"):
            return path
    return None


def own_export(value: Any) -> Any:
    """``/compare``'s ``previous`` as the page sends it — its own export files — read into the export's JSON;
    any other value as it is. Only a file in this app's export folder is read (a forged path is refused)."""
    path = json_of(value) if isinstance(value, list) or (isinstance(value, dict) and "path" in value) else None
    if path is None:
        return value
    file = Path(path).resolve()
    if not file.is_relative_to(EXPORT_DIR.resolve()) or not file.is_file():
        raise FollowupError("The earlier turn's export is gone (exports last an hour): ask the question anew.")
    if file.stat().st_size > MAX_REPLAY_BYTES:
        raise FollowupError("The earlier turn's export is too large to continue.")
    try:
        return strict_json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        raise FollowupError("The earlier turn's export is not readable: ask the question anew.") from None


def to_json(data: dict[str, Any]) -> str:
    """Compact JSON with one event per line: a quarter of the cost of ``indent=1``, still diffable."""
    text = strict_json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace(',{"t":', ',\n{"t":')


def _cleanup(base: Path) -> None:
    """Drop export folders older than an hour (best effort: a Space's disk is small); every few minutes."""
    global _last_cleanup
    if not base.is_dir() or time.monotonic() - _last_cleanup < 300:
        return
    _last_cleanup = time.monotonic()
    cutoff = time.time() - EXPORT_TTL_S
    for child in base.iterdir():
        try:
            if child.is_dir() and child.stat().st_mtime < cutoff:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:
            pass
