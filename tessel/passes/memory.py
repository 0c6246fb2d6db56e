"""Where each temporary of a CPU kernel lives: the c target's own passes.

A small local temporary touched only at constant offsets becomes plain variables (registers);
others are 64-byte aligned arrays, on the stack up to ``tunables.stack_limit_bytes``, else on the
heap, allocated once per call (or once per thread inside a parallel loop) rather than once per
iteration of the loops around them. These passes decide and record each decision in the IR as
an ``AttrStmt`` (``AttrKey.HEAP`` where a heap block is allocated, ``AttrKey.REGISTERS`` around
a temporary kept in variables), so that the IR after them says where everything lives and the
code generator (:mod:`tessel.codegen.c_stmt`) only writes it. The ``Allocate`` nodes stay where
they were: they still scope their buffers for every analysis that reads the IR after this
(the carried-dependence test counts a temporary allocated inside a loop as private to it).
"""

from __future__ import annotations

import math

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, children, collect, free_vars
from ..ir.stmt import AttrKey, LoopKind
from ..tunables import current

#: the values of an ``AttrKey.HEAP`` fact: allocated once where it stands, or once by each thread
#: of the parallel loop it wraps (the threads must not share it)
ONCE, PER_THREAD = "once", "per_thread"


def on_heap(b: S.Buffer) -> bool:
    """Whether a temporary is too large (or of unknown size) for the stack."""
    if not all(isinstance(x, E.IntImm) for x in b.shape):
        return True
    return math.prod(x.value for x in b.shape) * max(b.dtype.bits // 8, 1) > current().stack_limit_bytes


def hoist_allocations(stmt: S.Stmt) -> S.Stmt:
    """Each heap temporary allocated out of the loops around it, up to the function (once per
    call) or to the parallel loop around it (once per thread), but never past a loop or let
    whose variable its size uses (then at the top of that one's body, once per iteration).

    A malloc per iteration of a compute_at'd stage costs a system call and fresh page faults
    per strip for large temporaries; hoisted, the pages are touched once and stay warm.

    Run twice (a lowered function handed to ``build_func``), it leaves what it placed as it is.
    """
    placed = {id(n.node) for n in collect(stmt, _is_fact, statements_only=True)}
    root = object()  # the function itself, as a place to allocate at
    into: dict[int, list[S.Buffer]] = {}  # id(For, LetStmt or root) -> allocated at the top of its body
    per_thread: dict[int, list[S.Buffer]] = {}  # id(parallel For) -> allocated by each of its threads

    def walk(n, outer: list) -> None:
        if isinstance(n, S.Allocate) and on_heap(n.buffer) and outer and id(n.buffer) not in placed:
            where, target = _place(n, outer)
            if target is not None:
                found = (per_thread if where == PER_THREAD else into).setdefault(id(target or root), [])
                if all(b is not n.buffer for b in found):  # a partitioned loop's copies share one buffer
                    found.append(n.buffer)
        if isinstance(n, S.For | S.LetStmt):
            outer = [*outer, n]
        for x in children(n):
            if isinstance(x, S.Stmt):
                walk(x, outer)

    walk(stmt, [])
    if not into and not per_thread:
        return stmt
    out = _Place(into, per_thread).visit(stmt)
    return _facts(into.get(id(root), []), ONCE, out)


def _is_fact(n) -> bool:
    return isinstance(n, S.AttrStmt) and n.key in (AttrKey.HEAP, AttrKey.REGISTERS)


def _place(n: S.Allocate, outer: list) -> tuple[str, object]:
    """Where ``n``'s buffer is allocated: (ONCE, a For or LetStmt whose body it opens, or False
    for the function), (PER_THREAD, a parallel For), or (ONCE, None): where it stands."""
    used = set().union(*(free_vars(x) for x in n.buffer.shape))
    target = None
    for node in reversed(outer):
        bound = node.loop_var if isinstance(node, S.For) else node.var
        if bound in used:
            # the size changes with this loop (a compute_at region that varies with it):
            # allocate at the top of its body, out of the loops inside it only
            return ONCE, (node if target is not None else None)
        target = node
        if isinstance(node, S.For) and node.kind == LoopKind.PARALLEL:
            return PER_THREAD, node
    return ONCE, False


def _facts(buffers: list[S.Buffer], where: str, body: S.Stmt) -> S.Stmt:
    for b in reversed(buffers):
        body = S.AttrStmt(b, AttrKey.HEAP, where, body)
    return body


class _Place(Mutator):
    statements_only = True

    def __init__(self, into: dict[int, list[S.Buffer]], per_thread: dict[int, list[S.Buffer]]):
        self.into, self.per_thread = into, per_thread

    def visit_For(self, s: S.For) -> S.Stmt:
        body = _facts(self.into.get(id(s), []), ONCE, self.visit(s.body))
        out = s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        return _facts(self.per_thread.get(id(s), []), PER_THREAD, out)

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        body = _facts(self.into.get(id(s), []), ONCE, self.visit(s.body))
        return s if body is s.body else type(s)(s.var, s.value, body)


def promote_registers(stmt: S.Stmt) -> S.Stmt:
    """Each small local temporary accessed only at constant offsets, marked to be kept in
    variables: ``AttrStmt(buffer, REGISTERS, ((first element, lanes), ...), Allocate)``."""
    return _Promote().visit(stmt)


class _Promote(Mutator):
    statements_only = True

    def visit_AttrStmt(self, s: S.AttrStmt) -> S.Stmt:
        if s.key == AttrKey.REGISTERS:  # placed by an earlier run
            return s
        return self.generic_visit(s)

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.visit(s.body)
        out = s if body is s.body else S.Allocate(s.buffer, body)
        shape = s.buffer.shape
        if not all(isinstance(x, E.IntImm) for x in shape):
            return out
        cells = promotion_cells(out, math.prod(x.value for x in shape))
        return out if cells is None else S.AttrStmt(s.buffer, AttrKey.REGISTERS, tuple(cells.items()), out)


def promotion_cells(s: S.Allocate, count: int) -> dict[int, int] | None:
    """The variables (registers) the temporary of ``s`` (``count`` elements) can be kept in
    instead of an array, as ``{first element: lanes}``, else None: a local one every access of
    which is at a constant offset (whole vectors, or single elements), which is what a register
    tile's accumulators look like after unrolling. Vectors may be of several widths (a row of
    56 float32 on AVX-512 is three vectors of 16 and one of 8), but two accesses that overlap
    must be the same vector; a single element inside a vector is its lane.

    GCC's scalar replacement gives up on arrays accessed as whole vectors through memcpy, so
    this is done here, where it is certain; an array touched at any variable index stays one.
    """
    b = s.buffer
    if b.scope not in ("local", "warp") or count > current().max_promoted_elements or b.dtype == "float16":
        return None
    vectors: dict[int, int] = {}
    singles: set[int] = set()
    stack: list = [s.body]  # one walk, given up at the first access that rules it out
    while stack:
        n = stack.pop()
        if isinstance(n, E.Call) and n.op in ("address_of", "tsl_array") and n.args[0].buffer is b:
            return None  # its address is handed to a function: it must stay in memory
        if isinstance(n, E.BufferLoad | S.BufferStore) and n.buffer is b:
            idx = n.indices[0]
            if isinstance(idx, E.Ramp):
                if not (isinstance(idx.base, E.IntImm) and E.is_const_int(idx.stride, 1)):
                    return None
                if not 0 <= idx.base.value <= count - idx.lanes or vectors.get(idx.base.value, idx.lanes) != idx.lanes:
                    return None
                vectors[idx.base.value] = idx.lanes
            elif isinstance(idx, E.IntImm) and 0 <= idx.value < count:
                singles.add(idx.value)
            else:
                return None
        stack.extend(children(n))
    return _cells(vectors, singles)


def _cells(vectors: dict[int, int], singles: set[int]) -> dict[int, int] | None:
    """Vectors that do not overlap, and the single elements outside them, as cells; None
    where two vectors overlap or there are too many cells for registers."""
    cells: dict[int, int] = {}
    end = -1
    for base in sorted(vectors):
        if base <= end:
            return None
        cells[base] = vectors[base]
        end = base + vectors[base] - 1
    covered = {k for base, lanes in cells.items() for k in range(base, base + lanes)}
    cells.update({k: 1 for k in singles - covered})
    return dict(sorted(cells.items())) if len(cells) <= current().max_promoted_variables else None


__all__ = ["ONCE", "PER_THREAD", "hoist_allocations", "on_heap", "promote_registers", "promotion_cells"]
