# ruff: noqa: F821 - this text runs after _sandbox_child.py's, whose names (os, sys, _builtins, ...) it uses
"""The loop of a persistent sandbox (CodeAct), run *inside* the guest interpreter; not imported by the app.

:mod:`tools.sandbox_session` starts the guest with ``-c <_sandbox_child.py + this file> --session <json>``:
this text is appended to the one-shot child's, so it reuses its capped output, module proxies, restricted
builtins and traceback trimming. The channel is the guest's stdin (frames in) and stdout (frames out); stderr
carries the program's prints (and whatever the C library writes). The settings (``argv[2]``, JSON) name the
limits and the tools. Nothing here is trusted by the parent, which checks every frame; the limits are the host's.
"""

import json

FRAME_HEADER = 4


class ToolError(Exception):
    """A tool call that failed or was refused; the message says why."""


class _Final(BaseException):
    """Raised by ``final_answer`` to end the program at once (not an Exception: ``except Exception`` passes it)."""


class _Answer:
    text = None


class _Channel:
    """The child's end of the tool channel."""

    def __init__(self, rfd, wfd, max_frame, max_in):
        self.rfd, self.wfd, self.max_frame, self.max_in = rfd, wfd, max_frame, max_in
        self.busy = False

    def send(self, obj):
        data = json.dumps(obj, allow_nan=False).encode("ascii")
        _write_all(self.wfd, len(data).to_bytes(FRAME_HEADER, "big") + data)

    def recv(self):
        size = int.from_bytes(self._read(FRAME_HEADER), "big")
        if size > self.max_in:
            os._exit(EXIT_SETUP)
        return json.loads(self._read(size))

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            try:
                chunk = os.read(self.rfd, n - len(buf))
            except InterruptedError:
                continue
            if not chunk:
                os._exit(EXIT_OK)  # the parent closed the session
            buf += chunk
        return buf

    def call(self, name, arguments):
        """Send one call and wait for its reply: the tool's text, or ToolError with the reason."""
        if self.busy:  # a call made while another is being encoded or awaited (a dict's items(), a __del__)
            raise ToolError(f"{name}: tool calls cannot be nested (one call at a time)")
        self.busy = True
        try:
            problem = _oversized(arguments, self.max_frame)
            if problem:
                raise ToolError(f"{name}: {problem}")
            try:
                data = json.dumps({"op": "call", "tool": name, "args": arguments}, allow_nan=False).encode("ascii")
            except (TypeError, ValueError, RecursionError) as exc:
                raise ToolError(f"{name}: arguments must be text, numbers, lists or dicts ({exc})") from None
            if len(data) > self.max_frame:
                raise ToolError(f"{name}: the call is {len(data):,} bytes; a tool call may carry at most "
                                f"{self.max_frame:,}")
            _write_all(self.wfd, len(data).to_bytes(FRAME_HEADER, "big") + data)
            reply = self.recv()
        finally:
            self.busy = False
        if reply.get("ok") is True:
            return str(reply.get("output", ""))
        raise ToolError(str(reply.get("error") or f"{name} failed"))


def _oversized(value, limit):
    """Why ``value`` cannot be sent, or None; counted before encoding, so a 100 MB string is never copied."""
    total, seen, stack = 0, 0, [value]
    while stack:
        item = stack.pop()
        seen += 1
        if seen > 10_000:
            return "the arguments hold too many items"
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            total += 8
        if total > limit:
            return f"the arguments are over {limit:,} characters; a tool call may carry at most {limit:,} bytes"
    return None


def _tool_function(channel, name, params):
    """The program's view of one tool: a function taking its parameters by position or keyword."""

    def tool(*args, **kwargs):
        if len(args) > len(params):
            raise TypeError(f"{name}() takes {len(params)} positional argument(s) ({', '.join(params)}), "
                            f"{len(args)} given")
        arguments = dict(zip(params[: len(args)], args, strict=True))
        for key, value in kwargs.items():
            if key in arguments:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            arguments[key] = value
        return channel.call(name, arguments)

    tool.__name__ = tool.__qualname__ = name
    return tool


