"""Index dtypes (seed 002): int64 exactly where a value needs it, the user's dtype elsewhere.

Until this step, integer index arithmetic denotes exact integers whatever its dtype says: the
simplifier reasons as if nothing overflowed (as TVM's does), and constants that leave their
dtype stay unfolded (:func:`tessel.ir.expr.binary_exact`). This step then gives every index
computation a dtype that holds its value, so the C and python targets compute what the IR
means. ``B[i*50000 + j]`` over a 50000x50000 tensor becomes ``B[int64(i)*int64(50000) +
int64(j)]``: the operand is widened before the multiplication, not the product after it.

Where in the pipeline, and why there (the seed's options P1-P3). At the level of te operations
(P1) or of the schedule (P2) neither the variables a schedule or an inlined stage introduces,
nor the buffer strides, are known yet. Here, on the loop IR after storage flattening (P3),
every index is one flat expression over loop variables, sizes and constants, and buffers
already exist, so no stride changes type behind a consumer's back. Among the P3 positions this
step runs *last*, after loop partitioning, vectorization and unrolling: it sees exactly the
expressions the code generators will print (ramps of vector accesses, the peeled and unrolled
copies), no later pass can build another narrow expression that overflows, and the passes
before it never meet a cast inside an index (the vectorizer's linearity test and the loop
partitioner's proofs work on the plain forms).

The seed's rules, in the form used here: promote, then narrow, decided node by node.

* A node is *bounded* when its constant bounds are finite, given the ranges of the loops (and
  lets) around it. Symbolic sizes (``te.var("n")``) are unbounded, and so is any loop over
  them and any node built from those (seed rule 1); loads are data, also unbounded.
* A bounded node whose value may leave its (narrow) dtype is computed in int64, its narrow
  operands cast up; a node with an int64 operand stays int64 (its consumer narrows it back).
* An unbounded node keeps its dtype (seed rule 2: ``2*n`` for an int32 ``n`` says that the
  whole expression fits int32). An int64 operand is narrowed back to it when its value
  provably fits, or when the node is data arithmetic, which wraps in its dtype in both targets
  and in NumPy; otherwise nothing can make it exact and lowering stops with a
  :class:`~tessel.errors.LowerError` that names the tensor and says what to do.
* A loop variable becomes int64 when its own range (up to the loop's end) leaves its dtype
  (a ``fuse`` of two large axes); otherwise it keeps its dtype. Int64 written by the user
  (``te.const(5, "int64")`` shapes, explicit casts) is never narrowed.

Everything that provably fits is left as it was, object for object: an ordinary kernel comes
out of this step unchanged, and so does its generated code.

Symbolic sizes. ``i*m + j`` over a symbolic ``(n, m)`` tensor stays int32 arithmetic, by rule 2,
yet ``n*m`` may exceed int32 at run time even though ``n`` and ``m`` fit. Promoting it would
break the rule and change the code of every symbolic kernel for the sake of tensors of 2^31
elements (8 GiB of float32); staying silent would be a wrong result. So each such narrow node
that cannot be shown to fit gets an :class:`~tessel.ir.stmt.IndexGuard`: its bounds in the
sizes alone (``(n - 1)*m + m - 1``), which the kernel's argument check evaluates exactly at
every call, refusing sizes it cannot index with an :class:`~tessel.errors.IndexOverflowError`
that names the tensor (see :mod:`.index_guard`; the bounds are safe, not tight, so a tiled
kernel may refuse sizes within a tile's rounding of the limit). Sizes declared int64
(``te.var("n", dtype="int64")``) index in int64 and need no guard.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache

from ..arith import Analyzer, is_index_dtype
from ..arith import const_bound as cb
from ..errors import LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DType, int64
from ..ir.functor import Mutator, memoized, replace_buffer
from .index_guard import GuardBuilder, LaneBounds

WIDE = int64  # the dtype a promoted index computation is given
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)


def index_dtype(stmt: S.Stmt, size_vars: Sequence[E.Var]) -> tuple[S.Stmt, tuple[S.IndexGuard, ...]]:
    """``stmt`` with index dtypes that hold their values, and the guards its symbolic sizes need."""
    p = _IndexDtype(size_vars)
    out = p.visit(stmt)
    return out, p.guards.result()


@cache
def _narrow(dt: DType) -> bool:
    """An index dtype that int64 promotion can widen."""
    el = dt.element
    return is_index_dtype(el) and el.bits < WIDE.bits


@cache
def _limits(dt: DType) -> tuple[int, int]:
    el = dt.element
    return int(el.min_value()), int(el.max_value())


def _finite(b: cb.Bound) -> bool:
    return b[0] != -cb.INF and b[1] != cb.INF


def _fits(b: cb.Bound, dt: DType) -> bool:
    lo, hi = _limits(dt)
    return lo <= b[0] and b[1] <= hi


def _widen(e: E.PrimExpr, dt: DType) -> E.PrimExpr:
    """``e`` as ``dt`` (int64 or a vector of it); constants and vectors are rebuilt, not cast."""
    if e.dtype == dt:
        return e
    if isinstance(e, E.IntImm):
        return E.IntImm(e.value, dt)
    if isinstance(e, E.Broadcast):
        return E.Broadcast(_widen(e.value, dt.element), e.lanes)
    if isinstance(e, E.Ramp):
        return E.Ramp(_widen(e.base, dt.element), _widen(e.stride, dt.element), e.lanes)
    return E.Cast(dt, e)


def _narrow_to(e: E.PrimExpr, dt: DType) -> E.PrimExpr:
    if isinstance(e, E.Cast) and e.value.dtype == dt:
        return e.value  # a widening undone
    return E.Cast(dt, e)


class _IndexDtype(Mutator):
    def __init__(self, size_vars: Sequence[E.Var]):
        self.guards = GuardBuilder(size_vars)
        # constant bounds of the loop and let variables in scope, symbolic sizes unbounded
        self.bounds: dict[E.Var, cb.Bound] = {}
        self.retyped: dict[E.Var, E.Var] = {}
        self.where: tuple[str, object] = ("an index", None)  # formatted only for a message
        self.rules = self._rules()
        self.plain = Analyzer()  # simplifies loop ends, knowing nothing
        self._data: dict[int, tuple[E.PrimExpr, bool]] = {}
        self._fresh()

    def _fresh(self) -> None:
        """Forget what depends on the variables in scope (called whenever the scope changes)."""
        self.memo: dict[int, tuple[E.PrimExpr, E.PrimExpr]] = {}
        self.seed = LaneBounds(lambda v: self.bounds.get(v, cb.dtype_bound(v.dtype)))

    @contextmanager
    def _scope(self, var: E.Var, first: E.PrimExpr, last: E.PrimExpr) -> Iterator[None]:
        lo = self.seed(first)[0]
        self.bounds[var] = (lo, max(self.seed(last)[1], lo))
        self.guards.enter(var, first, last)
        self._fresh()
        try:
            yield
        finally:
            self.guards.leave()
            del self.bounds[var]
            self._fresh()

    # ---- statements ------------------------------------------------------------------------
    def visit(self, node):
        if isinstance(node, E.PrimExpr):  # an expression a statement holds: its dtype stays
            return self.fit(node, self.expr(node), node)
        return super().visit(node)

    def visit_For(self, s: S.For):
        v = s.loop_var
        self.where = ("the bounds of loop", v)
        mn, ext = self.expr(s.min), self.expr(s.extent)
        first = self.plain.simplify(s.min)
        end = self.plain.simplify(E.binary_exact(E.Add, s.min, s.extent))
        last = self.plain.simplify(E.binary_exact(E.Sub, end, E.const(1, end.dtype)))
        lo, hi = self.seed(first)[0], self.seed(end)[1]
        new = v
        if _narrow(v.dtype) and _finite((lo, hi)) and not _fits((lo, hi), v.dtype):
            new = E.Var(v.name, WIDE)  # its own range leaves the dtype (a fuse of large axes)
            self.retyped[v] = new
        elif not _finite((lo, hi)):
            self.guards.check(end, f"the end of loop {v.name}")
        mn, ext = (self.fit(x, y, x, want=new.dtype) for x, y in ((s.min, mn), (s.extent, ext)))
        with self._scope(v, first, last):
            body = self.visit(s.body)
        if new is v and mn is s.min and ext is s.extent and body is s.body:
            return s
        return S.For(new, mn, ext, s.kind, body, s.thread_tag)

    def visit_LetStmt(self, s: S.LetStmt):
        self.where = ("the value of", s.var)
        var, value = self._let(s.var, s.value)
        with self._scope(s.var, s.value, s.value):
            body = self.visit(s.body)
        if var is s.var and value is s.value and body is s.body:
            return s
        return S.LetStmt(var, value, body)

    def _let(self, var: E.Var, value: E.PrimExpr) -> tuple[E.Var, E.PrimExpr]:
        """The (possibly widened) variable and its value; a widened variable is widened in the body too."""
        new = self.expr(value)
        if new.dtype == var.dtype:
            return var, new
        if _fits(self.seed(value), var.dtype):
            return var, _narrow_to(new, var.dtype)
        wide = E.Var(var.name, new.dtype)
        self.retyped[var] = wide
        return wide, new

    def visit_BufferStore(self, s: S.BufferStore):
        self.where = ("the index of", s.buffer)
        idx = tuple(self.expr(i) for i in s.indices)
        self.where = ("the value stored to", s.buffer)
        value = self.fit(s.value, self.expr(s.value), s.value, data=True)  # a store narrows as NumPy's would
        if value is s.value and all(a is b for a, b in zip(idx, s.indices)):
            return s
        return S.BufferStore(s.buffer, value, idx)

    def visit_IfThenElse(self, s: S.IfThenElse):
        self.where = ("the condition", s.condition)
        cond = self.visit(s.condition)
        with self.guards.assume(s.condition):
            then = self.visit(s.then_case)
        els = s.else_case
        if els is not None:
            with self.guards.assume(E.logical_not(s.condition)):
                els = self.visit(els)
        if cond is s.condition and then is s.then_case and els is s.else_case:
            return s
        return S.IfThenElse(cond, then, els)

    def visit_Allocate(self, s: S.Allocate):
        old = s.buffer
        self.where = ("the size of", old)
        shape = tuple(self.expr(x) for x in old.shape)  # either dtype: the targets multiply in int64
        self._guard_bytes(old, shape)
        body = self.visit(s.body)
        if all(a is b for a, b in zip(shape, old.shape)):
            return s if body is s.body else S.Allocate(old, body)
        new = S.Buffer(old.name, old.dtype, shape, old.scope)
        return S.Allocate(new, replace_buffer(body, old, new))

    def _guard_bytes(self, buf: S.Buffer, shape: tuple[E.PrimExpr, ...]) -> None:
        """The targets count a temporary's bytes in int64: sizes that take the count past it
        would allocate a wrapped-around (small) block and write past its end. The count is
        guarded like any index (stage ``buf.name``'s, in its own words in the error)."""
        if all(isinstance(x, E.IntImm) for x in shape):
            return
        nbytes: E.PrimExpr = E.IntImm(max(buf.dtype.bits // 8, 1) * buf.dtype.lanes, int64)
        for x in shape:
            nbytes = E.Mul(_widen(x, int64), nbytes)
        self.guards.check(nbytes, f"the byte count of the temporary of stage {buf.name!r}")

    # ---- expressions -----------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> E.PrimExpr:
        """``e`` computed in dtypes that hold its values: its own dtype, or int64 (lane-wise)."""
        return memoized(self.memo, e, self._expr)

    def _expr(self, e: E.PrimExpr) -> E.PrimExpr:
        rule = self.rules.get(type(e))
        return rule(e) if rule is not None else self._keep(e)

    def _rules(self) -> dict[type, Callable[[E.PrimExpr], E.PrimExpr]]:
        rules: dict[type, Callable] = {E.Var: lambda e: self.retyped.get(e, e), E.Ramp: self._ramp,
                                       E.Select: self._select, E.Broadcast: self._broadcast,
                                       E.Cast: self._cast, E.BufferLoad: self._load, E.Let: self._let_expr}
        for t in (E.IntImm, E.FloatImm, E.StringImm):
            rules[t] = lambda e: e
        for t in _ARITH:
            rules[t] = self._binary
        for t in (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE):
            rules[t] = self._compare
        return rules

    def _binary(self, e: E.BinaryOp) -> E.PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        same = a is e.a and b is e.b
        if not _narrow(e.dtype) or (a.dtype == e.dtype and b.dtype == e.dtype and _fits(self.seed(e), e.dtype)):
            return e if same else type(e)(a, b)  # the common case: nothing to widen
        cls = type(e)
        # E.binary folds the constants that a promotion makes foldable (int64(49999)*int64(50000))
        return self.arith(e, (e.a, e.b), (a, b), same, lambda x, y: cls(x, y) if x.dtype == e.dtype else E.binary(cls, x, y))

    def _ramp(self, e: E.Ramp) -> E.PrimExpr:
        news = (self.expr(e.base), self.expr(e.stride))
        same = news[0] is e.base and news[1] is e.stride
        return self.arith(e, (e.base, e.stride), news, same, lambda a, b: E.Ramp(a, b, e.lanes))

    def _select(self, e: E.Select) -> E.PrimExpr:
        c = self.expr(e.condition)
        news = (self.expr(e.true_value), self.expr(e.false_value))
        same = c is e.condition and news[0] is e.true_value and news[1] is e.false_value
        return self.arith(e, (e.true_value, e.false_value), news, same, lambda a, b: E.Select(c, a, b))

    def _broadcast(self, e: E.Broadcast) -> E.PrimExpr:
        v = self.expr(e.value)
        return e if v is e.value else E.Broadcast(v, e.lanes)

    def _compare(self, e: E.CmpOp) -> E.PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        if a.dtype != b.dtype:  # compare in the wider type: exact for both
            a, b = _widen(a, WIDE.with_lanes(a.dtype.lanes)), _widen(b, WIDE.with_lanes(b.dtype.lanes))
        return e if a is e.a and b is e.b else type(e)(a, b)

    def _cast(self, e: E.Cast) -> E.PrimExpr:
        v = self.expr(e.value)
        if v is e.value:
            return e
        return v if v.dtype == e.dtype else E.Cast(e.dtype, v)

    def _load(self, e: E.BufferLoad) -> E.PrimExpr:
        where, self.where = self.where, ("the index of", e.buffer)
        idx = tuple(self.expr(i) for i in e.indices)  # any index dtype will do
        self.where = where
        return e if all(a is b for a, b in zip(idx, e.indices)) else E.BufferLoad(e.buffer, idx)

    def _let_expr(self, e: E.Let) -> E.PrimExpr:
        var, value = self._let(e.var, e.value)
        with self._scope(e.var, e.value, e.value):
            body = self.fit(e.body, self.expr(e.body), e)
        return e if (var is e.var and value is e.value and body is e.body) else E.Let(var, value, body)

    def _keep(self, e: E.PrimExpr) -> E.PrimExpr:
        """Any other node (intrinsic calls, logic): its operands keep their dtypes."""
        def one(x):
            return self.fit(x, self.expr(x), e) if isinstance(x, E.PrimExpr) else x

        old = e.fields()
        new = [tuple(one(y) for y in x) if isinstance(x, tuple) else one(x) for x in old]
        if all(a is b or (isinstance(a, tuple) and all(p is q for p, q in zip(a, b))) for a, b in zip(old, new)):
            return e
        return type(e)(*new)

    def arith(self, e: E.PrimExpr, kids: tuple, news: tuple, same: bool, rebuild: Callable) -> E.PrimExpr:
        """The dtype of an arithmetic node whose operands ``kids`` were rewritten to ``news``."""
        if not _narrow(e.dtype):
            return e if same else rebuild(*news)
        b = self.seed(e)
        grown = any(n.dtype != k.dtype for n, k in zip(news, kids))
        if not grown and _fits(b, e.dtype):
            return e if same else rebuild(*news)
        if _finite(b):  # bounded: computed in int64, whatever its value (the consumer narrows it)
            return rebuild(*[_widen(n, WIDE.with_lanes(n.dtype.lanes)) for n in news])
        fitted = [self.fit(k, n, e) for k, n in zip(kids, news)]  # unbounded: keeps its dtype
        if not self.reads_data(e):  # size arithmetic: checked at every call
            self.guards.check(e, self.place())
        return e if all(f is k for f, k in zip(fitted, kids)) else rebuild(*fitted)

    def fit(self, orig: E.PrimExpr, new: E.PrimExpr, parent: E.PrimExpr, want: DType | None = None,
            data: bool = False) -> E.PrimExpr:
        """``new`` (the rewritten ``orig``) in ``want`` (by default ``orig``'s dtype) for a
        consumer that needs that dtype."""
        want = orig.dtype if want is None else want
        if new.dtype == want:
            return new
        if want.element.bits > new.dtype.element.bits:
            return _widen(new, want)
        if _fits(self.seed(orig), want) or data or self.reads_data(parent):
            return _narrow_to(new, want)  # exact, or data arithmetic that wraps in its dtype anyway
        raise self._cannot(orig, parent, want)

    def place(self) -> str:
        """Where the expression being rewritten is, in a user's words (``the index of B``)."""
        what, obj = self.where
        if isinstance(obj, E.PrimExpr):
            return f"{what} `{obj}`"
        return f"{what} {obj.name}" if obj is not None else what

    def reads_data(self, e: E.PrimExpr) -> bool:
        hit = self._data.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        found = isinstance(e, E.BufferLoad) or any(
            self.reads_data(y) for x in e.fields() for y in (x if isinstance(x, tuple) else (x,))
            if isinstance(y, E.PrimExpr))
        self._data[id(e)] = (e, found)
        return found

    def _cannot(self, orig: E.PrimExpr, parent: E.PrimExpr, want: DType) -> LowerError:
        lo, hi = self.seed(orig)
        reach = hi if hi > want.element.max_value() else lo
        sizes = sorted(v.name for v in self.guards.sizes)
        if sizes:
            why = (f"which uses the symbolic size(s) {', '.join(sizes)} and so keeps their dtype {want} "
                   "(seed 002: an expression with a symbolic size is not promoted to int64)")
            fix = (f"declare the size(s) int64 (te.var({sizes[0]!r}, dtype='int64')), or keep the "
                   f"intermediate value within {want}")
        else:
            why = f"which tessel cannot bound and so keeps in {want}"
            fix = "compute it in int64 with an explicit .astype('int64')"
        return LowerError(
            f"{self.place()}: `{orig}` can reach {_bound_text(reach)}, beyond {want}, inside `{parent}`, {why}; "
            f"nothing can make this index exact: {fix}"
        )


def _bound_text(x: float) -> str:
    """A bound as a message says it: an integer, or "any value" when the analysis has none (an
    unbounded end is infinite, which ``int`` cannot convert)."""
    return str(int(x)) if math.isfinite(x) else ("any value" if x > 0 else "any negative value")


__all__ = ["WIDE", "index_dtype"]
