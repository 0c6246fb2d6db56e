"""Cross-thread reductions of several values at once (argmax: an index and a value), as
shuffle trees that combine every element of the tuple together.

ScheduleOps writes such a reduction's update, when a reduce axis is bound to a thread, as 2n
``let``s then n stores (``te/tensor.py``'s ``reduction_update`` with ``operands``)::

    let B.v0_r = <thread's operand 0>; let B.v1_r = <operand 1>
    let B.v0_v = f0(B.v0[i], B.v1[i], B.v0_r, B.v1_r); let B.v1_v = f1(...)
    B.v0[i] = B.v0_v; B.v1[i] = B.v1_v

from which the combiner is read off: ``f_k`` with the accumulators' loads as its left side and
the operand variables as its right. Each thread keeps its operands in registers; at every step
of the tree it takes *all* of another lane's registers (one shuffle each) and combines the two
tuples with ``f``, so the index travels with its value. Thread 0 then combines the result with
the initial values and stores every element (``allreduce.py`` folds the initial stores in).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import collect, ir_transform, structural_equal, substitute, uses_var


@dataclass
class TupleUpdate:
    """The parts of a tuple reduction's update in a thread loop."""

    stores: list[S.BufferStore]       # acc_k[i] = new_k, in order
    operands: list[tuple[E.Var, E.PrimExpr]]  # the thread's operand k
    combine: list[E.PrimExpr]          # new_k over the accumulators' loads and the operand variables
    before: list[S.Stmt]               # what the loop body runs first


def tuple_update(body: S.Stmt, r: E.Var) -> TupleUpdate | None:
    """``body`` (a thread loop's, allocations stripped) read as a tuple reduction's update."""
    seq = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
    last = seq[-1]
    if (isinstance(last, S.IfThenElse) and last.else_case is None and isinstance(last.condition, E.EQ)
            and last.condition.a is r and isinstance(last.condition.b, E.IntImm) and last.condition.b.value == 0):
        last = last.then_case  # TVM's store predicate: one thread stores, which the rewrite does anyway
    lets = []
    while isinstance(last, S.LetStmt):
        lets.append((last.var, last.value))
        last = last.body
    stores = list(last.seq) if isinstance(last, S.SeqStmt) else [last]
    n = len(stores)
    if n < 2 or len(lets) != 2 * n or not all(isinstance(s, S.BufferStore) for s in stores):
        return None
    operands, news = lets[:n], lets[n:]
    accs = {id(s.buffer) for s in stores}
    idx = stores[0].indices[0]
    if len(accs) != n or uses_var(idx, lambda v: v is r):
        return None
    for s, (var, _) in zip(stores, news):
        if s.value is not var or not structural_equal(s.indices[0], idx):
            return None
    if any(collect(v, lambda x: isinstance(x, E.BufferLoad) and id(x.buffer) in accs) for _, v in operands):
        return None
    return TupleUpdate(stores, operands, [v for _, v in news], seq[:-1])


def combined(u: TupleUpdate, lhs: list[E.PrimExpr], rhs: list[E.PrimExpr]) -> list[E.PrimExpr]:
    """The combiner of ``u`` applied to two tuples of values."""
    by_buf = {id(s.buffer): k for k, s in enumerate(u.stores)}
    idx = u.stores[0].indices[0]

    def acc(n):
        if isinstance(n, E.BufferLoad) and id(n.buffer) in by_buf and structural_equal(n.indices[0], idx):
            return lhs[by_buf[id(n.buffer)]]
        return None

    vmap = {v: x for (v, _), x in zip(u.operands, rhs)}
    return [substitute(ir_transform(e, None, acc), vmap) for e in u.combine]


def assign(regs: list[S.Buffer], values: list[E.PrimExpr], name: str) -> S.Stmt:
    """``regs[k][0] = values[k]`` for every k at once (each value computed before any store)."""
    zero = E.IntImm(0, "int32")
    tmps = [E.Var(f"{name}{k}", v.dtype) for k, v in enumerate(values)]
    stmt: S.Stmt = S.SeqStmt([S.BufferStore(b, t, [zero]) for b, t in zip(regs, tmps)])
    for t, v in reversed(list(zip(tmps, values))):
        stmt = S.LetStmt(t, v, stmt)
    return stmt


def final_stores(u: TupleUpdate, regs: list[S.Buffer], start: list[E.PrimExpr] | None = None) -> S.Stmt:
    """Every accumulator set to its start (its own value, else ``start``: the initial values
    folded in) combined with the reduced registers."""
    lhs = start if start is not None else [E.BufferLoad(s.buffer, s.indices) for s in u.stores]
    news = combined(u, lhs, [E.BufferLoad(b, [E.IntImm(0, "int32")]) for b in regs])
    tmps = [E.Var(f"{st.buffer.name}_red", st.buffer.dtype) for st in u.stores]
    stmt: S.Stmt = S.SeqStmt([S.BufferStore(st.buffer, t, st.indices) for st, t in zip(u.stores, tmps)])
    for t, v in reversed(list(zip(tmps, news))):
        stmt = S.LetStmt(t, v, stmt)
    return stmt


__all__ = ["TupleUpdate", "assign", "combined", "final_stores", "tuple_update"]
