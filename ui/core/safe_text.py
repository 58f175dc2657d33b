"""Untrusted text (model replies, tool output, recordings, an expected answer) as Markdown that is shown, never
run, and never makes the page fetch anything.

HTML is escaped; an image becomes ``!`` and a plain link; code is left as written but inert (:func:`inert`):
every ``<`` that would open a tag gets a zero-width space, and mermaid fences are broken the same way,
because Gradio's Markdown pastes ``$$…$$`` and mermaid blocks into the page as HTML.
"""

from __future__ import annotations

import re

# Closed fenced blocks (``` or ~~~ at a line start, closed by a fence at least as long) and inline
# code spans (single backtick run, one line, not escaped). Markdown renders code literally, so only text
# outside code is escaped; code is made inert instead, so a bound misjudged here still shows a tag as text.
_CODE = re.compile(
    r"(?P<fence>^[ ]{0,3}(?P<tick>`{3,}|~{3,})[^\n]*\n.*?^[ ]{0,3}(?P=tick)[`~]*[ \t]*$)"
    r"|(?P<span>(?<!\\)(?P<bt>`+)(?!`)[^`\n]+?(?<!`)(?P=bt)(?!`))",
    re.MULTILINE | re.DOTALL,
)


ZWSP = "\u200b"  # zero-width space: breaks a tag, an image or a mermaid block without changing what is shown
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_MERMAID = re.compile(r"(?<=[`~])([ \t]*)(?=mermaid)", re.IGNORECASE)


def no_fetch(text: str) -> str:
    """Markdown images (inline or by reference) as a ``!`` and a plain link, and no mermaid diagram: nothing in
    it is fetched or drawn by itself (the link is the viewer's to follow)."""
    return _MERMAID.sub(r"\1" + ZWSP, text.replace("![", "!" + ZWSP + "["))


def inert(text: str) -> str:
    """Text shown verbatim (code) that no renderer can turn into an element: no tag (``<`` + a zero-width
    space when a tag name would follow), no image, no mermaid diagram. It reads the same."""
    return _TAG.sub("<" + ZWSP, no_fetch(text))


def escape_html(text: str) -> str:
    """Make ``<`` and ``&`` literal so no tag or entity trick survives, images plain links; Markdown still
    renders."""
    return no_fetch(text.replace("&", "&amp;").replace("<", "&lt;"))


def safe_markdown(text: str) -> str:
    """Untrusted text as Markdown that shows HTML instead of running it (code is left as written, but inert)."""
    text = no_fetch(text or "")  # wherever the code is: its bounds are a guess
    out, pos = [], 0
    for m in _CODE.finditer(text):
        out.append(escape_html(text[pos : m.start()]))
        out.append(inert(m.group(0)))
        pos = m.end()
    out.append(escape_html(text[pos:]))
    return "".join(out)


def fenced(text: str, lang: str = "text") -> str:
    """A code block that no backtick run inside ``text`` can close early (its text inert)."""
    longest = max((len(run) for run in re.findall(r"`+", text or "")), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{inert(text or '')}\n{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~$])")  # $: no "$$", whose LaTeX block takes raw text


def plain(text: str) -> str:
    """Untrusted one-liner (a tool name, a title) with every Markdown/HTML character made literal."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
