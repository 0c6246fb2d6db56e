"""Recurrences and scans in ``auto_schedule``: the fewest steps kept, the loops that carry
nothing in parallel and as vector code.

A recurrence over time (``te.recurrence((T, n, m), ...)``: a stencil, a solver's sweep) keeps
every step as written, which is O(T·n·m) memory where the program needs a few steps; its
loops carry dependences the plain rules cannot see. Each decision here is tried on a copy and
kept only when the whole schedule is still legal (the exact dependences judge it, as they
judge a user's): the least ``storage_fold`` of the first axis that keeps every value until it
is read, then ``parallel`` on the outermost loop that carries nothing, then ``vectorize`` on
the innermost (its border iterations run apart: ``passes/peel.py``). A sweep in place none of
whose loops is free (Gauss-Seidel: each point waits on its left neighbour's new value, one
chain of additions and a division per row, bound by their latency) becomes a wavefront: the
least skew of its last two loops after which the inner one carries nothing
(``check.wavefront``), so that loop runs independent chains side by side.
"""

from __future__ import annotations

from ..errors import TesselError
from ..schedule.schedule import Schedule

#: definitions scheduled at most (each try is a legality check of the whole schedule; past this,
#: a long unrolled program -- one recurrence per time step -- keeps the rest as written)
MAX_DEFINITIONS = 12
#: folds tried for a recurrence's first axis, least first
FOLDS = (1, 2, 3, 4)


def schedule_recurrences(s: Schedule) -> Schedule:
    """``s`` with each recurrence's storage folded and its loops annotated where legal."""
    homes = [k for k, st in enumerate(s.stages)
             if getattr(st.op, "definitions", ()) and st.op.definitions[-1].op is st.op]
    for k in homes[:MAX_DEFINITIONS]:
        home = s.stages[k]
        if not home.is_output and home.storage is None and len(home.op.axis) > 1:
            for f in FOLDS:
                kept = _kept(s, k, "storage_fold", 0, f)
                if kept is not s:
                    s = kept
                    break
    for k in [k for k, st in enumerate(s.stages) if hasattr(st.op, "scan_axis")][:MAX_DEFINITIONS]:
        for f in FOLDS:  # a scan keeps the fewest steps its update and readers need
            kept = _kept(s, k, "storage_fold", -1, f)
            if kept is not s:
                s = kept
                break
    defs = [k for k, st in enumerate(s.stages) if getattr(st.op, "definitions", ())]
    for k in defs[:MAX_DEFINITIONS]:
        leaves = list(s.stages[k].leaf_iter_vars)
        data = [n for n, iv in enumerate(leaves) if not iv.is_reduce]
        par = None
        for n in data[:-1] if len(data) > 1 else data:
            kept = _kept(s, k, "parallel", n)
            if kept is not s:
                s, par = kept, n
                break
        if data and data[-1] != par and data[-1] == len(leaves) - 1:
            vec = _kept(s, k, "vectorize", data[-1])
            if vec is s and par is None and len(data) > 2:  # nothing free: a wavefront over the last two
                vec = _wavefront(s, k, data[-2], data[-1])
            s = vec
    return s


def _wavefront(s: Schedule, k: int, outer: int, inner: int) -> Schedule:
    """A copy of ``s`` with the least skew of stage ``k``'s leaf loops ``outer, inner`` (next to
    each other) after which ``inner`` carries no dependence, if one exists; else ``s``."""
    from ..check.proposals import quiet, wavefront

    st = s.stages[k]
    leaves = st.leaf_iter_vars
    if inner != outer + 1:
        return s
    try:
        with quiet():
            found = wavefront(s, st, leaves[outer], leaves[inner], parallel=False)
    except TesselError:
        return s
    if not found.possible or not found.details.get("factors"):
        return s
    a, b = found.details["factors"]
    t = s.copy()
    try:
        t.stages[k].skew(t.stages[k].leaf_iter_vars[outer], t.stages[k].leaf_iter_vars[inner], a, b)
        if t.violations():
            return s
    except TesselError:
        return s
    return t


def _kept(s: Schedule, k: int, primitive: str, loop: int, *args: object) -> Schedule:
    """``s.stages[k].primitive(its loop number ``loop``, *args)`` applied to a copy of ``s``
    (the storage fold names an axis, -1 a scan's, the annotations a leaf loop), if the copy is
    still legal;
    else ``s``."""
    t = s.copy()
    st = t.stages[k]
    if primitive == "storage_fold":
        iv = st.op.scan_axis if loop < 0 else st.op.axis[loop]  # -1: a scan's steps
    else:
        iv = st.leaf_iter_vars[loop]
    try:
        getattr(st, primitive)(iv, *args)
        if t.violations():
            return s
    except TesselError:
        return s
    return t


__all__ = ["schedule_recurrences"]
