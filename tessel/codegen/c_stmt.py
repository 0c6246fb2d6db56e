"""Statements in C: loops (with their OpenMP and unroll pragmas), branches, lets, attributes,
stores and the temporaries' declarations, one ``visit_<Node>`` method per kind of statement.

Where each temporary lives is decided by the c target's passes (:mod:`tessel.passes.memory`)
and recorded in the IR; this module writes it: stack arrays, heap blocks allocated where an
``AttrKey.HEAP`` fact puts them (a failed allocation sets the status the kernel returns instead
of crashing), and variables for the tiles an ``AttrKey.REGISTERS`` fact keeps in registers.
"""

from __future__ import annotations

import math

from ..arith import Analyzer
from ..errors import BuildError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import collect
from ..ir.names import comment
from ..ir.stmt import AttrKey, LoopKind
from ..passes.memory import ONCE, PER_THREAD, on_heap
from ..tunables import current
from .c_expr import CExprWriter
from .c_helpers import ctype
from .c_operands import emit_run, flat, register_runs


class CStmtWriter(CExprWriter):
    """The statement half of the C generator: lines of C at the current depth."""

    def __init__(self, func: S.PrimFunc):
        super().__init__(func)
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[set[str]] = [set()]
        self.has_parallel = False
        self.uses_heap = False
        self.uses_status = False  # a packed call may report an error through the status
        self.placed: set[int] = set()  # ids of the buffers allocated by an enclosing HEAP fact
        self.promoted_names: dict[tuple[int, int, int], str] = {}  # (buffer id, first element, lanes) -> name
        self.calls_out = True  # whether the kernel may call a function outside it (FuncFacts)
        self.carrying: dict[int, str] = {}  # id(loop) -> the dependence it carries (passes.carried.carrying_loops)

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def open(self, head: str) -> None:
        self.emit(f"{head} {{" if head else "{")
        self.depth += 1
        self.scopes.append(set())

    def close(self, tail: str = "}") -> None:
        self.depth -= 1
        self.scopes.pop()
        self.emit(tail)

    def _else(self) -> None:
        """``} else {``: the block open since the last ``open`` continues as an else branch."""
        self.depth -= 1
        self.scopes.pop()
        self.open("} else")

    def stmt(self, s) -> None:
        if not isinstance(s, S.Stmt):
            raise BuildError(f"kernel {self.func.name!r}: the c target cannot generate {type(s).__name__}")
        self.visit(s)

    def visit_Stmt(self, s: S.Stmt) -> None:
        raise BuildError(f"kernel {self.func.name!r}: the c target cannot generate {type(s).__name__}")

    def visit_SeqStmt(self, s: S.SeqStmt) -> None:
        if not self.promoted:  # no tile in variables here: nothing to keep in registers
            for x in s.seq:
                self.stmt(x)
            return
        for is_run, items in register_runs(self, flat(s)):
            if is_run and len(items) > 1:
                emit_run(self, items)
            else:
                self.stmt(items[0])

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        self.open(f"if ({self.expr(s.condition)})")
        self.stmt(s.then_case)
        if s.else_case is not None:
            self._else()
            self.stmt(s.else_case)
        self.close()

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        value = self.expr(s.value)
        self.bound.add(id(s.var))
        name = self.names.get(s.var, s.var.name)
        # the same variable bound twice in one block, or temporaries allocated in its body
        fresh_scope = name in self.scopes[-1] or _heap_facts(s.body, ONCE)[0]
        if fresh_scope:
            self.open("")
        self.scopes[-1].add(name)
        t = self.vec.vtype(s.var.dtype) if s.var.dtype.lanes > 1 else ctype(s.var.dtype)
        self.emit(f"const {t} {name} = {value};")
        self.stmt(s.body)
        if fresh_scope:
            self.close()
        self.bound.discard(id(s.var))

    def visit_AttrStmt(self, s: S.AttrStmt) -> None:
        if s.key == AttrKey.PRODUCE:
            self.emit(f"// produce {comment(getattr(s.node, 'name', s.node))}")
        elif s.key == AttrKey.SMALL_SIZES:
            self.emit(f"// {comment(s.node)} < {comment(s.value)}: the loop nest as scheduled, unspecialised")
        elif s.key == AttrKey.NOT_VECTORIZED:
            self.emit("// not vectorized: " + comment(str(s.value).replace("\n", " ")))
        elif s.key == AttrKey.HEAP:
            buffers, body = _heap_facts(s, s.value)
            if s.value == PER_THREAD:
                self.visit_For(body, buffers)
            else:
                self.with_hoisted(buffers, body)
            return
        elif s.key == AttrKey.REGISTERS:
            self._promote(s.body, dict(s.value))
            return
        elif s.key == AttrKey.STREAM_STORE:  # each vector streams where its address is aligned (a peel may have aligned them)
            self.emit(f"// streaming stores to {comment(s.node.name)} (past the caches)")
            self.uses_stream = True
            self.streaming.add(id(s.node))
            self.stmt(s.body)
            self.streaming.discard(id(s.node))
            return
        else:
            self.emit("// " + comment(f"attr {s.key} = {s.value!s}".replace("\n", " ")))
        self.stmt(s.body)

    def visit_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        if isinstance(v, E.Call) and v.op == "call_packed":  # nonzero: the function reports an error
            self.uses_status = True
            self.open(f"if ({self.expr(v, 4)} != 0)")
            self.emit("#pragma omp atomic write")
            self.emit("tsl_status = 2;")
            self.close()
            return
        if not isinstance(s.value, E.IntImm | E.FloatImm):
            self.emit(f"(void)({self.expr(s.value)});")

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        idx = s.indices[0]
        if idx.dtype.lanes > 1:
            self.emit(self.vec.store(s.buffer, idx, s.value))
        else:
            buf = self.promoted_access(s.buffer, idx) or f"{self.names.get(s.buffer, s.buffer.name)}[{self.expr(idx)}]"
            self.emit(f"{buf} = {self.expr(s.value)};")

    # ---- loops -----------------------------------------------------------------------------
    def _loop_end(self, s: S.For) -> str:
        """``min + extent``, simplified when that is shorter: a tail loop's bounds are written
        as what came before it plus what remains, and the two halves usually cancel."""
        plain = f"{self.expr(s.min, 6)} + {self.expr(s.extent, 6)}"
        folded = self.expr(Analyzer().simplify(E.add(s.min, s.extent)), 6)
        return folded if len(folded) < len(plain) else plain

    def visit_For(self, s: S.For, per_thread: tuple[S.Buffer, ...] = ()) -> None:
        """``per_thread``: the temporaries each thread of this parallel loop allocates once."""
        v = s.loop_var
        lo = self.expr(s.min)
        ext = self.expr(s.extent, 6)
        self.bound.add(id(v))
        name = self.names.get(v, v.name)
        end = ext if _is_zero(s.min) else self._loop_end(s)
        streams = s.kind == LoopKind.PARALLEL and bool(
            collect(s.body, lambda n: isinstance(n, S.AttrStmt) and n.key == AttrKey.STREAM_STORE,
                    statements_only=True))
        region = s.kind == LoopKind.PARALLEL and bool(per_thread or streams)
        private = self._loop_pragmas(s, region, per_thread)
        self.open(f"for ({ctype(v.dtype)} {name} = {lo}; {name} < {end}; ++{name})")
        if id(s) in self.carrying:  # see passes/carried.py: GCC (12 at least) and clang vectorize no loop holding an asm
            self.emit(f"__asm__ volatile(\"\");  // carried: {comment(self.carrying[id(s)])}; not for the C vectorizer")
        if private:
            self.open(f"if ({' && '.join(f'{n} != NULL' for n in private)})")
            self.stmt(s.body)
            self.close()
        else:
            self.stmt(s.body)
        self.close()
        self.bound.discard(id(v))
        if region:
            if streams:  # streaming stores are weakly ordered: drain them before the threads join
                self.emit("tsl_sfence();")
            for n in private:
                self.emit(f"free({n});")
            self.close()
            self.placed.difference_update(id(b) for b in per_thread)

    def _loop_pragmas(self, s: S.For, region: bool, per_thread: tuple[S.Buffer, ...]) -> list[str]:
        """What goes before loop ``s``: its pragma and, for a parallel ``region`` (per-thread
        setup and teardown), the opening of the region and the temporaries each thread
        allocates once; their names, to free when the region ends."""
        private: list[str] = []
        if s.kind == LoopKind.PARALLEL:
            self.has_parallel = True
            if region:
                self.emit("#pragma omp parallel num_threads(tsl_nt)")
                self.open("")
                private = self.open_hoisted(per_thread)
                if private:  # each thread allocates its temporaries once
                    ok = " && ".join(f"{n} != NULL" for n in private)
                    self.open(f"if (!({ok}))")
                    self.emit("#pragma omp atomic write")
                    self.emit("tsl_status = 1;")
                    self.close()
                self.emit("#pragma omp for schedule(static)")
            else:
                self.emit("#pragma omp parallel for num_threads(tsl_nt) schedule(static)")
        elif s.kind == LoopKind.UNROLLED and isinstance(s.extent, E.IntImm) and s.extent.value > 0:
            self.emit(f"#pragma GCC unroll {min(s.extent.value, current().max_pragma_unroll)}")
        elif s.kind == LoopKind.VECTORIZED:  # the vectorize pass turns these into vector code; left only in hand-built IR
            self.emit("#pragma GCC ivdep")
        elif s.kind == LoopKind.THREAD_BINDING:  # iterations are independent: a CPU runs them in turn
            self.emit(f"// bound to {comment(s.thread_tag or 'a thread axis')}: runs serially on the CPU")
        return private

    # ---- temporaries -------------------------------------------------------------------------
    def visit_Allocate(self, s: S.Allocate) -> None:
        b = s.buffer
        t = ctype(b.dtype)
        if b.dtype == "float16":
            self.uses_float16 = True
        name = self.names.get(b, b.name)
        dims = list(b.shape)
        const = all(isinstance(x, E.IntImm) for x in dims)
        count = math.prod(x.value for x in dims) if const else None
        if id(b) in self.placed:  # allocated once, further out (see passes.memory.hoist_allocations)
            self.stmt(s.body)
            return
        self.open("")
        if not on_heap(b):
            self.emit(f"{t} {name}[{max(count, 1)}] __attribute__((aligned(64)));  "
                      f"// {comment(b.name)}, scope {comment(b.scope)}")
            self.stmt(s.body)
        else:
            self.uses_heap = True
            size = str(count) if count is not None else " * ".join(f"(int64_t){self.expr(x, 8)}" for x in dims)
            self.emit(f"{t}* restrict {name} = ({t}*)tsl_alloc(({size}) * (int64_t)sizeof({t}));  // {comment(b.name)}")
            self.open(f"if ({name} == NULL)")
            self.emit("tsl_status = 1;")
            self._else()
            self.stmt(s.body)
            self.emit(f"free({name});")
            self.close()
        self.close()

    def with_hoisted(self, buffers: tuple[S.Buffer, ...], body: S.Stmt) -> None:
        """``body``, after the hoisted temporaries ``buffers`` are allocated (and freed after it)."""
        names = self.open_hoisted(buffers)
        if not names:
            self.stmt(body)
            return
        self.open(f"if (!({' && '.join(f'{n} != NULL' for n in names)}))")
        self.emit("tsl_status = 1;")
        self._else()
        self.stmt(body)
        self.close()
        for n in names:
            self.emit(f"free({n});")
        self.placed.difference_update(id(b) for b in buffers)

    def open_hoisted(self, buffers: tuple[S.Buffer, ...]) -> list[str]:
        """Declare the hoisted temporaries ``buffers``; their names, to free at the end."""
        names: list[str] = []
        for b in buffers:
            self.placed.add(id(b))
            self.uses_heap = True
            t, name = ctype(b.dtype), self.names.get(b, b.name)
            size = " * ".join(f"(int64_t){self.expr(x, 8)}" for x in b.shape) or "1"
            self.emit(f"{t}* restrict {name} = ({t}*)tsl_alloc(({size}) * (int64_t)sizeof({t}));  // {comment(b.name)}")
            names.append(name)
        return names

    def _promote(self, s: S.Allocate, cells: dict[int, int]) -> None:
        """Keep a small temporary in variables (``cells``: see passes.memory.promotion_cells)."""
        b = s.buffer
        prefix = self.names.get(b, b.name)
        self.open("")
        # each variable is an identifier of the table, so it cannot clash with a user's name; the
        # copies of a partitioned loop share the buffer but may split it into vectors of another
        # width, so a name stands for one (first element, lanes) of the buffer
        names: dict[int, tuple[str, int]] = {}
        by_type: dict[str, list[str]] = {}
        for base, lanes in cells.items():
            key = (id(b), base, lanes)
            if key not in self.promoted_names:
                self.promoted_names[key] = self.names.get(object(), f"{prefix}_{base // lanes}")
            names[base] = (self.promoted_names[key], lanes)
            t = self.vec.vtype(b.dtype.with_lanes(lanes)) if lanes > 1 else ctype(b.dtype)
            by_type.setdefault(t, []).append(self.promoted_names[key])
        for t, group in by_type.items():
            self.emit(f"{t} {', '.join(group)};  // {comment(b.name)}, scope {comment(b.scope)}: kept in registers")
        self.promoted[id(b)] = names
        self.stmt(s.body)
        del self.promoted[id(b)]
        self.close()


def _heap_facts(s: S.Stmt, where: str) -> tuple[tuple[S.Buffer, ...], S.Stmt]:
    """The buffers of the ``AttrKey.HEAP`` facts of kind ``where`` at the head of ``s``, and the
    statement under them."""
    buffers: list[S.Buffer] = []
    while isinstance(s, S.AttrStmt) and s.key == AttrKey.HEAP and s.value == where:
        buffers.append(s.node)
        s = s.body
    return tuple(buffers), s


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0
