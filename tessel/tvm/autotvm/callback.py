"""``autotvm.callback``: ``log_to_file`` (tessel's records) and ``progress_bar``."""

from __future__ import annotations

import sys

from ...tune import records as R
from .._names import missing_names


class _LogToFile:
    def __init__(self, path):
        self.path = path

    def __call__(self, tuner, inputs, results) -> None:
        R.append(self.path, [R.from_result(tuner.task, r) for r in results])


def log_to_file(file_out, protocol: str = "json") -> _LogToFile:
    """A callback appending each measurement to ``file_out`` as a tessel tuning record."""
    return _LogToFile(file_out)


class ProgressBar:
    """Asks the tuner to show its progress (trials, best so far, time left)."""

    def __init__(self, total=None, prefix: str = "", si_prefix: str = "G"):
        self.stream = sys.stdout

    def __call__(self, tuner, inputs, results) -> None:
        return None


def progress_bar(total=None, prefix: str = "", si_prefix: str = "G") -> ProgressBar:
    return ProgressBar(total, prefix, si_prefix)


__all__ = ["ProgressBar", "log_to_file", "progress_bar"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
