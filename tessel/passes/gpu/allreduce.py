"""Cross-thread reductions: a reduce axis bound to ``threadIdx.*`` becomes warp shuffles.

TVM's cross-thread reduction (``rfactor`` then ``bind`` of the reduction axis) lowers here to
a thread loop whose every iteration adds its partial value into one element,
``B[i] = B[i] + v``, which on a GPU is a race between the threads. This pass rewrites such a
loop (its body ends with the combining store, whose index does not use the loop variable):

* each thread keeps its partial ``v`` in a register (a ``local`` buffer);
* a shuffle-down tree adds the lanes of each warp (``tvm_warp_shuffle_down``, width the
  reduction's extent when it is at most 32);
* with more than 32 threads on the axis, lane 0 of each warp leaves its sum in a ``shared``
  array, a barrier, and the first warp reduces those by shuffles again;
* thread 0 of the axis combines the result with the initial value and stores it. The initial
  store just before the loop (``B[i] = 0``) is folded into that final store, so no other
  thread can overwrite the result with the initial value late. Where the reduction's result
  is ``local`` (allocated outside the thread loop: a stage computed at a loop bound to
  ``threadIdx.y``, one copy per thread), thread 0's sum is broadcast (a shuffle from lane 0,
  or a shared cell across warps) and every thread stores it, as TVM's allreduce leaves the
  result in every thread.

The axis must be ``threadIdx.x`` with the block's x extent equal to the reduction's, a power of
two up to 32 or a multiple of 32 up to 1024 (consecutive lanes of a warp are consecutive x
indices); other cases are refused with what to change.
"""

from __future__ import annotations

from ...errors import GpuError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import Mutator, collect, free_vars, structural_equal, uses_var
from ...ir.stmt import LoopKind
from .allreduce_tuple import TupleUpdate, assign, combined, final_stores, tuple_update
from .kernel import Kernel
from .sync import barrier

WARP = 32
FULL_MASK = 0xFFFFFFFF
_COMBINE = {E.Add: E.add, E.Mul: E.mul, E.Min: E.min_, E.Max: E.max_}


def _combining(st: S.Stmt, avoid) -> bool:
    """Whether ``st`` is ``B[i] = B[i] (op) v`` with ``i`` free of the variables ``avoid`` holds."""
    if not isinstance(st, S.BufferStore) or type(st.value) not in _COMBINE:
        return False
    a = st.value.a
    return (isinstance(a, E.BufferLoad) and a.buffer is st.buffer and structural_equal(a.indices[0], st.indices[0])
            and not uses_var(st.indices[0], lambda v: v in avoid))


def _accumulating_nest(st: S.Stmt, avoid: set) -> S.BufferStore | None:
    """The one combining store at the bottom of serial loops and guards (a thread's share of a
    reduction whose other axes are its own loops: TVM's cross-thread reduction without rfactor)."""
    if isinstance(st, S.For) and st.kind == LoopKind.SERIAL:
        return _accumulating_nest(st.body, avoid | {st.loop_var})
    if isinstance(st, S.IfThenElse) and st.else_case is None:
        return _accumulating_nest(st.then_case, avoid)
    return st if isinstance(st, S.BufferStore) and _combining(st, avoid) else None


def _reduction_store(loop: S.For) -> tuple[S.BufferStore, E.PrimExpr, list[S.Stmt], S.Stmt | None] | None:
    """The loop's final combining store, its partial value, the statements before it and, where
    each thread first reduces its own share in loops, the nest that does (else None)."""
    body = loop.body
    while isinstance(body, S.Allocate):  # the rfactor stage's buffer lives around its use
        body = body.body
    seq = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
    last, nest = seq[-1], None
    if (isinstance(last, S.IfThenElse) and last.else_case is None and isinstance(last.condition, E.EQ)
            and last.condition.a is loop.loop_var and _is_zero(last.condition.b)):
        last = last.then_case  # TVM's store predicate (set_store_predicate(tx.equal(0))): one thread writes the
        # reduced value, which is what the rewrite does anyway
    elif isinstance(last, S.For | S.IfThenElse):
        found = _accumulating_nest(last, {loop.loop_var})
        last, nest = (found, seq[-1]) if found is not None else (last, None)
    if not _combining(last, {loop.loop_var}):
        return None
    if last.buffer.scope == "local" and _under_thread_local_alloc(loop, last.buffer):
        return None  # each thread's own accumulator: no other thread adds into it
    return last, last.value.b, seq[:-1], nest


