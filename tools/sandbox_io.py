"""The parent's ends of one persistent sandbox process's pipes (:mod:`tools.sandbox_session`).

All four are non-blocking and served by one selector from the thread that runs the step: stdout and
stderr are read with caps (a print loop cannot fill the app's memory); the channel's frames are read
only while no reply is waiting to be written and no frame waits to be handled, so a child that floods
the channel or never reads its replies only blocks itself, until the step's clock ends it. Replies are
written as the pipe takes them, never with a blocking write.
"""

from __future__ import annotations

import os
import selectors
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from tools.sandbox import OUTPUT_READ_CAP
from tools.sandbox_channel import FrameReader, ProtocolError, encode

if TYPE_CHECKING:
    from tools.sandbox_step import SessionLimits
    from tools.sandbox_wasm import Host, HostEnd

ERROR_READ_CAP = 16_384


class ChildIO:
    """One sandbox process: its pipes, what it printed in the current step, and its channel."""

    def __init__(self, host: Host, chan_r: int, chan_w: int, limits: SessionLimits) -> None:
        self.host, self.proc, self.chan_r, self.chan_w = host, host.proc, chan_r, chan_w
        self.output_chars = limits.output_chars
        self.reader = FrameReader(limits.max_frame)
        self.eof = False  # the channel is closed: the process is gone (or going)
        self._out, self._err, self._outbox = bytearray(), bytearray(), bytearray()
        proc = host.proc
        self._caps = {proc.stdout.fileno(): (self._out, OUTPUT_READ_CAP),
                      proc.stderr.fileno(): (self._err, ERROR_READ_CAP)}
        self._lock = threading.Lock()  # kill (any thread) against reaping (the step's thread)
        self._closed = False
        self._sel = selectors.DefaultSelector()
        for fd in (*self._caps, chan_r, chan_w):
            os.set_blocking(fd, False)
        for fd in self._caps:
            self._sel.register(fd, selectors.EVENT_READ)

    @property
    def workdir(self) -> str:
        """The scratch folder, the guest's ``/``."""
        return self.host.scratch

    # -- the channel -----------------------------------------------------------------------------------

    def send(self, frame: dict[str, Any]) -> None:
        """Queue a frame for the child; :meth:`pump` writes it as the pipe takes it."""
        self._outbox += encode(frame)

    def next_frame(self) -> dict[str, Any] | None:
        """The next frame from the child, once every reply so far has been written."""
        return None if self._outbox else self.reader.next()

    def begin_step(self) -> None:
        """A new step: fresh output buffers; anything the child sent between steps breaks the protocol."""
        self._out.clear()
        self._err.clear()
        self.pump(0)
        if self.reader.pending:
            raise ProtocolError("frames sent between steps")

    def pump(self, timeout: float) -> None:
        """One round of I/O: wait up to ``timeout`` for the pipes, then read and write what they allow."""
        self._watch(self.chan_r, not self.eof and not self._outbox and not self.reader.ready, selectors.EVENT_READ)
        self._watch(self.chan_w, not self.eof and bool(self._outbox), selectors.EVENT_WRITE)
        for key, _ in self._sel.select(timeout):
            if key.fd == self.chan_w:
                self._write()
            elif key.fd == self.chan_r:
                self._read_channel()
            else:
                self._read_output(key.fd)

    def _watch(self, fd: int, on: bool, events: int) -> None:
        registered = fd in self._sel.get_map()
        if on and not registered:
            self._sel.register(fd, events)
        elif not on and registered:
            self._sel.unregister(fd)

    def _write(self) -> None:
        try:
            n = os.write(self.chan_w, self._outbox)
        except BlockingIOError:
            return
        except OSError:  # the child's end is closed: it is gone
            self.eof = True
            self._outbox.clear()
            return
        del self._outbox[:n]

    def _read_channel(self) -> None:
        try:
            chunk = os.read(self.chan_r, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return
        self.reader.feed(chunk)

    # -- output ------------------------------------------------------------------------------------------

    def _read_output(self, fd: int) -> bool:
        """Read one chunk of stdout or stderr (kept up to its cap); False when there was nothing to read."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            if fd in self._sel.get_map():
                self._sel.unregister(fd)
            return False
        buf, cap = self._caps[fd]
        if len(buf) < cap:
            buf += chunk[: cap - len(buf)]
        return True

    def drain(self) -> None:
        """Read what the child wrote before its last frame (its prints come before its result)."""
        for fd in self._caps:
            while fd in self._sel.get_map() and self._read_output(fd):
                pass

    def output(self) -> str:
        """What the program printed in this step, capped, with a marker when cut."""
        out = bytes(self._out).decode("utf-8", "replace")
        if len(out) > self.output_chars + 200:  # only if the child's own cap was bypassed
            out = out[: self.output_chars]
        if len(out) >= self.output_chars and "…[output truncated" not in out:
            out += "\n…[output truncated]"  # killed before the child could write its own marker
        return out

    def errors(self) -> str:
        """What the interpreter itself wrote to stderr (a setup failure), trimmed."""
        return bytes(self._err).decode("utf-8", "replace").strip()[-2000:]

    # -- the process ---------------------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL the process group; safe from any thread and after the process has been reaped."""
        with self._lock:
            if self.proc.returncode is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def ended(self, timeout: float = 2.0) -> HostEnd | None:
        """What the host said on its status channel as it ended (None: it said nothing, or has not ended)."""
        return self.host.end() if self.wait_exit(timeout) is not None else None

    def wait_exit(self, timeout: float) -> int | None:
        """The exit status once the process has ended (None if it is still running after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                rc = self.proc.poll()
            if rc is not None or time.monotonic() > deadline:
                return rc
            time.sleep(0.01)

    def close(self) -> None:
        """Kill and reap the process, close every pipe, delete the scratch folder. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.kill()
        if self.wait_exit(5.0) is None:
            self.kill()
        self._sel.close()
        for fd in (self.chan_r, self.chan_w):
            try:
                os.close(fd)
            except OSError:
                pass
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self.host.release()
