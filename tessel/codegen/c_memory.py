"""Memory planning for the c target: where each temporary of a kernel lives.

A small local temporary touched only at constant offsets becomes plain variables (registers);
others are 64-byte aligned arrays, on the stack up to ``tunables.stack_limit_bytes``, else on the
heap, allocated once per call (or once per thread inside a parallel loop) rather than once per
iteration of the loops around them. This module only decides; the statement printer
(:mod:`tessel.codegen.c_stmt`) writes what was decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import children, free_vars
from ..ir.stmt import LoopKind
from ..tunables import current


def on_heap(b: S.Buffer) -> bool:
    """Whether a temporary is too large (or of unknown size) for the stack."""
    if not all(isinstance(x, E.IntImm) for x in b.shape):
        return True
    return math.prod(x.value for x in b.shape) * max(b.dtype.bits // 8, 1) > current().stack_limit_bytes


@dataclass
class HoistPlan:
    """Where the heap temporaries are allocated instead of where they are declared.

    ``to``: id(parallel For) or id(func) -> allocations made once per thread or per call;
    ``into``: id(For or LetStmt) -> allocations made once per iteration, at the top of its body;
    ``hoisted``: ids of the Allocate nodes so moved (their own place allocates nothing)."""

    hoisted: set[int] = field(default_factory=set)
    to: dict[int, list[S.Allocate]] = field(default_factory=dict)
    into: dict[int, list[S.Allocate]] = field(default_factory=dict)


def plan_hoisting(func: S.PrimFunc) -> HoistPlan:
    """Move each heap temporary out of the loops around it, up to the function (allocated
    once per call) or to the parallel loop around it (once per thread: the threads must not
    share it), but never past a loop or let whose variable its size uses.

    A malloc per iteration of a compute_at'd stage costs a system call and fresh page faults
    per strip for large temporaries; hoisted, the pages are touched once and stay warm.
    """
    plan = HoistPlan()

    def walk(n, outer: list) -> None:
        if isinstance(n, S.Allocate) and on_heap(n.buffer) and outer:
            _hoist(func, plan, n, outer)
        if isinstance(n, S.For | S.LetStmt):
            outer = [*outer, n]
        for f in n.fields():
            for x in (f if isinstance(f, tuple) else (f,)):
                if isinstance(x, S.Stmt):
                    walk(x, outer)

    walk(func.body, [])
    return plan


def _hoist(func: S.PrimFunc, plan: HoistPlan, n: S.Allocate, outer: list) -> None:
    used = set().union(*(free_vars(x) for x in n.buffer.shape))
    target, where = None, plan.to
    for node in reversed(outer):
        bound = node.loop_var if isinstance(node, S.For) else node.var
        if bound in used:
            # the size changes with this loop (a compute_at region that varies with
            # it): allocate at the top of its body, out of the loops inside it only
            if target is not None:
                target, where = node, plan.into
            break
        target = node
        if isinstance(node, S.For) and node.kind == LoopKind.PARALLEL:
            break
    else:
        target = func
    if target is not None:
        plan.hoisted.add(id(n))
        where.setdefault(id(target), []).append(n)


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
