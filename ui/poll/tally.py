"""What the teacher's screen shows of a room (join box, live bars, the reveal), the reveal read from a run's export,
and the tallies as CSV. Pure functions of a room's public data: every text from a visitor or a model is escaped.

The reveal puts each mode's ✓/✗ beside its share of the votes — "58 % predicted Think-only — wrong" — and the
last two rounds side by side, which is the shift peer instruction is after.
"""

from __future__ import annotations

import csv
import io
import ipaddress
import json
import re
from html import escape
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ui.poll.qr import qr_svg
from ui.poll.room import NONE
from ui.recordings.reader import read_text

SHORT_ANSWER = 80  # characters of a final answer a phone shows
RUN_LINK = re.compile(r"\(https?://[^\s()?]+\?(?:[^\s()]*&)?run=([A-Za-z0-9_-]{16,64})\)")


def join_url(page_url: str, code: str) -> str:
    """The page's own address with ``?room=CODE`` (any other query or fragment dropped)."""
    parts = urlsplit(page_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"room={code}", ""))


STYLE = """<style>
.poll-join { display: flex; gap: 24px; align-items: center; flex-wrap: wrap; }
.poll-code-box { flex: 1 1 200px; min-width: 0; } .poll-code-box a { overflow-wrap: anywhere; }
.poll-qr svg { display: block; }
.poll-code { font: 700 3rem/1.1 ui-monospace, monospace; letter-spacing: .12em; margin: 6px 0; }
.poll-rounds { display: flex; gap: 24px; flex-wrap: wrap; }
.poll-round { flex: 1 1 260px; min-width: 240px; }
.poll-round-head, .poll-state { font-weight: 600; margin: 6px 0; }
.poll-row { display: grid; grid-template-columns: minmax(10em, 2fr) 3fr 3em; gap: 8px; align-items: center;
            margin: 4px 0; }
.poll-bar { height: 16px; background: rgba(127, 127, 127, .2); border-radius: 5px; overflow: hidden; }
.poll-bar span { display: block; height: 100%; background: var(--color-accent, #ea580c); }
.poll-n { text-align: right; font-variant-numeric: tabular-nums; }
.poll-right { color: #15803d; font-weight: 700; } .poll-wrong { color: #b91c1c; font-weight: 700; }
.poll-notice { font-weight: 400; } .poll-problem { color: #b91c1c; font-weight: 600; }
.poll-hidden { margin: 4px 0; } .poll-choices { opacity: .85; }
.poll-warn { color: #b91c1c; font-weight: 600; margin: 8px 0 0; }
</style>"""


LOOPBACK = ("Phones cannot open this link: {host} is this computer's own address. Set APP_PUBLIC_URL to the "
            "address phones use (this computer's on the room's network, such as http://192.168.1.20:7860, and start "
            "the app with GRADIO_SERVER_NAME=0.0.0.0; or the Space's).")


def loopback_host(link: str) -> str | None:
    """The link's host when it is this computer's own (127.0.0.1, localhost, ::1, 0.0.0.0), which no phone
    reaches; else None."""
    host = (urlsplit(link).hostname or "").lower()
    if host in ("localhost", "0.0.0.0") or host.endswith(".localhost"):
        return host
    try:
        return host if ipaddress.ip_address(host).is_loopback else None
    except ValueError:
        return None


def join_html(code: str, link: str) -> str:
    """The code in large letters, the link, and its QR code (at least 240 px: a quarter of 768 and more); a link
    no phone can open says so, and what to set."""
    host = loopback_host(link)
    warn = f'<p class="poll-warn" id="poll-loopback">{escape(LOOPBACK.format(host=host))}</p>' if host else ""
    return (f'{STYLE}<div class="poll-join"><div class="poll-qr" role="img" aria-label="QR code of the join link">'
            f'{qr_svg(link)}</div><div class="poll-code-box"><div>Join on your phone:</div>'
            f'<div class="poll-code" id="poll-code">{escape(code)}</div>'
            f'<div><a id="poll-link" href="{escape(link)}" target="_blank" rel="noopener">{escape(link)}</a></div>'
            f'</div></div>{warn}')


def _title(room: dict[str, Any], choice: str) -> str:
    if choice == NONE:
        return "None of them"
    return next((m["title"] for m in room["modes"] if m["id"] == choice), choice)


def right_of(room: dict[str, Any], choice: str, index: int = -1) -> bool | None:
    """Whether predicting ``choice`` was right in round ``index``, once revealed (None while a mode is unmarked)."""
    reveal = room["rounds"][index].get("reveal") or {}
    if not reveal:
        return None
    marks = [r.get("correct") for r in reveal.values()]
    if choice == NONE:
        return None if None in marks else not any(marks)
    mark = (reveal.get(choice) or {}).get("correct")
    return mark if isinstance(mark, bool) else None


HIDDEN = "The class's split shows when the votes are locked: each student commits to a prediction first."