def _final_answer_function(state, cap):
    def final_answer(answer):
        """End the run with ``answer``."""
        state.text = str(answer)[:cap]
        raise _Final

    return final_answer


def _run_step(src, filename, namespace, out, sources):
    """Run one program in the session's namespace like a REPL; returns (status, error text)."""
    safe_builtins = namespace["__builtins__"]
    try:
        tree = compile(src, filename, "exec", _ast.PyCF_ONLY_AST)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            # `except E as __builtins__` deletes the name, and eval would then put the real builtins back
            namespace["__builtins__"] = safe_builtins
            value = eval(compile(_ast.Expression(body=last.value), filename, "eval"), namespace)
            if value is not None:
                out.write(repr(value) + "\n")
    except _Final:
        return "ok", ""
    except MemoryError:
        return "memory", _MEMORY_MSG.decode()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return "error", f"SystemExit: {exc.code}"[:2000]
    except BaseException as exc:  # noqa: BLE001 - everything the program raises is reported
        return ("memory" if isinstance(exc, MemoryError) else "error"), _error_report(exc, sources)
    return "ok", ""


CHANNEL_IN, CHANNEL_OUT, PRINTS = 0, 1, 2  # the C library writes its own messages to 2: never the channel


def _setup(cfg):
    """The builtins (restricted unless the filters are off) with the tools in them, the channel, the answer slot."""
    import builtins

    _python_lru_cache()
    safe_builtins = _builtins(cfg, builtins)
    channel = _Channel(CHANNEL_IN, CHANNEL_OUT, cfg["max_frame"], cfg["max_in"])
    state = _Answer()
    for name, params in cfg["tools"]:
        safe_builtins[name] = _tool_function(channel, name, tuple(params))
    safe_builtins["final_answer"] = _final_answer_function(state, cfg["answer_chars"])
    safe_builtins["ToolError"] = ToolError
    return safe_builtins, channel, state


def session_main():
    """Set up (the tools, ``final_answer`` and ``ToolError`` in the builtins), send ``ready``; then for each
    ``run`` frame run the program in the one namespace that persists across steps (the parent gives the host a
    fresh CPU allowance first), its prints capped per step, and send ``done`` with the status, the trimmed
    traceback and the final answer."""
    cfg = _settings(sys.argv[2])
    safe_builtins, channel, state = _setup(cfg)
    sink = _CappedOut(PRINTS, 0)  # between steps nothing reaches the parent (a __del__ printing late)
    sys.stdout = sys.stderr = sink
    namespace = {"__builtins__": safe_builtins, "__name__": "__main__", "__doc__": None}
    sources = {}
    channel.send({"op": "ready"})
    while True:
        frame = channel.recv()
        if frame.get("op") != "run" or not isinstance(frame.get("code"), str):
            os._exit(EXIT_SETUP)
        step = frame.get("step")
        filename = f"<step {step}>"
        sources[filename] = frame["code"].splitlines()
        out = _CappedOut(PRINTS, cfg["out_chars"])
        sys.stdout = sys.stderr = out
        state.text = None
        namespace["__builtins__"] = safe_builtins  # a step may have deleted it: exec would add the real ones
        try:
            status, error = _run_step(frame["code"], filename, namespace, out, sources)
        except BaseException:  # noqa: BLE001 - a report that itself failed (a hostile __str__)
            status, error = "error", "The program failed, and its error could not be shown."
        if out.dropped:
            _write_all(PRINTS, f"\n…[output truncated: {out.dropped} more characters]\n".encode())
        sys.stdout = sys.stderr = sink
        try:
            channel.send({"op": "done", "step": step, "status": status, "error": error, "final": state.text})
        except BaseException:  # noqa: BLE001
            channel.send({"op": "done", "step": step, "status": "error", "error": "The result could not be sent.",
                          "final": None})


if sys.argv[1:2] == ["--session"]:
    session_main()
