"""The Benchmark tab's progress line: pairs done, time elapsed and left, errors."""

from __future__ import annotations


def clock(seconds: float) -> str:
    """``0:42``, ``12:05``, ``1:02:03``."""
    minutes, secs = divmod(int(max(0.0, seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_line(done: int, total: int, elapsed: float, errors: int = 0) -> str:
    """``12 / 30 pairs · 0:42 elapsed · ~1:03 left · 1 error`` (the estimate once a pair has finished)."""
    parts = [f"{done} / {total} pairs", f"{clock(elapsed)} elapsed"]
    if 0 < done < total:
        parts.append(f"~{clock(elapsed / done * (total - done))} left")
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    return " · ".join(parts)
