"""Progress of a tuning job a person can follow: trials done, best so far, time left.

On a terminal it is one line redrawn in place (a bar); anywhere else (a log file, a pipe, a
test's captured output) it is one plain line per batch, so the record reads top to bottom.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

from ..ir.names import shown


def duration(seconds: float) -> str:
    """``75`` -> ``"1m15s"``; an unknown duration is ``"?"``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def speed(cost: float, flop: float) -> str:
    """The best so far as a person reads it: GFLOP/s when the template counted its flops."""
    if not math.isfinite(cost):
        return "none yet"
    text = f"{cost * 1e3:.3f} ms"
    return f"{flop / cost / 1e9:.2f} GFLOP/s ({text})" if flop > 0 else text


class Progress:
    """``update(done, best_cost, failed)`` after each batch; ``close(note)`` at the end."""

    def __init__(self, title: str, total: int, flop: float = 0.0, done: int = 0, stream: TextIO | None = None,
                 tty: bool | None = None, width: int = 24):
        self.title, self.total, self.flop, self.width = shown(title), total, flop, width  # a name: no escapes
        self.stream = stream if stream is not None else sys.stdout
        self.tty = tty if tty is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.start, self.start_done, self.done = time.monotonic(), done, done
        self.best, self.failed = float("inf"), 0

    def eta(self) -> float:
        """Seconds left, from this session's pace (unknown before the first batch ends)."""
        measured = self.done - self.start_done
        if measured <= 0:
            return float("nan")
        return (time.monotonic() - self.start) / measured * max(self.total - self.done, 0)

    def text(self) -> str:
        return (f"{self.done}/{self.total} trials, best {speed(self.best, self.flop)}, {self.failed} failed, "
                f"about {duration(self.eta())} left")

    def update(self, done: int, best: float, failed: int) -> None:
        self.done, self.best, self.failed = done, best, failed
        if self.tty:
            filled = int(self.width * min(done / max(self.total, 1), 1.0))
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r{self.title} [{bar}] {self.text()}\x1b[K")
        else:
            self.stream.write(f"{self.title}: {self.text()}\n")
        self.stream.flush()

    def close(self, note: str = "") -> None:
        elapsed = duration(time.monotonic() - self.start)
        end = f"{self.title}: done, {self.done}/{self.total} trials in {elapsed}, best {speed(self.best, self.flop)}"
        if note:
            end += f" ({note})"
        self.stream.write(("\r" if self.tty else "") + end + ("\x1b[K\n" if self.tty else "\n"))
        self.stream.flush()
