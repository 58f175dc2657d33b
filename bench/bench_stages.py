"""Where a streamed token's CPU goes: each stage of its path, in ms per token, for every process of the app.

The app bench's stack (``bench/bench_app.py``) runs one crowd per configuration while py-spy samples the app
and each worker; each sample's stack is put in one stage (:data:`STAGES`), and the stages split each process's
measured CPU (:func:`measure`). Profiling slows the processes a little: these figures explain the app bench's
CPU rows, they do not replace them. Usage: ``python bench/bench_stages.py [--configs short:1 long:50] [--json]``
(needs py-spy, a dev requirement).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_app import Stack
from bench.crowd import crowd, question
from bench.loadkit import cpu_seconds

RATE = 500  # samples per second
LONG_WORDS = 300  # "long replies": every thought this many words longer
# (stage, pattern on the stack's file paths), first match wins. The client's frames come first: huggingface_hub
# calls our socket wrapper (agents/llm/abort.py) to read, and that read is the client's. In the app process the
# panels' code calls agents/trace.py: a ui/ frame on the stack makes it rendering, not the engine.
STAGES: list[tuple[str, re.Pattern[str]]] = [
    ("client: HTTP + chunk parse", re.compile(r"\((huggingface_hub|httpx2?|httpcore2?|h11)/|agents/llm/abort\.py")),
    ("transfer: worker → app", re.compile(r"\(multiprocessing/|\(agents/hosting/")),
    ("panels: stream + render", re.compile(r"\(ui/|\(app\.py")),
    ("engine: mode loop + events", re.compile(r"\(agents/|\(tools/")),
    ("framework: Gradio, ASGI, event loop", re.compile(r"\((gradio|gradio_client|starlette|fastapi|uvicorn|anyio|"
                                                       r"asyncio|pydantic|json|selectors)/")),
]
OTHER, OUTSIDE = "other Python", "outside Python (syscalls, lock waits)"


def stage_of(stack: str) -> str:
    """The stage of one sampled stack (``frame;frame;…``, outermost first)."""
    for name, pattern in STAGES:
        if pattern.search(stack):
            return name
    return OTHER


def classify(path: str) -> Counter[str]:
    """Samples per stage in one py-spy ``--format raw`` file."""
    counts: Counter[str] = Counter()
    if not os.path.exists(path):
        return counts
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            counts[stage_of(stack)] += int(n)
    return counts


def py_spy() -> str:
    """The py-spy this interpreter's environment installed (beside it: a virtualenv need not be activated), else
    the one on ``PATH``."""
    beside = Path(sys.executable).parent / "py-spy"  # not resolved: a venv's python is a link to the base one
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("py-spy") or "py-spy"


def spy(pid: int, path: str) -> subprocess.Popen:
    """py-spy recording ``pid`` into ``path`` (raw stacks, GIL holder only) until it gets SIGINT."""
    spy = subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--rate", str(RATE), "--format", "raw", "--gil",
                            "--nonblocking", "-o", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let it attach
    return spy


def measure(kind: str, visitors: int, latency: float, token_delay: float, folder: str) -> dict:
    """One crowd under py-spy: per process, its CPU and its stages, in ms per streamed token.

    py-spy samples only the thread holding the interpreter (``--gil``: Python's own CPU). A stage's figure is
    its samples' time divided by the tokens the stand-in streamed. When cores are short a thread holds the lock
    while the OS runs another process, so the samples' time is then scaled down to the process's measured CPU;
    what the samples do not cover (system calls, waits for the lock, C work outside it) is the row "outside
    Python", so each process's stages add up to its measured CPU."""
    words = LONG_WORDS if kind == "long" else 0
    with Stack(latency, token_delay, stub="async", words=words) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(2)])  # warm-up
        stack.ask_stub("clear")
        pids = {"app": stack.app_pid, **{f"worker {i}": p for i, p in enumerate(stack.ask_app("workers"))}}
        files = {name: os.path.join(folder, f"{kind}-{visitors}-{name.replace(' ', '')}.txt") for name in pids}
        spies = [spy(pid, files[name]) for name, pid in pids.items()]
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        wall, visits = crowd(stack.url, [question(1000 * visitors + k) for k in range(visitors)])
        cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
        for s in spies:
            s.send_signal(signal.SIGINT)
            s.wait(60)
        tokens = max(1, stack.ask_stub("dump")["chunks"])
    per_token = lambda seconds: round(seconds * 1000 / tokens, 4)  # noqa: E731 - ms per token
    processes = {}
    for name in pids:
        samples = classify(files[name])
        held = sum(samples.values()) / RATE  # seconds the GIL was held: more than the CPU when cores are short
        share = min(1.0, cpu[name] / held) if held else 0.0  # so the stages split the CPU, never exceed it
        stages = {stage: per_token(n / RATE * share) for stage, n in samples.most_common()}
        stages[OUTSIDE] = per_token(max(0.0, cpu[name] - held))
        processes[name] = {"cpu_ms_per_token": per_token(cpu[name]), "stages": stages}
    # every stage is reported, 0 when py-spy caught none of it (a tiny run may miss a short stage)
    total: Counter[str] = Counter(dict.fromkeys([*(name for name, _ in STAGES), OTHER, OUTSIDE], 0.0))
    for process in processes.values():
        total.update(process["stages"])
    return {"visitors": visitors, "replies": kind, "tokens": tokens, "wall_s": round(wall, 2),
            "errors": sum(1 for v in visits if v.error),
            "cpu_ms_per_token": round(sum(per_token(c) for c in cpu.values()), 4),
            "stages": {k: round(v, 4) for k, v in total.most_common()}, "processes": processes}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=["short:1", "short:50", "long:1", "long:50"],
                        help="REPLIES:VISITORS pairs, REPLIES short or long")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds before each reply's first token")
    parser.add_argument("--token-delay", type=float, default=0.01, help="seconds between 4-character chunks")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args(argv)
    out: dict = {"cores": os.cpu_count(), "configs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as folder:
        for config in args.configs:
            kind, _, n = config.partition(":")
            out["configs"][config] = measure(kind, int(n), args.latency, args.token_delay, folder)
            if not args.json:
                print(f"== {config} ==\n{json.dumps(out['configs'][config], indent=1)}", flush=True)
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
