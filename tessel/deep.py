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
:class:`~tessel.errors.BuildError` that says so, never a crash.

The limit is the worker's alone where that can be done: a limit of 400,000 frames on another
thread's 8 MiB stack lets C recursion there (``json``, ``repr`` of nested lists) run past its
stack, a SIGSEGV instead of a RecursionError. CPython 3.11 has no per-thread API, but each
thread state holds its own counter, checked against the process-wide limit only when it runs
out; the worker raises its own (:func:`_raise_own_limit`, after checking that the fields read
back as the values ``sys`` reports). From 3.12 C recursion has a fixed guard of its own, so the
process-wide limit is raised while a worker runs, as on any interpreter where the check fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
import threading
from collections.abc import Callable, Iterator
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


_TSTATE_RECURSION = 32  # CPython 3.11's PyThreadState: prev, next, interp, two ints, then these


def _own_fields() -> ctypes.Array | None:
    """The calling thread's ``recursion_remaining, recursion_limit`` (CPython 3.11), once they
    read back as the limit this thread is known to have; None where that cannot be done safely."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return None
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.c_void_p
    fields = (ctypes.c_int * 2).from_address(get() + _TSTATE_RECURSION)
    known = getattr(_inside, "limit", None) or sys.getrecursionlimit()
    if fields[1] != known or not 0 < fields[0] <= known:
        return None  # another layout, or sys.setrecursionlimit reset it meanwhile
    return fields


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """At least ``limit`` frames for the calling thread while the block runs: its own limit
    where that can be done (see the module's docstring), else the process-wide one (raised to
    :data:`RECURSION_LIMIT` while any such block runs)."""
    fields = _own_fields()
    if fields is None:
        _raise_limit()
        try:
            yield
        finally:
            _restore_limit()
        return
    old = fields[1]
    if old >= limit:
        yield
        return
    fields[0] += limit - old
    fields[1] = _inside.limit = limit
    try:
        yield
    finally:
        if fields[1] == limit:  # not reset meanwhile by sys.setrecursionlimit
            fields[0] -= limit - old
            fields[1] = old
        _inside.limit = None


def _run_on_big_stack(fn: Callable, args: tuple, kwargs: dict) -> Any:
    out: dict[str, Any] = {}

    def work() -> None:
        _inside.active = True
        try:
            with recursion_limit(RECURSION_LIMIT):
                out["value"] = fn(*args, **kwargs)
        except BaseException as err:  # handed to the caller's thread as it is
            out["error"] = err

    # stack_size is process-wide: it is read when the thread starts, so it stays set until then
    with _lock:
        old = threading.stack_size(STACK_BYTES)
        try:
            worker = threading.Thread(target=work, name="tessel-deep-compile", daemon=True)
            worker.start()
        finally:
            threading.stack_size(old)
    worker.join()
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


__all__ = ["RECURSION_LIMIT", "STACK_BYTES", "deep_stack", "recursion_limit"]