class _Rewriter(Mutator):
    statements_only = True

    def __init__(self, kernel: Kernel):
        super().__init__()
        self.kernel = kernel
        self.count = 0
        self.finals: dict[int, S.BufferStore] = {}  # id of a rewritten loop (or its allocation) -> final store
        self.parts: list[S.Buffer] = []
        self.tuple_finals: dict[int, tuple] = {}  # the same, for a tuple: (update, registers, final)

    def visit_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        seq = [self.visit(x) for x in s.seq]
        out: list[S.Stmt] = []
        for x in seq:
            final = self.finals.get(id(x))
            if final is not None and out and _is_init(out[-1], final):
                x = _fold_init(x, out.pop(), final)
            elif id(x) in self.tuple_finals:
                x = _fold_tuple_init(x, out, *self.tuple_finals[id(x)])
            out.append(x)
        return S.SeqStmt(out)

    def visit_For(self, s: S.For) -> S.Stmt:
        body = self.visit(s.body)
        loop = s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        if s.kind != LoopKind.THREAD_BINDING or s.thread_tag not in S.THREAD_TAGS:
            return loop
        if _is_one(s.extent):  # one thread: nothing runs beside it
            return loop
        found = _reduction_store(loop)
        if found is None:
            inner = loop.body
            while isinstance(inner, S.Allocate):
                inner = inner.body
            tup = tuple_update(inner, loop.loop_var)
            if tup is not None:
                return self._rewrite_tuple(loop, tup)
            self._refuse_other_accumulation(loop)
            return loop
        return self._rewrite(loop, *found)

    def _rewrite_tuple(self, loop: S.For, u: TupleUpdate) -> S.Stmt:
        """A tuple reduction (allreduce_tuple.py): registers per element, one shuffle tree
        moving every element, thread 0 storing them all."""
        n = self._extent(loop)
        self.count += 1
        r = loop.loop_var
        if any(st.buffer.scope == "local" for st in u.stores):
            raise GpuError(f"kernel {self.kernel.name!r}: the tuple reduction over {r.name!r} is wanted by every "
                           "thread (its result is local to each); this target reduces tuples for thread 0 only: "
                           "store the result in a stage of its own, not computed at a thread loop")
        regs = [S.Buffer(f"red_buf{self.count}_{k}", st.buffer.dtype, (E.IntImm(1, "int32"),), scope="local")
                for k, st in enumerate(u.stores)]
        stmts = [*_strip_allocs(u.before), assign(regs, [v for _, v in u.operands], "red_share")]
        stmts += _tuple_tree(u, regs, min(n, WARP))
        if n > WARP:
            stmts += self._tuple_across_warps(u, regs, r, n)
        final = final_stores(u, regs)
        stmts.append(S.IfThenElse(E.eq(r, E.IntImm(0, r.dtype)), final))
        body: S.Stmt = S.SeqStmt(stmts)
        for a in reversed(_allocs(loop.body)):
            body = S.Allocate(a, body)
        for reg in reversed(regs):
            body = S.Allocate(reg, body)
        new: S.Stmt = S.For(r, loop.min, loop.extent, loop.kind, body, loop.thread_tag)
        self.tuple_finals[id(new)] = (u, regs, final)
        for part in self.parts:
            new = S.Allocate(part, new)
            self.tuple_finals[id(new)] = (u, regs, final)
        self.parts = []
        return new

    def _tuple_across_warps(self, u: TupleUpdate, regs, r, n: int) -> list[S.Stmt]:
        """Lane 0 of every warp leaves its tuple in shared memory; the first warp combines them."""
        warps = n // WARP
        self._only_x_threads(n)
        zero = E.IntImm(0, "int32")
        parts = [S.Buffer(f"red_part{self.count}_{k}", b.dtype, (E.IntImm(warps, "int32"),), scope="shared")
                 for k, b in enumerate(regs)]
        lane0 = E.eq(E.floormod(r, E.IntImm(WARP, r.dtype)), E.IntImm(0, r.dtype))
        slot = E.floordiv(r, E.IntImm(WARP, r.dtype))
        write = S.IfThenElse(lane0, S.SeqStmt([S.BufferStore(p, E.BufferLoad(b, [zero]), [slot])
                                               for p, b in zip(parts, regs)]))
        read = S.IfThenElse(E.lt(r, E.IntImm(warps, r.dtype)),
                            S.SeqStmt([S.BufferStore(b, E.BufferLoad(p, [r]), [zero]) for p, b in zip(parts, regs)]))
        self.parts.extend(parts)
        return [write, barrier(), read, *_tuple_tree(u, regs, warps)]

    def _refuse_other_accumulation(self, loop: S.For) -> None:
        """Every thread updating one element that this pass cannot turn into shuffles (another
        combiner, a store not last) would race: refused rather than generated wrong."""
        r = loop.loop_var
        for st in collect(loop.body, lambda n: isinstance(n, S.BufferStore)):
            if st.buffer.scope == "local" or uses_var(st.indices[0], lambda v: v is r):
                continue
            if _reads_own_element(st, loop.body) and not _under_thread_local_alloc(loop, st.buffer):
                raise GpuError(f"kernel {self.kernel.name!r}: every thread of {loop.thread_tag} (loop "
                               f"{r.name!r}) updates {st.buffer.name}[{st.indices[0]}], a cross-thread reduction "
                               "this target can only make of a sum, product, min or max stored last in the loop, "
                               "or of a tuple (argmax) whose threads each hold one operand: rfactor the reduction "
                               "by the threads first, or reduce serially inside each thread")

    def _rewrite(self, loop: S.For, store: S.BufferStore, value: E.PrimExpr, before: list[S.Stmt],
                 nest: S.Stmt | None) -> S.Stmt:
        n = self._extent(loop)
        self.count += 1
        dt = value.dtype
        acc = S.Buffer(f"red_buf{self.count}", dt, (E.IntImm(1, "int32"),), scope="local")
        r = loop.loop_var
        zero = E.IntImm(0, "int32")
        cell = E.BufferLoad(acc, [zero])
        combine = _COMBINE[type(store.value)]
        if nest is None:
            share = [S.BufferStore(acc, value, [zero])]
        else:  # the thread's share, reduced in its own loops into the register first
            mine = S.BufferStore(acc, combine(cell, value), [zero])
            share = [S.BufferStore(acc, _identity(type(store.value), dt), [zero]), _replace(nest, store, mine)]
        stmts = [*_strip_allocs(before), *share]
        stmts += _warp_tree(acc, cell, combine, min(n, WARP), dt)
        if n > WARP:
            stmts += self._across_warps(acc, cell, combine, r, n, dt)
        final = S.BufferStore(store.buffer, combine(store.value.a, cell), store.indices)
        if store.buffer.scope == "local":  # every thread holds its own copy of the result
            stmts += self._broadcast(acc, cell, r, n, dt)
            stmts.append(final)
        else:
            stmts.append(S.IfThenElse(E.eq(r, E.IntImm(0, r.dtype)), final))
        body: S.Stmt = S.SeqStmt(stmts)
        for a in reversed(_allocs(loop.body)):
            body = S.Allocate(a, body)
        new: S.Stmt = S.For(r, loop.min, loop.extent, loop.kind, S.Allocate(acc, body), loop.thread_tag)
        self.finals[id(new)] = final  # read by visit_SeqStmt (init folding)
        for part in self.parts:  # per block (a __shared__ array), allocated around its use
            new = S.Allocate(part, new)
            self.finals[id(new)] = final
        self.parts = []
        return new

    def _only_x_threads(self, n: int) -> None:
        """Past one warp the partials meet in one shared array per block: one row per block."""
        others = [t for t in ("threadIdx.y", "threadIdx.z") if not _is_one(self.kernel.extent(t))]
        if others:
            raise GpuError(f"kernel {self.kernel.name!r}: a cross-thread reduction over {n} threads (more than a "
                           f"warp) in a block that also uses {', '.join(others)} is not supported; reduce over at "
                           "most 32 threads per row, or bind the rows to blockIdx")

    def _across_warps(self, acc, cell, combine, r, n: int, dt) -> list[S.Stmt]:
        """Lane 0 of every warp leaves its sum in shared memory; the first warp adds them up."""
        warps = n // WARP
        self._only_x_threads(n)
        part = S.Buffer(f"red_part{self.count}", dt, (E.IntImm(warps, "int32"),), scope="shared")
        lane0 = E.eq(E.floormod(r, E.IntImm(WARP, r.dtype)), E.IntImm(0, r.dtype))
        write = S.IfThenElse(lane0, S.BufferStore(part, cell, [E.floordiv(r, E.IntImm(WARP, r.dtype))]))
        read = S.IfThenElse(E.lt(r, E.IntImm(warps, r.dtype)),
                            S.BufferStore(acc, E.BufferLoad(part, [r]), [E.IntImm(0, "int32")]))
        tree = _warp_tree(acc, cell, combine, warps, dt)
        self.parts.append(part)
        return [write, barrier(), read, *tree]

    def _broadcast(self, acc, cell, r, n: int, dt) -> list[S.Stmt]:
        """Thread 0's sum into every thread's ``acc``: a shuffle from lane 0 within a warp, or
        through one shared cell (between barriers) across warps."""
        zero = E.IntImm(0, "int32")
        if n <= WARP:
            shfl = E.Call(dt, "tvm_warp_shuffle", [E.Call("uint32", "tvm_warp_activemask", []), cell, zero,
                                                   E.IntImm(n, "int32"), E.IntImm(WARP, "int32")])
            return [S.BufferStore(acc, shfl, [zero])]
        part = self.parts[-1]  # the partials are read: the cell is free after a barrier
        write = S.IfThenElse(E.eq(r, E.IntImm(0, r.dtype)), S.BufferStore(part, cell, [zero]))
        return [barrier(), write, barrier(), S.BufferStore(acc, E.BufferLoad(part, [zero]), [zero])]

    def _extent(self, loop: S.For) -> int:
        ext = loop.extent
        block_x = self.kernel.extent("threadIdx.x")
        ok = (loop.thread_tag == "threadIdx.x" and isinstance(ext, E.IntImm) and structural_equal(ext, block_x)
              and _is_zero(loop.min))
        n = ext.value if isinstance(ext, E.IntImm) else 0
        if ok and ((n <= WARP and n & (n - 1) == 0) or (n % WARP == 0 and n <= 1024 and (n // WARP) & (n // WARP - 1) == 0)):
            return n
        raise GpuError(f"kernel {self.kernel.name!r}: the reduction over {loop.loop_var.name!r} is bound to "
                       f"{loop.thread_tag} with extent {ext}; a cross-thread reduction needs threadIdx.x, the block's "
                       "whole x extent, and a power of two up to 1024 (split the reduce axis by 32, 64, ..., "
                       "rfactor, and bind the inner axis to threadIdx.x)")


def _tuple_tree(u: TupleUpdate, regs: list[S.Buffer], width: int) -> list[S.Stmt]:
    """Each step takes every register of the lane ``d`` down (all shuffles first: every lane
    runs them) and combines the two tuples."""
    out = []
    zero = E.IntImm(0, "int32")
    d = width // 2
    while d >= 1:
        got = [E.Var(f"red_other{k}", b.dtype) for k, b in enumerate(regs)]
        step = assign(regs, combined(u, [E.BufferLoad(b, [zero]) for b in regs], got), "red_step")
        for v, b in reversed(list(zip(got, regs))):
            shfl = E.Call(b.dtype, "tvm_warp_shuffle_down", [E.Call("uint32", "tvm_warp_activemask", []),
                                                            E.BufferLoad(b, [zero]), E.IntImm(d, "int32"),
                                                            E.IntImm(width, "int32"), E.IntImm(WARP, "int32")])
            step = S.LetStmt(v, shfl, step)
        out.append(step)
        d //= 2
    return out


def _fold_tuple_init(loop_stmt: S.Stmt, out: list[S.Stmt], u: TupleUpdate, regs, final: S.Stmt) -> S.Stmt:
    """The initial stores of every element just before (in ``out``, removed) folded into the
    final combine, as ``_fold_init`` does for one value."""
    n = len(u.stores)
    tail = out[-n:] if len(out) >= n else []
    inits = []
    for st in u.stores:
        match = [x for x in tail if _is_init(x, st)]
        if len(match) != 1:
            return loop_stmt
        inits.append(match[0])
    del out[-n:]
    new_final = final_stores(u, regs, [x.value for x in inits])

    class _Swap(Mutator):
        statements_only = True

        def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
            if s.then_case is final:
                return S.IfThenElse(s.condition, new_final)
            return self.generic_visit(s)

    return _Swap().visit(loop_stmt)


def _reads_own_element(st: S.BufferStore, where: S.Stmt) -> bool:
    """Whether ``st``'s value reads the element it writes, itself or through the ``let``s of
    ``where`` it uses (a tuple reduction's combiner binds each new value first)."""
    lets = {x.var: x.value for x in collect(where, lambda n: isinstance(n, S.LetStmt), statements_only=True)}
    values, todo = [st.value], [st.value]
    while todo:
        for v in free_vars(todo.pop()):
            if v in lets:
                values.append(lets.pop(v))
                todo.append(values[-1])
    return any(collect(v, lambda n: isinstance(n, E.BufferLoad) and n.buffer is st.buffer
                       and structural_equal(n.indices[0], st.indices[0])) for v in values)


def _under_thread_local_alloc(loop: S.For, buf: S.Buffer) -> bool:
    """Whether ``buf`` is allocated inside ``loop`` (then each thread has its own)."""
    return bool(collect(loop.body, lambda n: isinstance(n, S.Allocate) and n.buffer is buf))


def _warp_tree(acc, cell, combine, width: int, dt) -> list[S.Stmt]:
    """``acc[0] (+)= shuffle_down(acc[0], d)`` for d = width/2 ... 1 (lane 0 ends with the sum)."""
    out = []
    d = width // 2
    while d >= 1:
        shfl = E.Call(dt, "tvm_warp_shuffle_down", [E.Call("uint32", "tvm_warp_activemask", []), cell,
                                                    E.IntImm(d, "int32"), E.IntImm(width, "int32"),
                                                    E.IntImm(WARP, "int32")])
        out.append(S.BufferStore(acc, combine(cell, shfl), [E.IntImm(0, "int32")]))
        d //= 2
    return out


def _allocs(s: S.Stmt) -> list[S.Buffer]:
    out = []
    while isinstance(s, S.Allocate):
        out.append(s.buffer)
        s = s.body
    return out


def _strip_allocs(stmts: list[S.Stmt]) -> list[S.Stmt]:
    return [s for s in stmts if not isinstance(s, S.Allocate)]


def _is_init(s: S.Stmt, final: S.BufferStore) -> bool:
    return (isinstance(s, S.BufferStore) and s.buffer is final.buffer
            and structural_equal(s.indices[0], final.indices[0])
            and not collect(s.value, lambda n: isinstance(n, E.BufferLoad) and n.buffer is final.buffer))


def _fold_init(loop_stmt: S.Stmt, init: S.BufferStore, final: S.BufferStore) -> S.Stmt:
    """The final store combines with the initial value itself instead of re-reading the element."""

    class _Fold(Mutator):
        statements_only = True

        def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
            if s is final:
                return S.BufferStore(s.buffer, type(s.value)(init.value, s.value.b), s.indices)
            return s

    return _Fold().visit(loop_stmt)


def _identity(op: type, dt) -> E.PrimExpr:
    """The value ``op`` leaves any other unchanged with (a thread with no share of the reduction)."""
    if op in (E.Add, E.Mul):
        return E.const(0 if op is E.Add else 1, dt)
    if dt.is_float:
        return E.const(float("-inf") if op is E.Max else float("inf"), dt)
    return E.const(dt.min_value() if op is E.Max else dt.max_value(), dt)


def _replace(nest: S.Stmt, old: S.BufferStore, new: S.BufferStore) -> S.Stmt:
    class _Swap(Mutator):
        statements_only = True

        def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
            return new if s is old else s

    return _Swap().visit(nest)


def _is_one(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 1


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def lower_allreduce(kernel: Kernel) -> Kernel:
    """``kernel`` with every cross-thread reduction made of shuffles (and shared partials)."""
    return kernel.with_body(_Rewriter(kernel).visit(kernel.body))


__all__ = ["lower_allreduce"]