def round_html(room: dict[str, Any], index: int, show_split: bool = False) -> str:
    """One round's bars: a row per choice with its count and share, and after the reveal its ✓/✗. While the round
    is open only how many voted shows, unless the teacher shows the split (students who read it before they
    commit copy the class instead of predicting)."""
    ballot = room["rounds"][index]
    total = ballot["total"]
    state = "locked" if ballot["locked"] else "open"
    rows = [f'<div class="poll-round-head">Round {index + 1} · {total} voted · {state}</div>']
    if not ballot["locked"] and not show_split:
        names = " · ".join(escape(_title(room, c)) for c in room["choices"])
        rows.append(f'<div class="poll-hidden">{escape(HIDDEN)}</div><div class="poll-choices">{names}</div>')
        return f'<div class="poll-round">{"".join(rows)}</div>'
    for choice in room["choices"]:
        n = ballot["tally"].get(choice, 0)
        pct = round(100 * n / total) if total else 0
        right = right_of(room, choice, index)
        verdict = "" if right is None else (' — <span class="poll-right">✓ right</span>' if right
                                            else ' — <span class="poll-wrong">✗ wrong</span>')
        line = f"{pct} % predicted {escape(_title(room, choice))}{verdict}"
        rows.append(f'<div class="poll-row" data-choice="{escape(choice)}"><div class="poll-name">{line}</div>'
                    f'<div class="poll-bar"><span style="width:{pct}%"></span></div>'
                    f'<div class="poll-n">{n}</div></div>')
    return f'<div class="poll-round">{"".join(rows)}</div>'


STATE_LINES = {"open": "Voting is open.", "locked": "Voting is locked: press Run.",
               "running": "Voting is locked; the run is on screen.", "revealed": "Revealed on the phones."}


def tally_html(room: dict[str, Any] | None, problem: str = "", show_split: bool = False) -> str:
    """The live tally: the last two rounds side by side (an open one's split only when ``show_split``), the room's
    state, and the reveal's answers."""
    if room is None:
        return f'<div class="poll-tally"><p class="poll-problem">{escape(problem)}</p></div>' if problem else ""
    rounds = "".join(round_html(room, i, show_split)
                     for i in range(max(0, len(room["rounds"]) - 2), len(room["rounds"])))
    notice = f' <span class="poll-notice">{escape(room["notice"])}</span>' if room.get("notice") else ""
    answers = ""
    if room.get("reveal"):
        items = []
        for mode, r in room["reveal"].items():
            mark = {True: "✓", False: "✗"}.get(r.get("correct"), "?")
            items.append(f"<li><b>{escape(_title(room, mode))}</b>: {escape(r.get('answer') or '(no answer)')} "
                         f"{mark}</li>")
        answers = f'<ul class="poll-answers">{"".join(items)}</ul>'
    return (f'<div class="poll-tally" data-version="{room["version"]}" data-state="{room["state"]}">'
            f'<div class="poll-state">{STATE_LINES.get(room["state"], "")}{notice}</div>'
            f'<div class="poll-rounds">{rounds}</div>{answers}'
            f'{f"<p class=poll-problem>{escape(problem)}</p>" if problem else ""}</div>')


def short(text: Any) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= SHORT_ANSWER else line[:SHORT_ANSWER - 1] + "…"


def reveal_of(export: dict[str, Any], modes: list[str], marks: list[str] | None = None) -> tuple[dict, str]:
    """Each polled mode's short answer and ✓/✗ from a run's export (its ``verdicts`` when an expected answer was
    given, else the teacher's ``marks``; None when neither), and a notice line for a stopped or failed run."""
    rows = {r.get("mode"): r for r in (export.get("comparison") or {}).get("rows") or [] if isinstance(r, dict)}
    verdicts = export.get("verdicts") if isinstance(export.get("verdicts"), dict) else {}
    reveal, failed = {}, []
    for mode in modes:
        row = rows.get(mode)
        if row is None:
            continue
        verdict = verdicts.get(mode) if isinstance(verdicts.get(mode), dict) else {}
        correct = verdict.get("correct") if isinstance(verdict.get("correct"), bool) else None
        if marks is not None:
            correct = mode in marks
        if row.get("error") and not row.get("answer"):
            failed.append(mode)
            answer = f"failed: {short(row.get('error'))}"
        else:
            answer = short(row.get("answer"))
        reveal[mode] = {"answer": answer, "correct": correct}
    notice = ""
    if export.get("stopped"):
        notice = "The teacher stopped the run: some modes may not have finished."
    elif failed and len(failed) == len(reveal):
        notice = "The run failed: no mode reached an answer."
    elif failed:
        notice = f"{len(failed)} mode{'s' if len(failed) > 1 else ''} failed in this run."
    return reveal, notice


def read_export(path: str | None) -> dict[str, Any] | None:
    """A run's JSON export (this app's, or a replayed file of at most 20 MB), or None when there is none or it does
    not read."""
    if not path:
        return None
    try:
        data = json.loads(read_text(path))
    except (OSError, ValueError):  # RecordingError is a ValueError: missing, or too large
        return None
    return data if isinstance(data, dict) else None


def run_link_in(markdown: Any) -> str | None:
    """The share link in the Share line's Markdown as ``?run=<id>``, if it holds one: a phone opens it on the page
    it is on (this app, whatever its address), so no line the teacher's page sends can point a phone elsewhere."""
    found = RUN_LINK.search(markdown) if isinstance(markdown, str) else None
    return f"?run={found.group(1)}" if found else None


def tallies_csv(room: dict[str, Any]) -> str:
    """Counts only: a row per round and choice (round, choice, mode title, votes, share %, right)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["round", "choice", "title", "votes", "share_pct", "right"])
    for index, ballot in enumerate(room["rounds"]):
        for choice in room["choices"]:
            n = ballot["tally"].get(choice, 0)
            right = right_of(room, choice, index)
            writer.writerow([index + 1, choice, _title(room, choice), n,
                             round(100 * n / ballot["total"]) if ballot["total"] else 0,
                             "" if right is None else ("yes" if right else "no")])
    return out.getvalue()
