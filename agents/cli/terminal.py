"""What the CLI writes to a terminal: model and tool text without terminal control sequences.

A model's reply (or a web page a tool read) can hold escape sequences that a terminal obeys: clear the screen,
set the window's title, move the cursor up and erase a line (enough to forge the last "ReAct: …" line), an
OSC 8 link whose text hides its address. :class:`SafeOut` drops every C0 control but newline and tab, DEL, every
C1 control, and whole sequences (CSI, OSC, DCS, SOS, PM, APC and two-character ESC ones, in their 7-bit and
8-bit forms), keeping the text around them. It reads its input as a stream, so a sequence split across two
writes (two streamed tokens) is dropped whole. ``ask --raw`` writes the text as it came.
"""

from __future__ import annotations

from typing import TextIO

ESC, BEL = "\x1b", "\x07"
KEPT = frozenset("\n\t")
STRING_OPENERS = frozenset("]PX^_")  # after ESC: OSC, DCS, SOS, PM, APC, each ended by ST (or BEL for OSC)
C1_CSI, C1_ST = "\x9b", "\x9c"
C1_STRINGS = frozenset("\x90\x98\x9d\x9e\x9f")  # DCS, SOS, OSC, PM, APC
MAX_SEQUENCE = 4096  # a sequence never ended (no ST) stops swallowing text after this many characters


class TerminalText:
    """A filter over a stream of text: :meth:`feed` returns what is safe to show of each piece."""

    def __init__(self) -> None:
        self.state = "text"  # text | esc | csi | string | string_esc
        self.length = 0  # characters of the sequence under way

    def feed(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            if self.state != "text":
                self.length += 1
                if self.length > MAX_SEQUENCE:
                    self.state = "text"
            if self.state == "text":
                self._text(ch, out)
            elif self.state == "esc":
                self._escape(ch, out)
            elif self.state == "csi":
                if "\x40" <= ch <= "\x7e":
                    self.state = "text"
                elif not "\x20" <= ch <= "\x3f":  # not a parameter or intermediate: the sequence was cut
                    self.state = "text"
                    self._text(ch, out)
            else:
                self._string(ch, out)
        return "".join(out)

    def _begin(self, state: str) -> None:
        self.state, self.length = state, 0

    def _text(self, ch: str, out: list[str]) -> None:
        code = ord(ch)
        if ch == ESC:
            self._begin("esc")
        elif ch == C1_CSI:
            self._begin("csi")
        elif ch in C1_STRINGS:
            self._begin("string")
        elif ch in KEPT or not (code < 0x20 or 0x7F <= code <= 0x9F):
            out.append(ch)

    def _escape(self, ch: str, out: list[str]) -> None:
        if ch == "[":
            self._begin("csi")
        elif ch in STRING_OPENERS:
            self._begin("string")
        elif "\x20" <= ch <= "\x2f":  # an intermediate byte: its final byte follows
            pass
        elif "\x30" <= ch <= "\x7e":  # a two-character sequence (ESC 7, ESC c, ESC ( B's end)
            self.state = "text"
        else:  # ESC followed by a control or text: the ESC alone is dropped
            self.state = "text"
            self._text(ch, out)

    def _string(self, ch: str, out: list[str]) -> None:
        if self.state == "string_esc":
            if ch == "\\":  # ST (ESC \\): the string's end
                self.state = "text"
            else:  # an ESC that is no ST ends the string and starts a sequence of its own
                self._begin("esc")
                self._escape(ch, out)
            return
        if ch in (BEL, C1_ST):
            self.state = "text"
        elif ch == ESC:
            self.state = "string_esc"
        elif ch == "\n":  # a string never ended: a newline ends it, so the rest of the reply still shows
            self.state = "text"
            out.append(ch)


def clean(text: str) -> str:
    """``text`` without terminal control sequences (one piece, not a stream)."""
    return TerminalText().feed(text)


class SafeOut:
    """A text stream that writes what :class:`TerminalText` lets through to ``out``."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.filter = out, TerminalText()

    def write(self, text: str) -> int:
        self.out.write(self.filter.feed(text))
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()

    def __getattr__(self, name: str):  # encoding, fileno, ...: the stream's own
        return getattr(self.out, name)
