"""A serving process sets its start-up heap aside from garbage collection (agents/gc_tuning.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_settle_freezes_the_start_up_heap_and_collects_young_objects_less_often():
    """In a fresh interpreter: settling must not leak into the test process's own collector."""
    probe = textwrap.dedent("""
        import gc
        from agents import gc_tuning
        before = gc.get_threshold()
        kept = [object() for _ in range(1000)]
        gc_tuning.settle()
        after = gc.get_threshold()
        assert gc.get_freeze_count() > 1000, gc.get_freeze_count()
        assert after[0] == gc_tuning.YOUNG_THRESHOLD > before[0] and after[1] >= before[1] and after[2] == before[2]
        cycle = []; cycle.append(cycle); del cycle
        assert gc.collect() >= 1  # cycles made afterwards are still collected
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
