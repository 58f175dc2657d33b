"""The program that runs *inside* the sandbox: CPython for WASI in Wasmtime (``python -I -S -B -c <this> <json>``).

It is not imported by the app: :mod:`tools.sandbox` passes its text to the guest interpreter with ``-c``, the
user's code on stdin and the settings as JSON in ``argv[1]`` (see :func:`_settings`). Here live the teaching
layer's runtime half (restricted builtins, read-only module proxies; skipped when the filters are off), the
capped output and the trimmed tracebacks. The limits are the host's (:mod:`tools._sandbox_host`): nothing here
is trusted to enforce them. CodeAct's session (:mod:`tools.sandbox_session`) runs this text followed by
``_sandbox_session_child.py`` with ``--session`` first: :func:`main` then does not run, and the session's
loop reuses the helpers below.
"""

import _ast
import json
import os
import sys

STDOUT, STDERR = 1, 2
EXIT_OK, EXIT_ERROR, EXIT_MEMORY, EXIT_SETUP = 0, 1, 3, 4
_MEMORY_MSG = b"MemoryError: memory limit exceeded"


def _write_all(fd, data):
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[n:]


class _CappedOut:
    """sys.stdout / sys.stderr for the user's code: the first ``cap`` characters go through, the rest is counted."""

    def __init__(self, fd, cap):
        self._fd = fd
        self._left = cap
        self.dropped = 0

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        if self._left > 0:
            part = s[: self._left]
            self._left -= len(part)
            _write_all(self._fd, part.encode("utf-8", "backslashreplace"))
            s = s[len(part) :]
        self.dropped += len(s)
        return n

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True


def _proxy(name, real, allowed_sub, cache, blocked):
    """A read-only-ish view of a module: public, non-module members only (``random._os`` stays hidden)."""
    if name in cache:
        return cache[name]
    mod = type(sys)(name)
    for key, value in list(vars(real).items()):
        if key.startswith("_") or key in blocked:
            continue
        if isinstance(value, type(sys)):
            sub = f"{name}.{key}"
            if sub not in allowed_sub:
                continue
            value = _proxy(sub, value, allowed_sub, cache, blocked)
        setattr(mod, key, value)
    if name == "functools":
        real_update_wrapper = real.update_wrapper
        function = type(_write_all)

        def wraps(wrapped):
            # A closure, not functools.partial: a partial exposes .func (update_wrapper) and a mutable
            # .keywords, and update_wrapper(assigned=/updated=) copies arbitrary attributes by name.
            # update_wrapper does getattr(wrapper, '__dict__').update(wrapped.__dict__): a wrapper whose class
            # intercepts attribute access would be handed a real __dict__ (object's: a getattr by string). So the
            # wrapper must be a plain function, and only another plain function's __dict__ is copied.
            def decorator(wrapper):
                if type(wrapper) is not function:
                    raise TypeError("functools.wraps() can only decorate a function (def) in this sandbox")
                updated = ("__dict__",) if type(wrapped) is function else ()
                return real_update_wrapper(wrapper, wrapped, updated=updated)

            return decorator

        class cached_property(real.cached_property):
            # The real one reads and writes instance.__dict__[self.attrname]; set by the program to a special
            # name ('__objclass__'), it reads that key of any real object the property is attached to.
            def __setattr__(self, key, value):
                if key == "attrname" and isinstance(value, str) and value.startswith("__"):
                    raise AttributeError("cached_property cannot cache under a special name in this sandbox")
                super().__setattr__(key, value)

        cached_property.__module__ = "functools"
        mod.wraps, mod.cached_property = wraps, cached_property
    if name == "collections":
        user_dict = real.UserDict
        # UserDict.copy() of a subclass runs copy.copy, whose __reduce_ex__ path calls what the class returns and
        # sets attributes by the names it returns (a setattr by string). Copy as UserDict.__copy__ does instead.
        user_dict.copy = lambda self: user_dict.__copy__(self)
    cache[name] = mod
    return mod


def _python_lru_cache():
    """functools.lru_cache with the standard library's pure-Python wrapper instead of the C one.

    CPython for WASI has a small C stack, and every call through the C wrapper takes a slice of it: a memoized
    recursion (``fib(90)``) would exhaust it after ~60 levels. Through the Python wrapper the calls stay
    Python-to-Python, which takes no C stack, so only the usual recursion limit applies."""
    import functools
    import importlib.util

    saved = sys.modules.get("_functools")
    sys.modules["_functools"] = None  # the module's source then keeps its pure-Python definitions
    try:
        spec = importlib.util.find_spec("functools")
        pure = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pure)
    finally:
        sys.modules["_functools"] = saved
    functools._lru_cache_wrapper = pure._lru_cache_wrapper


def _format_tb(exc, src_lines):
    """Traceback lines from the user's code only (``<repl>``), with long recursions collapsed.

    ``src_lines`` is the program's lines, or (a session's programs) a dict of file name -> lines."""
    sources = src_lines if isinstance(src_lines, dict) else {"<repl>": src_lines}
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in sources:
            frames.append((tb.tb_lineno, code.co_name, code.co_filename))
        tb = tb.tb_next
    out = []
    last, repeat = None, 0
    for lineno, name, filename in frames:
        if (lineno, name, filename) == last:
            repeat += 1
            if repeat >= 3:
                continue
        else:
            if repeat >= 3:
                out.append(f"  [Previous line repeated {repeat - 2} more times]\n")
            last, repeat = (lineno, name, filename), 0
        where = "<module>" if name == "<module>" else name
        out.append(f'  File "{filename}", line {lineno}, in {where}\n')
        lines = sources[filename]
        if 0 < lineno <= len(lines) and lines[lineno - 1].strip():
            out.append(f"    {lines[lineno - 1].strip()}\n")
    if repeat >= 3:
        out.append(f"  [Previous line repeated {repeat - 2} more times]\n")
    cls = type(exc)
    qual = cls.__qualname__ if cls.__module__ in ("builtins", "__main__") else f"{cls.__module__}.{cls.__qualname__}"
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a user __str__ may raise anything
        text = "<exception str() failed>"
    head = ["Traceback (most recent call last):\n"] if out else []
    return "".join(head + out) + (f"{qual}: {text}" if text else qual) + "\n"


