"""Virtual threads made real (TVM's InjectVirtualThread semantics), for device code.

A loop bound to a ``vthread`` axis says: these iterations are independent threads that the
hardware does not have, to be interleaved inside each real thread. Run as a loop around its
whole body it would be correct but would put a block barrier inside a loop that not every
virtual thread reaches together, and would keep one copy of storage that each virtual thread
needs its own of. So the loop is pushed inward instead:

* a statement that depends on the virtual thread neither through its variable nor through
  storage another such statement wrote runs once, for all of them (a shared tile fill, a barrier);
* a statement that does depends on it runs once per virtual thread, pushed as deep as the
  dependence allows: inside the loops whose bounds do not depend on it, as straight-line copies
  where it is the innermost code and there are fewer than 16 virtual threads, else as a serial
  loop ``<v>.s``;
* storage allocated inside the loop and written by dependent statements gets one copy per
  virtual thread: ``extent * n`` elements, element ``idx`` of copy ``v`` at ``idx + v * extent``.

Call it on device code after storage_flatten (accesses are one flat index) and before barriers
are inserted. The CPU targets do not need it: there a virtual thread loop is a serial loop, and
the rewritten code computes the same values (the tests check that on the python target).
"""

from __future__ import annotations

import math

from ..errors import LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, Visitor, substitute
from ..ir.stmt import LoopKind

UNROLL_BELOW = 16  # fewer virtual threads than this, around innermost code: straight-line copies


def is_virtual_loop(s: S.Stmt) -> bool:
    return isinstance(s, S.For) and s.kind == LoopKind.THREAD_BINDING and (
        s.thread_tag.startswith("vthread") or s.thread_tag == "cthread")


class _Uses(Visitor):
    """The variables and buffers a node reads (and, for statements, the buffers it writes)."""

    def __init__(self) -> None:
        self.vars: set[int] = set()
        self.reads: set[int] = set()
        self.writes: set[int] = set()

    def visit_Var(self, e: E.Var) -> None:
        self.vars.add(id(e))

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self.reads.add(id(e.buffer))
        self.generic_visit(e)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self.writes.add(id(s.buffer))
        self.generic_visit(s)


def _uses(node) -> _Uses:
    u = _Uses()
    u.visit(node)
    return u


class _Touched(Visitor):
    """One pass of the fixed point: what a statement defines from something already touched."""

    def __init__(self, touched: set[int]) -> None:
        self.touched, self.grew = touched, False

    def _hit(self, *nodes) -> bool:
        for n in nodes:
            u = _uses(n)
            if (u.vars | u.reads) & self.touched:
                return True
        return False

    def _add(self, key: int) -> None:
        if key not in self.touched:
            self.touched.add(key)
            self.grew = True

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        if self._hit(s.value, *s.indices):
            self._add(id(s.buffer))

    def visit_For(self, s: S.For) -> None:
        if self._hit(s.min, s.extent):
            self._add(id(s.loop_var))
        self.visit(s.body)

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        if self._hit(s.value):
            self._add(id(s.var))
        self.visit(s.body)

    def visit_Evaluate(self, s: S.Evaluate) -> None:  # a call writing through an address
        u = _uses(s.value)
        if (u.vars | u.reads) & self.touched:
            for b in u.reads:
                self._add(b)


def touched_by(body: S.Stmt, var: E.Var) -> set[int]:
    """Ids of the variables and buffers whose values depend on ``var`` in ``body``."""
    touched = {id(var)}
    while True:
        v = _Touched(touched)
        v.visit(body)
        if not v.grew:
            return touched


