"""Barriers (``__syncthreads()``) where a shared buffer is written and then touched by other threads.

The pass walks a kernel's body in program order, remembering the shared-memory accesses made
since the last barrier. Before a statement whose access conflicts with one of them it puts a
barrier: a read after another thread's write (the read must see it), a write after another
thread's read (it must not overwrite what is still being read). Two writes are not ordered:
threads that all store one tile store the same values. Two accesses are by the same thread
when their (flat) indices are the same expression over the thread indices and the loops around
both, and that expression uses every thread index of the block that has more than one value:
then each address belongs to one thread, which sees its own writes in order.
Everything else is assumed to cross threads (the barrier is then one too many, never one too
few: the simulator's race detector checks the rest).

A loop is looked at twice: once from the state before it, and once from its own end (the next
iteration): a conflict carried around the loop gets a barrier at the end of its body, which is
where TVM's GEMM puts it (the shared tiles of step ``k`` are read before step ``k+1`` refills
them). Barriers go only where every thread of the block arrives: never under a condition on
the thread indices or the data, nor inside a thread loop shorter than its launch extent; a
conflict that needs one there is refused with what to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import GpuError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import Visitor, free_vars, structural_equal, substitute
from ...ir.stmt import LoopKind
from .kernel import BLOCK_TAGS, THREAD_TAGS, Kernel, thread_loops

SHARED_SCOPES = ("shared", "shared.dyn")


def barrier(scope: str = "shared") -> S.Evaluate:
    """The block-wide barrier statement of the device IR (``__syncthreads()`` in CUDA)."""
    return S.Evaluate(E.Call("int32", "tvm_storage_sync", [E.StringImm(scope)]))


def is_barrier(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "tvm_storage_sync"


@dataclass(frozen=True)
class _Access:
    buffer: S.Buffer
    write: bool
    index: E.PrimExpr  # with thread loop variables replaced by one variable per tag
    stmt: S.Stmt


class _Accesses(Visitor):
    """The shared-memory accesses of a statement, in evaluation order (loads before the store)."""

    def __init__(self, canon: dict):
        self.canon, self.out = canon, []
        self.stmt: S.Stmt | None = None

    def run(self, s: S.Stmt) -> list[_Access]:
        self.stmt = s
        self.visit(s)
        return self.out

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self.generic_visit(e)
        if e.buffer.scope in SHARED_SCOPES:
            self.out.append(_Access(e.buffer, False, substitute(e.indices[0], self.canon), self.stmt))

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self.stmt = s  # the store its loads belong to (a read-then-write of one store is no conflict)
        self.visit(s.value)
        self.visit(s.indices[0])
        if s.buffer.scope in SHARED_SCOPES:
            self.out.append(_Access(s.buffer, True, substitute(s.indices[0], self.canon), self.stmt))


class _Planner:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.tag_vars = {t: E.Var(t, "int32") for t in THREAD_TAGS}
        self.canon: dict[E.Var, E.PrimExpr] = {}
        self.block_tags = {self.tag_vars[t] for t in THREAD_TAGS
                           if not (isinstance(kernel.extent(t), E.IntImm) and kernel.extent(t).value == 1)}
        self.pending: list[_Access] = []
        self.thread_vars: set[int] = set()
        for loop in thread_loops(kernel.body):  # every thread loop's variable is its tag's index
            if loop.thread_tag in THREAD_TAGS:
                self.canon[loop.loop_var] = self.tag_vars[loop.thread_tag]
                self.thread_vars.add(id(loop.loop_var))

    # ---- conflicts ---------------------------------------------------------------------
    def same_thread(self, a: _Access, b: _Access) -> bool:
        if not structural_equal(a.index, b.index):
            return False
        used = {v for v in free_vars(a.index)}
        return self.block_tags <= used

    def conflicts(self, accesses: list[_Access]) -> bool:
        for new in accesses:
            for old in self.pending:
                # read after write, write after read; two writes need no order (they store one value, or race anyway)
                if old.buffer is new.buffer and old.write != new.write and not self.same_thread(old, new):
                    return True
        return False

    def accesses(self, s: S.Stmt) -> list[_Access]:
        return _Accesses(self.canon).run(s)

    # ---- placement ---------------------------------------------------------------------
    def leaf(self, s: S.Stmt) -> S.Stmt:
        acc = self.accesses(s)
        if self.conflicts(acc):
            self.pending = list(acc)
            return S.SeqStmt([barrier(), s])
        self._check_inside(acc)
        self.pending += acc
        return s

    def _check_inside(self, acc: list[_Access]) -> None:
        """A conflict within one leaf (under a divergent condition) cannot get a barrier."""
        for k, new in enumerate(acc):
            for old in acc[:k]:
                if (old.buffer is new.buffer and old.write and not new.write and old.stmt is not new.stmt
                        and not self.same_thread(old, new)):
                    raise GpuError(
                        f"kernel {self.kernel.name!r}: shared buffer {new.buffer.name!r} is written and then read by "
                        "other threads under a condition that not every thread of the block meets (a guard on the "
                        "thread index or the data), where no barrier may go; make the bound loops' extents equal "
                        "to the launch extents (split by a factor that divides the size) so the guard disappears")

    def stmt(self, s: S.Stmt) -> S.Stmt:
        """``s`` with barriers; one goes as far out as the first conflict allows (before the
        whole loop nest, not inside it at every iteration)."""
        if is_barrier(s):
            self.pending = []
            return s
        wrapper = isinstance(s, S.SeqStmt | S.AttrStmt | S.Allocate) or (
            isinstance(s, S.LetStmt) and not self._divergent(s.value))
        if not wrapper and self.pending and self.conflicts(self.accesses(s)):
            self.pending = []
            return S.SeqStmt([barrier(), self._inner(s)])
        return self._inner(s)

    def _inner(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            out: list[S.Stmt] = []
            for x in s.seq:  # a barrier put before a statement joins this sequence
                y = self.stmt(x)
                out.extend(y.seq if isinstance(y, S.SeqStmt) and not isinstance(x, S.SeqStmt) else (y,))
            return S.SeqStmt(out)
        if isinstance(s, S.AttrStmt):
            return S.AttrStmt(s.node, s.key, s.value, self.stmt(s.body))
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, self.stmt(s.body))
        if isinstance(s, S.LetStmt) and not self._divergent(s.value):
            return S.LetStmt(s.var, s.value, self.stmt(s.body))
        if isinstance(s, S.For):
            return self.loop(s)
        return self.leaf(s)

    def _divergent(self, e: E.PrimExpr) -> bool:
        """Whether ``e`` may differ between threads of a block (thread indices or loaded data)."""
        from ...ir.functor import collect

        return bool({id(v) for v in free_vars(e)} & self.thread_vars) or bool(
            collect(e, lambda n: isinstance(n, E.BufferLoad)))

    def loop(self, s: S.For) -> S.Stmt:
        if s.kind == LoopKind.THREAD_BINDING and s.thread_tag in BLOCK_TAGS:
            return S.For(s.loop_var, s.min, s.extent, s.kind, self.stmt(s.body), s.thread_tag)  # blocks: no order
        if s.kind == LoopKind.THREAD_BINDING and s.thread_tag in THREAD_TAGS:
            if not _same(s.extent, self.kernel.extent(s.thread_tag)) or not _is_zero(s.min):
                return self.leaf(s)  # guarded: the whole loop is one place
            return S.For(s.loop_var, s.min, s.extent, s.kind, self.stmt(s.body), s.thread_tag)
        if self._divergent(s.min) or self._divergent(s.extent):
            return self.leaf(s)  # a trip count that differs between threads: no barrier inside
        body = self.stmt(s.body)  # from the state before the loop; ends in the state after one iteration
        if self.conflicts(_head_accesses(body, self)):  # the next iteration starts from there
            body = S.SeqStmt([body, barrier()])
            self.pending = []
        return S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)


def _head_accesses(body: S.Stmt, planner: _Planner) -> list[_Access]:
    """The accesses of ``body`` before its first barrier (what the next iteration starts with)."""
    out: list[_Access] = []

    def walk(s: S.Stmt) -> bool:  # True once a barrier is met
        if is_barrier(s):
            return True
        if isinstance(s, S.SeqStmt):
            return any(walk(x) for x in s.seq)
        if isinstance(s, S.AttrStmt | S.Allocate | S.LetStmt) or (isinstance(s, S.For) and _contains_barrier(s)):
            return walk(s.body)
        out.extend(planner.accesses(s))
        return False

    walk(body)
    return out


def _contains_barrier(s: S.Stmt) -> bool:
    from ...ir.functor import collect

    return bool(collect(s, lambda n: isinstance(n, S.Evaluate) and is_barrier(n)))


def _same(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    return structural_equal(a, b) or (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value)


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def insert_barriers(kernel: Kernel) -> Kernel:
    """``kernel`` with a barrier before each shared access that another thread's earlier access
    conflicts with (and at the end of loops whose next iteration would conflict)."""
    return kernel.with_body(_Planner(kernel).stmt(kernel.body))


__all__ = ["SHARED_SCOPES", "barrier", "insert_barriers", "is_barrier"]
