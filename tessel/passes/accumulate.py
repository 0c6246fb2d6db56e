"""Accumulators in registers: a loop that reads and writes the same few cells of a buffer
on every iteration works on a local copy of them instead (load before, store after).

A reduction split in two (``k`` into blocks, the blocks outside the register tile's loops, as a
BLAS kernel does to keep one block of each operand in cache) accumulates into the output
itself: the tile's cells ``C[i, j]`` are read, updated and written at the same addresses on
every step of the inner reduction loop. The C compiler's store motion would keep them in
registers, but only when it can prove that no other access in the loop touches them, and
GCC cannot inside an OpenMP parallel loop (the outlined body loses the ``restrict`` of the
kernel's parameters), so the loop ran one store per FMA. Here, where buffers are distinct
by construction, the cells become a ``local`` temporary touched at constant offsets only,
which the C generator keeps in variables (``codegen.c_memory.promotion_lanes``).

A loop is rewritten for a buffer only when it is certain to be right and to pay: the loop is
serial with a constant number of iterations, at least one (a loop that may not run would
otherwise read and write cells its body never touches: they may not exist), it stores to the buffer,
every access to the buffer in it is at an index that does not change inside it, is not under
a condition (the load before the loop must not read what the loop would not), covers whole
vectors of one width at most :data:`MAX_CELLS` places that do not partly overlap, the
buffer's address is handed to no call and it is not allocated inside the loop.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.functor import GuardVisitor, Mutator, Visitor, free_vars
from ..ir.intrinsics import EXTERN_CALLS

MAX_CELLS = 32  # places (vectors or scalars) one loop keeps in variables; more would spill
_ADDRESS_CALLS = ("address_of", "tsl_array", *EXTERN_CALLS)


def promote_accumulators(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` with each qualifying loop's accumulations kept in a local temporary (see the
    module); the outermost loop that qualifies for a buffer gets it."""
    loops = _Candidates()
    loops.visit(stmt)
    return _Promote(loops.found).visit(stmt) if loops.found else stmt


class _Candidates(Visitor):
    """The loops worth a closer look, found in one walk: for each store to a buffer that is not
    local, the outermost serial loop inside every binding of a variable its index uses (the
    loop over which that index stands still). Analysing every loop instead would walk each
    body once per loop around it."""

    def __init__(self) -> None:
        self.path: list[tuple[E.Var, S.For | None]] = []  # binders from the root: (var, its loop)
        self.found: set[int] = set()

    def generic_visit(self, node) -> None:  # statements only: no store hides in an expression
        for v in node.fields():
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, S.Stmt):
                    self.visit(x)

    def _bind(self, var: E.Var, loop: S.For | None, body) -> None:
        self.path.append((var, loop))
        self.visit(body)
        self.path.pop()

    def visit_For(self, s: S.For) -> None:
        self._bind(s.loop_var, s, s.body)

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        self._bind(s.var, None, s.body)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        if s.buffer.scope != "local" and len(s.indices) == 1:
            used = free_vars(s.indices[0])
            deepest = max((k for k, (v, _) in enumerate(self.path) if v in used), default=-1)
            loop = next((f for _, f in self.path[deepest + 1:] if f is not None and f.kind == "serial"), None)
            if loop is not None:
                self.found.add(id(loop))


class _Promote(Mutator):
    statements_only = True

    def __init__(self, candidates: set[int]):
        self.candidates = candidates
        self.ana = Analyzer()

    def visit_For(self, s: S.For):
        ext = self.ana.simplify(s.extent)
        runs = isinstance(ext, E.IntImm) and ext.value > 0  # else the cells may not exist
        if s.kind != "serial" or not runs or id(s) not in self.candidates:
            return self.generic_visit(s)
        found = _Accesses(s)
        chosen = [(b, cells) for b in found.candidates() if (cells := _cells(found, b)) is not None]
        return self.generic_visit(_rewrite(s, chosen) if chosen else s)


