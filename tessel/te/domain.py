"""Undeclared domains: a compute whose shape is inferred from what its readers read.

Tiramisu declares a computation without bounds (``{S0[i, j]}``) and lets ``compute_bounds``
find them from its consumers. ``te.compute(None, f)`` is the same in TE: the number of
dimensions is the number of ``f``'s arguments, and when the first schedule over it is made
(``create_schedule``) its shape becomes, per dimension, one past the largest index any reader
reads (every reader's own shape being known first: readers are resolved before their
producers). What it then *computes* is, as for every producer, only what its readers need
(InferBound's box, or the exact set of ``tessel.poly.exact``): S1 read at ``(i, j)`` and at the
point ``(0, 1)`` computes those points.

A read at a negative index, a dimension no reader bounds, or an output nobody reads cannot give
a shape, and is refused with the reader and the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith import Analyzer, IntSet, union
from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.functor import collect
from .operation import Operation, post_dfs_order


def undeclared(op: Operation) -> bool:
    """Whether ``op`` is a compute whose shape waits for its readers."""
    return bool(op.axis) and any(iv.dom is None for iv in op.axis)


def infer_shapes(roots: Sequence[Operation]) -> None:
    """Give every undeclared compute reachable from ``roots`` its shape (readers first)."""
    order = post_dfs_order(list(roots))
    if not any(undeclared(op) for op in order):
        return
    for op in reversed(order):  # readers before the operations they read
        if undeclared(op):
            _resolve(op, [r for r in order if any(t.op is op for t in r.input_tensors())], roots)


def _resolve(op: Operation, readers: list[Operation], roots) -> None:
    if not readers:
        raise DefinitionError(
            f"compute {op.name} has no shape (te.compute(None, ...)) and nothing reads it, so none can be "
            f"inferred; give it a shape{' (it is an output of the schedule)' if op in roots else ''}")
    ana = Analyzer()
    per_dim: list[list[IntSet]] = [[] for _ in op.axis]
    for r in readers:
        if undeclared(r):
            raise DefinitionError(f"compute {op.name}: its reader {r.name} has no shape yet")
        dom = {iv.var: IntSet.from_range(iv.dom) for iv in r.root_iter_vars if iv.dom is not None}
        for _, sets in r.propagate_bounds(r.effective_body(lambda x: x), dom, op, ana):
            for k, s in enumerate(sets):
                per_dim[k].append(s)
    loops = {id(iv.var) for r in readers for iv in r.root_iter_vars}
    shape = []
    for k, (iv, sets) in enumerate(zip(op.axis, per_dim)):
        hull = union(sets) if sets else None
        lo = hull.min_value if hull is not None else None
        hi = hull.max_value if hull is not None else None
        if lo is None or hi is None or any(id(v) in loops for e in (lo, hi)
                                           for v in collect(e, lambda n: isinstance(n, E.Var))):
            raise DefinitionError(
                f"compute {op.name}: dimension {k} ({iv.var.name}) has no declared size and its readers "
                f"({', '.join(r.name for r in readers)}) do not bound it; give {op.name} a shape")
        if not ana.can_prove(E.ge(lo, 0)):
            raise DefinitionError(
                f"compute {op.name}: a reader reads dimension {k} ({iv.var.name}) at {lo}, which may be negative; "
                f"indices start at 0, so shift the reads or give {op.name} a shape")
        shape.append(ana.simplify(E.add(hi, 1)))
    op.axis = tuple(E.IterVar(E.Range(0, n), iv.var, iv.iter_type, iv.thread_tag) for iv, n in zip(op.axis, shape))
    for t in op.outputs:
        t.shape = tuple(shape)


__all__ = ["infer_shapes", "undeclared"]