def _settings(raw):
    """The JSON settings: ``out_chars``, ``restrict`` and, when restricted, the allow-lists and blocked names."""
    cfg = json.loads(raw)
    for key in ("allowed", "allowed_sub", "blocked", "blocked_attrs"):
        cfg[key] = set(cfg.get(key, ()))
    return cfg


def _importer(cfg, real_import):
    """The allow-list ``__import__``: allowed modules only, each handed out as a read-only proxy."""
    allowed, allowed_sub, blocked_attrs = cfg["allowed"], cfg["allowed_sub"], cfg["blocked_attrs"]
    proxies = {}
    # Modules C code imports by itself at call time (datetime.strptime -> _strptime). Imports made by C
    # code go through the *caller's* __import__, i.e. safe_import; the policy keeps user code from naming them.
    internal = {"_strptime"}

    def load(top):
        if top not in proxies:
            real_import(top)
            _proxy(top, sys.modules[top], allowed_sub, proxies, blocked_attrs)
            for sub in allowed_sub:
                if sub.startswith(top + ".") and sub not in proxies:
                    real_import(sub)
                    setattr(
                        proxies[top],
                        sub[len(top) + 1 :],
                        _proxy(sub, sys.modules[sub], allowed_sub, proxies, blocked_attrs),
                    )
        return proxies[top]

    def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not allowed in this sandbox")
        if name in internal:
            real_import(name)
            return sys.modules[name]
        top = name.partition(".")[0]
        if top not in allowed or (name != top and name not in allowed_sub):
            raise ImportError(f"import of '{name}' is not allowed in this sandbox")
        load(top)
        return proxies[name] if fromlist else proxies[top]

    return safe_import


def _builtins(cfg, builtins):
    """The user's builtins: all of them, or (restricted) without the blocked names and with the safe importer."""
    safe_import = _importer(cfg, builtins.__import__)
    safe_builtins = dict(vars(builtins))
    if cfg["restrict"]:
        for name in list(safe_builtins):
            if name in cfg["blocked"] or name in ("__loader__", "__spec__", "__import__"):
                del safe_builtins[name]
        safe_builtins["__import__"] = safe_import
    return safe_builtins


def _error_report(exc, src_lines):
    """The trimmed traceback of what the user's code raised, at most ~3000 characters (head and tail kept)."""
    try:
        report = _format_tb(exc, src_lines)
    except MemoryError:
        report = _MEMORY_MSG.decode()
    if len(report) > 3000:
        tail = report[-2500:]
        cut = tail.find("\n", 0, 200)
        report = report[:400].rpartition("\n")[0] + "\n  ...\n" + (tail[cut + 1 :] if cut >= 0 else "…" + tail)
    return report


def _run(src, safe_builtins, out):
    """Run the code like a REPL (the last expression echoed); the exit code, errors written to fd 2."""
    namespace = {"__builtins__": safe_builtins, "__name__": "__main__", "__doc__": None}
    code = EXIT_OK
    try:
        tree = compile(src, "<repl>", "exec", _ast.PyCF_ONLY_AST)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
        exec(compile(tree, "<repl>", "exec"), namespace)
        if last is not None:
            # `except E as __builtins__` deletes the name, and eval would then put the real builtins back
            namespace["__builtins__"] = safe_builtins
            value = eval(compile(_ast.Expression(body=last.value), "<repl>", "eval"), namespace)
            if value is not None:
                out.write(repr(value) + "\n")
    except MemoryError:
        namespace.clear()
        _write_all(STDERR, _MEMORY_MSG)
        code = EXIT_MEMORY
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _write_all(STDERR, f"SystemExit: {exc.code}\n".encode("utf-8", "backslashreplace")[:2000])
            code = EXIT_ERROR
    except BaseException as exc:  # noqa: BLE001 - everything the user's code raises is reported
        _write_all(STDERR, _error_report(exc, src.splitlines()).encode("utf-8", "backslashreplace"))
        code = EXIT_MEMORY if isinstance(exc, MemoryError) else EXIT_ERROR
    return code


def main():
    """Build the builtins (restricted unless the filters are off), then read the code (stdin, to its end: a
    spare sandbox waits here, booted); run it, echoing its last expression like a REPL. Output goes to fd 1
    through a capped writer, tracebacks trimmed to ``<repl>`` frames to fd 2; the exit code is one of
    ``EXIT_*`` (ok, exception, memory limit)."""
    cfg = _settings(sys.argv[1])
    import builtins

    _python_lru_cache()
    safe_builtins = _builtins(cfg, builtins)
    src = sys.stdin.buffer.read().decode("utf-8", "replace")
    sys.stdin.close()
    out = _CappedOut(STDOUT, cfg["out_chars"])
    sys.stdout = sys.stderr = out
    code = _run(src, safe_builtins, out)
    if out.dropped:
        _write_all(STDOUT, f"\n…[output truncated: {out.dropped} more characters]\n".encode())
    os._exit(code)  # no interpreter shutdown: __del__ time bombs and atexit hooks never run


if sys.argv[1:2] != ["--session"]:  # a persistent session appends its own loop (tools/_sandbox_session_child.py)
    main()