class _Accesses(GuardVisitor):
    """Every access to a buffer in a loop's body, with whether it is under a condition, the
    variables the body binds, and the buffers whose address a call takes."""

    def __init__(self, loop: S.For):
        self.loop = loop
        self.by_buffer: dict[S.Buffer, list[tuple[E.PrimExpr, bool]]] = {}
        self.stored: list[S.Buffer] = []
        self.bound: set[E.Var] = {loop.loop_var}
        self.escaped: set[S.Buffer] = set()  # its address is taken, or it is allocated in the loop
        self.opaque = False
        self.visit(loop.body)

    def candidates(self) -> list[S.Buffer]:
        if self.opaque:
            return []
        return [b for b in self.stored if b.scope != "local" and b not in self.escaped]

    def _access(self, buf: S.Buffer, indices: tuple) -> None:
        self.by_buffer.setdefault(buf, []).append((indices[0] if len(indices) == 1 else None, self.guard > 0))

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._access(e.buffer, e.indices)
        self.generic_visit(e)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        if s.buffer not in self.stored:
            self.stored.append(s.buffer)
        self._access(s.buffer, s.indices)
        self.generic_visit(s)

    def visit_For(self, s: S.For) -> None:
        self.bound.add(s.loop_var)
        self.generic_visit(s)

    def visit_Allocate(self, s: S.Allocate) -> None:
        self.escaped.add(s.buffer)
        self.generic_visit(s)

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        self.bound.add(s.var)
        self.generic_visit(s)

    def visit_Let(self, e: E.Let) -> None:
        self.bound.add(e.var)
        self.generic_visit(e)

    def visit_AttrStmt(self, s: S.AttrStmt) -> None:
        self.opaque = self.opaque or s.key == "stream_store"
        self.generic_visit(s)

    def visit_Call(self, e: E.Call) -> None:
        if e.op in _ADDRESS_CALLS:
            self.opaque = self.opaque or e.op in EXTERN_CALLS
            self.escaped.update(a.buffer for a in e.args if isinstance(a, E.BufferLoad))
        super().visit_Call(e)


def _cells(found: _Accesses, buf: S.Buffer) -> tuple[list[E.PrimExpr], int] | None:
    """The distinct starting indices of ``buf``'s accesses in the loop and their lanes, or
    None when the loop does not qualify for it (see the module)."""
    lanes, bases = None, []
    ana = Analyzer()
    for idx, guarded in found.by_buffer[buf]:
        if idx is None or guarded or free_vars(idx) & found.bound:
            return None
        if isinstance(idx, E.Ramp):
            if not E.is_const_int(idx.stride, 1):
                return None
            base, width = idx.base, idx.lanes
        elif idx.dtype.lanes == 1:
            base, width = idx, 1
        else:
            return None
        if lanes not in (None, width):
            return None
        lanes = width
        known = False
        for b in bases:
            gap = ana.simplify(O.sub(base, b))
            if not isinstance(gap, E.IntImm):
                return None
            if gap.value == 0:
                known = True
                break
            if abs(gap.value) < width:  # a partial overlap: two variables would hold one element
                return None
        if not known:
            bases.append(base)
    if not bases or lanes is None or len(bases) > MAX_CELLS:
        return None
    return bases, lanes


def _rewrite(loop: S.For, chosen: list[tuple[S.Buffer, tuple[list[E.PrimExpr], int]]]) -> S.Stmt:
    """``loop`` working on a local copy of the cells of each buffer of ``chosen``."""
    body, load, store, accs = loop.body, [], [], []
    for buf, (bases, lanes) in chosen:
        acc = S.Buffer(f"{buf.name}.acc", buf.dtype, (len(bases) * lanes,), "local")
        accs.append(acc)
        slot = [_vector(E.IntImm(q * lanes, b.dtype), lanes) for q, b in enumerate(bases)]
        place = [_vector(b, lanes) for b in bases]
        body = _Redirect(buf, acc, bases, slot).visit(body)
        load += [S.BufferStore(acc, E.BufferLoad(buf, (p,)), (q,)) for p, q in zip(place, slot)]
        store += [S.BufferStore(buf, E.BufferLoad(acc, (q,)), (p,)) for p, q in zip(place, slot)]
    out: S.Stmt = S.seq(*load, S.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread_tag), *store)
    for acc in reversed(accs):
        out = S.Allocate(acc, out)
    return out


def _vector(base: E.PrimExpr, lanes: int) -> E.PrimExpr:
    return E.Ramp(base, E.IntImm(1, base.dtype), lanes) if lanes > 1 else base


class _Redirect(Mutator):
    """Accesses of ``old`` at one of ``bases`` become accesses of ``new`` at the matching slot."""

    def __init__(self, old: S.Buffer, new: S.Buffer, bases: list[E.PrimExpr], slots: list[E.PrimExpr]):
        self.old, self.new, self.bases, self.slots = old, new, bases, slots
        self.ana = Analyzer()

    def index(self, idx: E.PrimExpr) -> E.PrimExpr:
        base = idx.base if isinstance(idx, E.Ramp) else idx
        return next(q for b, q in zip(self.bases, self.slots) if E.is_const_int(self.ana.simplify(O.sub(base, b)), 0))

    def visit_BufferLoad(self, e: E.BufferLoad):
        if e.buffer is not self.old:
            return self.generic_visit(e)
        return E.BufferLoad(self.new, (self.index(e.indices[0]),))

    def visit_BufferStore(self, s: S.BufferStore):
        value = self.visit(s.value)
        if s.buffer is not self.old:
            return s if value is s.value else S.BufferStore(s.buffer, value, s.indices)
        return S.BufferStore(self.new, value, (self.index(s.indices[0]),))
