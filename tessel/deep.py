"""Deep programs: the compile pipeline on a big stack when the ordinary one is not enough.

The IR is walked recursively (visitors, mutators, the simplifier, printers, code generators),
so the depth of a walk is the depth of the expression: a body summing 10,000 terms is a chain
of 10,000 additions, and a chain of 1,000 stages inlined into one another is as deep; stored
stages nest too (each opens an allocation around the rest of the chain). Python's
default limit (1,000 frames) stops such walks with a RecursionError long before memory does.

:func:`deep_stack` runs a pipeline entry point in a worker thread with a big stack straight away
when a cheap look at its arguments says the program is deep (``is_deep``: no time is wasted on
an attempt bound to fail), and otherwise as usual, running it again in such a worker only if it
hits a RecursionError. The worker has a stack of :data:`STACK_BYTES` (reserved, not committed:
pages are touched only as deep as the walk goes) and a recursion limit of
:data:`RECURSION_LIMIT`. That is a bounded measure: a program deeper still is refused with a
:class:`~tessel.errors.BuildError` that says so, never a crash. While the worker runs the
(process-wide) recursion limit is raised for every thread; it is restored when the last
worker ends.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import BuildError

STACK_BYTES = 1 << 30  # the worker's stack (virtual: only the pages a walk reaches are used)
RECURSION_LIMIT = 400_000  # Python frames allowed in the worker (about 20 per level of nesting)

F = TypeVar("F", bound=Callable[..., Any])
_lock = threading.Lock()
_workers = 0
_saved_limit = 0
_inside = threading.local()


def _raise_limit() -> None:
    global _workers, _saved_limit
    with _lock:
        if _workers == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _workers += 1


def _restore_limit() -> None:
    global _workers
    with _lock:
        _workers -= 1
        if _workers == 0:
            sys.setrecursionlimit(_saved_limit)


def _run_on_big_stack(fn: Callable, args: tuple, kwargs: dict) -> Any:
    out: dict[str, Any] = {}

    def work() -> None:
        _inside.active = True
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as err:  # handed to the caller's thread as it is
            out["error"] = err

    with _lock:  # stack_size is process-wide too: set it only around this thread's creation
        old = threading.stack_size(STACK_BYTES)
        try:
            worker = threading.Thread(target=work, name="tessel-deep-compile", daemon=True)
        finally:
            threading.stack_size(old)
    _raise_limit()
    try:
        worker.start()
        worker.join()
    finally:
        _restore_limit()
    if "error" in out:
        raise out["error"]
    return out["value"]


def deep_stack(what: str, is_deep: Callable[..., bool] | None = None) -> Callable[[F], F]:
    """Decorate a pipeline entry point (``what`` names it in the error) as described above;
    ``is_deep(*args, **kwargs)`` says whether to go to the big stack without a first try."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if getattr(_inside, "active", False):
                return fn(*args, **kwargs)
            if is_deep is None or not is_deep(*args, **kwargs):
                try:
                    return fn(*args, **kwargs)
                except RecursionError:
                    pass  # retried below, outside the except block so the first traceback is dropped
            try:
                return _run_on_big_stack(fn, args, kwargs)
            except RecursionError:
                raise BuildError(
                    f"{what}: the program is nested more deeply than tessel can walk even on its big "
                    f"stack ({RECURSION_LIMIT} frames; tessel.deep.RECURSION_LIMIT): split a long "
                    "expression into several stages, or compute_root some stages of a long chain"
                ) from None

        return call  # type: ignore[return-value]

    return wrap


__all__ = ["RECURSION_LIMIT", "STACK_BYTES", "deep_stack"]
