"""The sandbox host: a small process that runs one CPython-for-WASI guest under Wasmtime; not imported by the app.

:mod:`tools.sandbox_wasm` starts ``python -I -B -c <this file's text> <json>`` with an empty environment, in a
new process group, in a scratch folder. This process holds no secret and is itself limited (CPU, descriptors,
file size, no core files; non-dumpable; as root it drops to ``nobody``). The boundary is the guest's: it sees
its scratch folder as ``/``, the standard library built into the ``.wasm`` image, three standard streams, a
memory cap, and nothing else of the host (no other files, sockets, ``/proc``, signals or processes).

Descriptors: the guest's stdin, stdout and stderr are this process's 0, 1 and 2. A CodeAct session passes its
channel as ``chan_in``/``chan_out``: they become the guest's 0 and 1, its prints go to its stderr (this
process's stdout), and this process's own errors go to the original stderr, kept aside. Exit status: the
guest's own (``sys.exit``/``os._exit``), or ``EXIT_SETUP`` (4) when the guest could not be started, or
``EXIT_TRAP`` (5) when the runtime stopped it (stack exhausted, a fault), with one line on stderr saying which.
"""

import json
import os
import resource
import signal
import sys

EXIT_SETUP, EXIT_TRAP = 4, 5


def _fail(err_fd, message, code=EXIT_SETUP):
    try:
        os.write(err_fd, f"{message}\n".encode("utf-8", "replace")[:2000])
    finally:
        os._exit(code)


def _non_dumpable():
    """No process of this user may read this one's memory or attach to it (it holds nothing, but a guest's)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def _instance(cfg):
    """Everything a guest needs, set up before the limits and the drop of privileges: the compiled module
    (mapped from the app's cache), the WASI context (argv, no environment, the scratch folder as ``/``) and
    the memory cap. Returns the store and the guest's entry point."""
    from wasmtime import Engine, Linker, Module, Store, WasiConfig

    engine = Engine()
    module = Module.deserialize_file(engine, cfg["module"])
    linker = Linker(engine)
    linker.define_wasi()
    store = Store(engine)
    store.set_limits(memory_size=cfg["memory_bytes"], table_elements=1_000_000, instances=1, tables=4, memories=1)
    wasi = WasiConfig()
    wasi.argv = cfg["argv"]
    wasi.env = []
    wasi.inherit_stdin()
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    wasi.preopen_dir(cfg["scratch"], "/")
    store.set_wasi(wasi)
    instance = linker.instantiate(store, module)
    return store, instance.exports(store)["_start"]


def _drop_privileges(cfg):
    """As root, become ``drop_uid`` (nobody): a hole in the runtime would then hold nobody's rights."""
    uid = cfg["drop_uid"]
    if uid < 0 or os.geteuid() != 0:
        return
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _limits(cfg):
    """CPU (soft, hard), open descriptors, the size of a file written in the scratch folder, no core files.
    A write past the size limit fails with EFBIG instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_hard"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["nofile"], cfg["nofile"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))


def _channel(cfg):
    """A session's channel becomes the guest's stdin and stdout, and this process's stdout (the program's prints,
    read by the app) its stderr, where the C library's own messages land too; returns where this process's own
    errors go (its original stderr)."""
    chan_in, chan_out = cfg.get("chan_in"), cfg.get("chan_out")
    if chan_in is None:
        return 2
    err_fd, prints_fd = os.dup(2), os.dup(1)
    os.dup2(chan_in, 0)
    os.dup2(chan_out, 1)
    os.dup2(prints_fd, 2)
    for fd in (chan_in, chan_out, prints_fd):
        os.close(fd)
    return err_fd


def _trap_line(exc):
    """One readable line for a trap. An out-of-bounds access is, in practice, the guest's C stack overflowing
    (CPython for WASI has a small one: deep recursion through built-ins such as lru_cache, sorted or repr)."""
    text = str(exc)
    if "out of bounds memory access" in text or "call stack exhausted" in text:
        return "The program exhausted the interpreter's stack (too deep a recursion through built-in functions)."
    reason = next((line.split("wasm trap:", 1)[1].strip() for line in text.splitlines() if "wasm trap:" in line),
                  text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
    return f"The sandbox's runtime stopped the program ({reason[:300]})."


def main():
    from wasmtime import ExitTrap, Trap, WasmtimeError  # imported while the library is readable (before the drop)

    cfg = json.loads(sys.argv[1])
    _non_dumpable()
    err_fd = 2
    try:
        err_fd = _channel(cfg)
        store, start = _instance(cfg)
        _drop_privileges(cfg)
        _limits(cfg)
    except BaseException as exc:  # noqa: BLE001 - any failure here is a setup failure, reported in one line
        _fail(err_fd, f"The sandbox could not be set up: {type(exc).__name__}: {str(exc).strip()[:500]}")
    try:
        start(store)
    except ExitTrap as exc:
        os._exit(exc.code)
    except (Trap, WasmtimeError) as exc:
        _fail(err_fd, _trap_line(exc), EXIT_TRAP)
    os._exit(0)


main()
