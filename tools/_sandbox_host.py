"""The sandbox host: a small process that runs one CPython-for-WASI guest under Wasmtime; the app imports only its
scratch walk (``scratch_usage``).

:mod:`tools.sandbox_wasm` starts it with an empty environment, in a new process group, in a scratch folder. It
holds no secret and is itself limited (CPU, descriptors, file size, no core files; non-dumpable; as root it drops
to ``nobody``). The boundary is the guest's: its scratch folder as ``/``, the standard library built into the
``.wasm`` image, three standard streams, a memory cap, and nothing else of the host (no other files, sockets,
``/proc``, signals or processes). How it ended is one JSON line on a status channel the guest cannot write
(:func:`_end`).
"""

import json
import os
import resource
import shutil
import signal
import sys
import threading
import time

EXIT_SETUP, EXIT_TRAP, EXIT_SCRATCH = 4, 5, 6
IN_MODIFY, IN_MOVED_TO, IN_CREATE, IN_CLOEXEC = 0x2, 0x80, 0x100, 0o2000000
WATCHED = IN_MODIFY | IN_MOVED_TO | IN_CREATE


def _end(cfg, record, code, *, clean=True):
    """Say how this process ends on the status channel, remove the scratch folder (``clean``: not while a guest
    that overfilled it may still be writing; the app removes it), exit with ``code``.

    The line is ``{"kind": "exit", "code": N}`` (the guest's own exit status, whatever number it chose),
    ``"setup"`` (the guest could not be started), ``"trap"`` (the runtime stopped it: stack exhausted, a fault) or
    ``"scratch"`` (it filled its scratch folder past its bound), the last three with a ``message``. The exit status
    is the guest's, or ``EXIT_SETUP`` (4) / ``EXIT_TRAP`` (5) / ``EXIT_SCRATCH`` (6), which the app does not trust
    on their own."""
    try:
        fd = cfg.get("status_fd")
        if fd is not None:
            try:
                os.write(fd, (json.dumps(record) + "\n").encode("utf-8", "replace"))
            except OSError:  # the app is gone (its end of the channel is closed)
                pass
        if clean:
            shutil.rmtree(cfg.get("scratch") or "", ignore_errors=True)
    finally:
        os._exit(code)


def _fail(cfg, kind, message):
    _end(cfg, {"kind": kind, "message": message[:2000]}, EXIT_SETUP if kind == "setup" else EXIT_TRAP)


def _non_dumpable(cfg):
    """No process of this user may read this one's memory or attach to it (it holds nothing, but a guest's);
    unless the app's ``APP_NON_DUMPABLE=off`` asked it to stay dumpable (a test reading every process)."""
    if cfg.get("dumpable"):
        return
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
    """A session's channel (``chan_in``/``chan_out``) becomes the guest's stdin and stdout, and this process's
    stdout (the program's prints, read by the app) its stderr, where the C library's own messages land too.
    Without a channel the guest's stdin, stdout and stderr are this process's 0, 1 and 2."""
    chan_in, chan_out = cfg.get("chan_in"), cfg.get("chan_out")
    if chan_in is None:
        return
    prints_fd = os.dup(1)
    os.dup2(chan_in, 0)
    os.dup2(chan_out, 1)
    os.dup2(prints_fd, 2)
    for fd in (chan_in, chan_out, prints_fd):
        os.close(fd)


def _trap_line(exc):
    """One readable line for a trap. An out-of-bounds access is, in practice, the guest's C stack overflowing
    (CPython for WASI has a small one: deep recursion through built-ins such as lru_cache, sorted or repr)."""
    text = str(exc)
    if "out of bounds memory access" in text or "call stack exhausted" in text:
        return "The program exhausted the interpreter's stack (too deep a recursion through built-in functions)."
    reason = next((line.split("wasm trap:", 1)[1].strip() for line in text.splitlines() if "wasm trap:" in line),
                  text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
    return f"The sandbox's runtime stopped the program ({reason[:300]})."


def scratch_usage(root, max_entries):
    """(bytes, entries, folders) under ``root``; the walk stops once it has counted past ``max_entries``. The app
    reads a step's scratch folder with it too (``tools/sandbox_room.scratch_over``)."""
    size, entries, folders, stack = 0, 0, [], [root]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    entries += 1
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                        stack.append(entry.path)
                    else:
                        size += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue  # removed while we looked
    return size, entries, folders


def _watch_scratch(cfg):
    """Start the thread that ends this process (its guest) once the scratch folder holds more than
    ``scratch_bytes`` or ``scratch_files`` (files and folders); returns the same check, for the end.

    The thread sleeps on inotify until something in the folder is made or written, then measures it: a guest is
    stopped within a write or two of its bound, and an idle one costs nothing (without inotify it looks every
    50 ms)."""
    root, max_bytes, max_files = cfg["scratch"], cfg.get("scratch_bytes"), cfg.get("scratch_files")
    if not max_bytes or not max_files:
        return lambda: None
    libc, notify, watched = None, -1, set()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        notify = libc.inotify_init1(IN_CLOEXEC)
    except (OSError, AttributeError):
        notify = -1

    def over():
        """Why the folder is past its bound, or None. Every folder found is watched from then on; a walk that
        found new ones is made again at once, so a folder made inside one not yet watched is never missed."""
        while True:
            size, entries, folders = scratch_usage(root, max_files)
            if entries > max_files:
                return f"made more than {max_files} files and folders"
            if size > max_bytes:
                return f"wrote more than {max_bytes // (1 << 20)} MB"
            new = [f for f in folders if f not in watched]
            if notify < 0 or not new:
                return None
            for folder in new:
                watched.add(folder)
                libc.inotify_add_watch(notify, os.fsencode(folder), WATCHED)

    def stop_if_over():
        why = over()
        if why is not None:
            line = f"The program {why} in its scratch folder, the most a run may hold there; it was stopped."
            _end(cfg, {"kind": "scratch", "message": line}, EXIT_SCRATCH, clean=False)

    def run():
        if notify >= 0:
            libc.inotify_add_watch(notify, os.fsencode(root), WATCHED)
        while True:
            if notify >= 0:
                os.read(notify, 65536)  # sleeps until something under a watched folder changed
            else:
                time.sleep(0.05)
            stop_if_over()

    threading.Thread(target=run, name="scratch-watch", daemon=True).start()
    return stop_if_over


def main():
    from wasmtime import ExitTrap, Trap, WasmtimeError  # imported while the library is readable (before the drop)

    cfg = json.loads(sys.argv[1])
    _non_dumpable(cfg)
    try:
        _channel(cfg)
        store, start = _instance(cfg)
        _drop_privileges(cfg)
        _limits(cfg)
        check_scratch = _watch_scratch(cfg)
    except BaseException as exc:  # noqa: BLE001 - any failure here is a setup failure, reported in one line
        _fail(cfg, "setup", f"The sandbox could not be set up: {type(exc).__name__}: {str(exc).strip()[:500]}")
    try:
        start(store)
    except ExitTrap as exc:
        check_scratch()  # a guest that ended just past its bound, before the watch had looked
        _end(cfg, {"kind": "exit", "code": exc.code}, exc.code & 0xFF)
    except (Trap, WasmtimeError) as exc:
        _fail(cfg, "trap", _trap_line(exc))
    check_scratch()
    _end(cfg, {"kind": "exit", "code": 0}, 0)


if __name__ == "__main__":  # run as ``python -c <this text>``; the app imports scratch_usage only
    main()