class _Inject(Mutator):
    """Push one virtual thread's loop into ``body`` (see the module's docstring)."""

    statements_only = True

    def __init__(self, var: E.Var, n: int, touched: set[int]) -> None:
        self.var, self.n, self.touched = var, n, touched
        self.remap: dict[int, tuple[S.Buffer, E.PrimExpr]] = {}  # old buffer -> (copies, stride)

    def _depends(self, *nodes) -> bool:
        for node in nodes:
            u = _uses(node)
            if (u.vars | u.reads | u.writes) & (self.touched | set(self.remap)):
                return True
        return False

    def visit(self, node):
        if isinstance(node, S.Stmt) and not isinstance(node, S.SeqStmt | S.Allocate) and not self._depends(node):
            return node  # the same for every virtual thread: run once
        return super().visit(node)

    def visit_For(self, s: S.For):
        if self._depends(s.min, s.extent):
            return self._each(s)
        return S.For(s.loop_var, s.min, s.extent, s.kind, self.visit(s.body), s.thread_tag)

    def visit_IfThenElse(self, s: S.IfThenElse):
        if self._depends(s.condition):
            return self._each(s)
        els = self.visit(s.else_case) if s.else_case is not None else None
        return S.IfThenElse(s.condition, self.visit(s.then_case), els)

    def visit_LetStmt(self, s: S.LetStmt):
        return self._each(s) if self._depends(s.value) else S.LetStmt(s.var, s.value, self.visit(s.body))

    def visit_AttrStmt(self, s: S.AttrStmt):
        return S.AttrStmt(s.node, s.key, s.value, self.visit(s.body))

    def visit_Allocate(self, s: S.Allocate):
        b = s.buffer
        if id(b) in self.touched:  # one copy per virtual thread
            size = E.const(math.prod(int(d.value) for d in b.shape), "int32") if all(
                isinstance(d, E.IntImm) for d in b.shape) else None
            if size is None:
                raise LowerError(f"virtual threads: buffer {b.name} has a symbolic size; it cannot be copied "
                                 "once per virtual thread")
            copies = S.Buffer(b.name, b.dtype, (E.const(size.value * self.n, "int32"),), b.scope)
            self.remap[id(b)] = (copies, size)
            return S.Allocate(copies, self.visit(s.body))
        return S.Allocate(b, self.visit(s.body))

    def visit_BufferStore(self, s: S.BufferStore):
        return self._each(s)

    def visit_Evaluate(self, s: S.Evaluate):
        return self._each(s)

    def _each(self, s: S.Stmt) -> S.Stmt:
        """``s`` once per virtual thread, its storage at the thread's copy."""
        s = _Copies(self.remap, self.var).visit(s)
        innermost = not any(isinstance(x, S.For) for x in _stmts(s))
        if innermost and self.n < UNROLL_BELOW:
            return S.seq(*[substitute(s, {self.var: E.const(k, self.var.dtype)}) for k in range(self.n)])
        v = E.Var(self.var.name + ".s", self.var.dtype)
        return S.For(v, E.const(0, v.dtype), E.const(self.n, v.dtype), LoopKind.SERIAL, substitute(s, {self.var: v}))


def _stmts(s: S.Stmt) -> list[S.Stmt]:
    from ..ir.functor import collect

    return collect(s, lambda n: isinstance(n, S.Stmt), statements_only=True)


class _Copies(Mutator):
    """Accesses to storage with one copy per virtual thread go to the thread's copy."""

    def __init__(self, remap: dict, var: E.Var) -> None:
        self.remap, self.var = remap, var

    def _index(self, buf, indices):
        copies, size = self.remap[id(buf)]
        if len(indices) != 1:
            raise LowerError(f"virtual threads: run after storage_flatten ({buf.name} has {len(indices)} indices)")
        return copies, (E.add(indices[0], E.mul(E.cast(self.var, indices[0].dtype), E.cast(size, indices[0].dtype))),)

    def visit_BufferLoad(self, e: E.BufferLoad):
        e = self.generic_visit(e)
        if id(e.buffer) not in self.remap:
            return e
        return E.BufferLoad(*self._index(e.buffer, e.indices))

    def visit_BufferStore(self, s: S.BufferStore):
        s = self.generic_visit(s)
        if id(s.buffer) not in self.remap:
            return s
        buf, idx = self._index(s.buffer, s.indices)
        return S.BufferStore(buf, s.value, idx)


class _Outer(Mutator):
    """Each virtual thread loop, innermost first, replaced by its injected body."""

    statements_only = True

    def visit_For(self, s: S.For):
        s = self.generic_visit(s)
        if not is_virtual_loop(s):
            return s
        if not isinstance(s.extent, E.IntImm):
            raise LowerError(f"virtual thread {s.loop_var.name}: its extent {s.extent} must be a constant")
        body = s.body if E.is_const_int(s.min, 0) else substitute(s.body, {s.loop_var: E.add(s.loop_var, s.min)})
        return _Inject(s.loop_var, s.extent.value, touched_by(body, s.loop_var)).visit(body)


def inject_virtual_threads(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` with every ``vthread``/``cthread`` loop pushed inward (see the module's docstring)."""
    out = _Outer().visit(stmt)
    if out is stmt:
        return stmt
    from .simplify import simplify_stmt

    return simplify_stmt(out)


__all__ = ["inject_virtual_threads", "is_virtual_loop", "touched_by"]
