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
(``check.wavefront``), so that loop runs independent chains side by side. A sweep along a
carried loop inside a free one (adi's rows, each a chain of divisions) runs a few rows side by
side instead, the free loop split around the carried one and unrolled (unroll and jam).
"""

from __future__ import annotations

from ..errors import TesselError
from ..ir import expr as E
from ..schedule.dataflow import loop_ranges
from ..schedule.schedule import Schedule

#: definitions scheduled at most (each try is a legality check of the whole schedule; past this,
#: a long unrolled program -- one recurrence per time step -- keeps the rest as written)
MAX_DEFINITIONS = 12
#: rows whose sweeps (chains along a carried loop) run side by side, unrolled (``_interleaved``)
INTERLEAVED_ROWS = 8
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
        par, before = None, s
        for n in data[:-1] if len(data) > 1 else data:
            kept = _kept(s, k, "parallel", n)
            if kept is not s:
                s, par = kept, n
                break
        if data and data[-1] != par and data[-1] == len(leaves) - 1:
            vec = _kept(s, k, "vectorize", data[-1])
            if vec is s and par is None and len(data) > 2:  # nothing free: a wavefront over the last two
                vec = _wavefront(s, k, data[-2], data[-1])
            elif vec is s and par is not None and par == data[-1] - 1:  # free rows around a carried sweep
                vec = _interleaved(before, k, par, s)
            s = vec
    return s


def _interleaved(s: Schedule, k: int, free: int, otherwise: Schedule) -> Schedule:
    """A copy of ``s`` with stage ``k``'s free loop ``free`` split into groups of
    ``INTERLEAVED_ROWS`` run inside the carried loop after it, unrolled (unroll and jam), the
    groups in parallel, if that is still legal; else ``otherwise``. Each row's sweep is a chain
    (adi's divisions, a tridiagonal solve), bound by the latency of each step on the one before;
    rows side by side hide it: PolyBench's adi 0.1x gcc -O3 (which does this itself) one row at
    a time, 1.5x so."""
    t = s.copy()
    st = t.stages[k]
    rows, sweep = st.leaf_iter_vars[free], st.leaf_iter_vars[free + 1]
    try:
        outer, inner = st.split(rows, INTERLEAVED_ROWS)
        st.reorder(outer, sweep, inner)
        st.unroll(inner)
        groups = loop_ranges(st, st.op.root_iter_vars).get(outer)
        if groups is None or not isinstance(groups.extent, E.IntImm) or groups.extent.value >= 2:
            st.parallel(outer)  # never a parallel loop of one iteration (rules.in_threads)
        if t.violations():
            return otherwise
    except TesselError:
        return otherwise
    return t


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
