"""Border iterations peeled off the loops whose body tests for them.

A stencil written over its whole array keeps its border by a test in the body
(``if_then_else(i == 0 || i == n - 1 || ..., border, stencil)``): every iteration pays for the
test, and the choice between loads stops the loop from becoming vector code (the lanes that
do not take the stencil would still read past the row). Loop partitioning cuts a loop where a
condition ``a*x + r < 0`` changes; an equality with the loop's first or last value is the
other shape such a test takes, and this pass handles it: the first and last iterations run
apart, and in the loop left in between the test is false and is simplified away, so its
inner loops are peeled in turn and the interior runs with no test at all.

A body that tests its loop's variable modulo a small constant (``(t + 1) % 2 == 0``: the arrays
taking turns of ``store_in([A, B], ...)``, chosen by the step's parity) has its residues run
apart the same way: the loop steps by the modulus, with one copy of the body per residue, in
which the test is a constant.

A serial loop whose body compares its variable with a value the loop does not change (``r ==
k + 1``, ``j > k``, ``r > 17``: a solver's row of the pivot, the triangle past it, one array's
rows of a state that holds several) is split where that value falls inside it -- before it, at
it and after it for an equality, below and from it for an order -- when the enclosing loops'
ranges prove it inside; each piece is simplified knowing its range, in which the test is a
constant (Polly's index-set splitting, for the tests loop partitioning does not see: those of
a value's choices, ``if_then_else``, rather than of an ``if``).

The iterations run in the same order as before, so nothing the schedule proved changes; only
loops of constant bounds have their ends peeled (a body is copied at most three times per loop,
or once per iteration of a loop of at most ``SPLIT_WHOLE``), a kernel's splits at inner points
are at most ``MAX_POINT_SPLITS``, only when the test is on the loop's own variable, and never a
loop bound to a GPU thread (``if (threadIdx.x == 0)`` is a test each thread makes of its own index).
"""

from __future__ import annotations

from ..arith import Analyzer
from ..arith.budget import proof_budget
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, free_vars, substitute
from ..ir.stmt import LoopKind
from .simplify import simplify_stmt, unless_itself

#: a loop this short whose body tests its variable for a value runs each iteration apart (the
#: cases of a field index: ``if_then_else(f == 0, ey, if_then_else(f == 1, ex, hz))``)
SPLIT_WHOLE = 4
#: loops of one kernel whose residues run apart: each copies its body up to SPLIT_WHOLE times,
#: so nested ones multiply; past this many the rest keep their tests (still right, only slower)
MAX_RESIDUE_SPLITS = 8
#: splits of one kernel's loops at a point inside them (each copies a body two or three times)
MAX_POINT_SPLITS = 24


def peel_borders(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` with the border iterations its tests single out run apart (see the module).
    One walk first: most kernels test nothing of a loop's variable, and then no loop's body is
    searched."""
    loops = {lp.loop_var for lp in collect(stmt, lambda n: isinstance(n, S.For), statements_only=True)}
    if not collect(stmt, lambda n: isinstance(n, E.CmpOp) and (_var_and_constant(n) or n.a in loops or n.b in loops)):
        return stmt
    with proof_budget("border peeling"):
        return _Peel().visit(stmt)


class _Peel(Mutator):
    statements_only = True

    def __init__(self) -> None:
        self.residue_splits = 0
        self.point_splits = 0
        self.around: list[S.For] = []  # the loops around the one visited, outermost first
        self.ana = Analyzer()

    def visit_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:  # a piece peeled to nothing leaves no trace
        return S.seq(*[self.visit(x) for x in s.seq])

    def visit_For(self, s: S.For) -> S.Stmt:
        ends = _tested_ends(s)
        k = None if ends or self.residue_splits >= MAX_RESIDUE_SPLITS else _tested_modulus(s)
        if k is not None:
            self.residue_splits += 1
            return S.seq(*[self.visit(p) for p in _residues(s, k)])
        if not ends:
            cut = self._inner_point(s) if self.point_splits < MAX_POINT_SPLITS else None
            if cut is not None:
                self.point_splits += 1
                return S.seq(*[self.visit(p) for p in self._split(s, *cut)])
            self.around.append(s)
            try:
                with self.ana.scoped_bind(s.loop_var, E.Range(s.min, s.extent)):
                    body = self.visit(s.body)
            finally:
                self.around.pop()
            return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)
        lo, n = s.min.value, s.extent.value
        if n <= SPLIT_WHOLE:  # a short loop over cases (a field index): each iteration apart
            return S.seq(*[self.visit(_one(s, lo + k)) for k in range(n)])
        first, last = lo in ends, lo + n - 1 in ends
        start, count = lo + first, n - first - last
        pieces = []
        if first:
            pieces.append(_one(s, lo))
        pieces.append(_Chosen().visit(simplify_stmt(S.For(s.loop_var, E.IntImm(start, s.min.dtype),
                                                          E.IntImm(count, s.extent.dtype), s.kind, s.body,
                                                          s.thread_tag), keep_unit_loops=True)))
        if last:
            pieces.append(_one(s, lo + n - 1))
        return S.seq(*[self.visit(p) for p in pieces])


    def _inner_point(self, s: S.For) -> tuple[E.PrimExpr, bool] | None:
        """Where to split ``s`` (see the module): the first value of its variable from which a
        test of it against a value ``s`` does not change flips, and whether the test is an
        equality (true at that value alone); None when no such point lies provably inside."""
        if s.kind != LoopKind.SERIAL:
            return None
        v, end = s.loop_var, E.add(s.min, s.extent)
        inner = _bound_inside(s.body)
        for c in _conditions(s.body):
            for atom in collect(c, lambda n: isinstance(n, E.CmpOp) and not isinstance(n, E.NE)):
                if atom.a.dtype.is_float or (atom.a is v) == (atom.b is v):
                    continue
                op, e = (type(atom), atom.b) if atom.a is v else (_MIRROR.get(type(atom), type(atom)), atom.a)
                if v in free_vars(e) or free_vars(e) & inner:
                    continue
                at = E.add(e, 1) if op in (E.LE, E.GT) else e
                # inside for every value of the loops around (an order's point may be an end: a
                # piece then runs no iteration for those values, and the test is decided in both)
                hi_ok = E.lt(at, end) if op is E.EQ else E.le(at, end)
                if self.ana.can_prove(E.le(s.min, at)) and self.ana.can_prove(hi_ok):
                    return self.ana.simplify(at), op is E.EQ
        return None

    def _split(self, s: S.For, at: E.PrimExpr, point: bool) -> list[S.Stmt]:
        """``s`` as the loops below ``at`` and from it (from past it, with ``at`` alone in
        between, for an equality), each simplified knowing its range and the loops around."""
        v, end = s.loop_var, E.add(s.min, s.extent)
        facts = [f for lp in self.around for f in (E.ge(lp.loop_var, lp.min), E.lt(lp.loop_var, E.add(lp.min, lp.extent)))]
        after = E.add(at, 1) if point else at
        pieces = [S.For(v, s.min, self.ana.simplify(E.sub(at, s.min)), s.kind, s.body, s.thread_tag)]
        if point:
            pieces.append(S.For(v, at, E.const(1, s.extent.dtype), s.kind, s.body, s.thread_tag))
        pieces.append(S.For(v, after, self.ana.simplify(E.sub(end, after)), s.kind, s.body, s.thread_tag))
        return [_Chosen().visit(simplify_stmt(p, assume=facts)) for p in pieces]


def _conditions(body: S.Stmt) -> list[E.PrimExpr]:
    """The conditions of the choices in ``body``: its ``if``s, selects and ``if_then_else``s."""
    conds = [n.condition for n in collect(body, lambda n: isinstance(n, S.IfThenElse | E.Select))]
    return conds + [n.args[0] for n in collect(body, lambda n: isinstance(n, E.Call) and n.op == "if_then_else")]


def _bound_inside(body: S.Stmt) -> set[E.Var]:
    """The variables ``body`` binds itself (its loops' and lets'): a value made of them changes
    inside the loop, so the loop is not split at it."""
    out = {n.loop_var for n in collect(body, lambda n: isinstance(n, S.For), statements_only=True)}
    out |= {n.var for n in collect(body, lambda n: isinstance(n, S.LetStmt | E.Let))}
    return out


def _one(s: S.For, at: int) -> S.Stmt:
    """Iteration ``at`` of ``s``: its body with the variable at that value, simplified."""
    unit = S.For(s.loop_var, E.IntImm(at, s.min.dtype), E.IntImm(1, s.extent.dtype), s.kind, s.body, s.thread_tag)
    return _Chosen().visit(simplify_stmt(unit))


class _Chosen(Mutator):
    """A choice whose condition the peeling made a constant is its chosen side (the simplifier
    leaves ``if_then_else(true, a, b)`` as written); a store that then stores an element's own
    value is nothing, and so is a loop left with nothing to do."""

    def visit_For(self, s: S.For):
        s = self.generic_visit(s)
        return s.body if _nothing(s.body) else s

    def visit_SeqStmt(self, s: S.SeqStmt):
        return S.seq(*[self.visit(x) for x in s.seq])

    def visit_Call(self, e: E.Call):
        e = self.generic_visit(e)
        if e.op == "if_then_else" and isinstance(e.args[0], E.IntImm):
            return e.args[1] if e.args[0].value else e.args[2]
        return e

    def visit_BufferStore(self, s: S.BufferStore):
        return unless_itself(self.generic_visit(s))

    def visit_Select(self, e: E.Select):
        e = self.generic_visit(e)
        if isinstance(e.condition, E.IntImm):
            return e.true_value if e.condition.value else e.false_value
        return e


def _var_and_constant(n: E.CmpOp) -> bool:
    """Whether a comparison is of a variable with a constant (or an equality, the residue tests':
    ``(t + 1) % 2 == 0``), the only tests this pass acts on."""
    kinds = {type(n.a), type(n.b)}
    return isinstance(n, E.EQ) or kinds == {E.Var, E.IntImm}


def _residues(s: S.For, k: int) -> list[S.Stmt]:
    """``s`` as a loop stepping by ``k`` over ``k`` copies of its body, one per residue of its
    variable, then the iterations left over."""
    v, lo = s.loop_var, s.min.value
    q = E.Var(f"{v.name}.turn", v.dtype)
    first = E.add(E.const(lo, v.dtype), E.mul(q, E.const(k, v.dtype)))
    copies = [substitute(s.body, {v: E.add(first, E.const(r, v.dtype))}) for r in range(k)]
    whole = E.floordiv(s.extent, E.const(k, s.extent.dtype))
    main = _Chosen().visit(simplify_stmt(S.For(q, E.IntImm(0, whole.dtype), whole, s.kind, S.seq(*copies), s.thread_tag),
                                         keep_unit_loops=True))
    done = E.add(E.const(lo, v.dtype), E.mul(whole, E.const(k, v.dtype)))
    if isinstance(s.extent, E.IntImm):
        return [main, *(_one(s, done.value + r) for r in range(s.extent.value % k))]
    left = E.sub(s.extent, E.mul(whole, E.const(k, s.extent.dtype)))
    return [main, S.For(v, done, left, s.kind, s.body, s.thread_tag)]


def _affine(e: E.PrimExpr) -> bool:
    """Whether ``e`` is an integer combination of variables and constants (then a copy's
    ``(k*q + r + c) % k`` folds to a constant)."""
    if isinstance(e, E.Var | E.IntImm):
        return True
    if isinstance(e, E.Add | E.Sub):
        return _affine(e.a) and _affine(e.b)
    if isinstance(e, E.Mul):
        return (isinstance(e.a, E.IntImm) and _affine(e.b)) or (isinstance(e.b, E.IntImm) and _affine(e.a))
    return False


def _tested_modulus(s: S.For) -> int | None:
    """``k`` when a condition in ``s``'s body tests an expression of its variable alone modulo
    ``k`` (a constant of at most ``SPLIT_WHOLE``) for equality, and its first value is a
    constant (then each residue's test folds)."""
    if not isinstance(s.min, E.IntImm) or s.kind not in (LoopKind.SERIAL, LoopKind.PARALLEL):
        return None
    v = s.loop_var
    conds = [n.condition for n in collect(s.body, lambda n: isinstance(n, S.IfThenElse | E.Select))]
    conds += [n.args[0] for n in collect(s.body, lambda n: isinstance(n, E.Call) and n.op == "if_then_else")]
    found = None
    for c in conds:
        for atom in collect(c, lambda n: isinstance(n, E.EQ)):
            for m in (atom.a, atom.b):
                if (isinstance(m, E.FloorMod) and isinstance(m.b, E.IntImm) and 1 < m.b.value <= SPLIT_WHOLE
                        and free_vars(m.a) == {v} and _affine(m.a)):
                    found = max(found or 0, m.b.value)
    if found is None or (isinstance(s.extent, E.IntImm) and s.extent.value < 2 * found):
        return None
    return found


def _nothing(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.IntImm)


def _tested_ends(s: S.For) -> set[int]:
    """The first and last values of ``s``'s variable that a condition in its body singles out
    (``x == 0``, ``x == n - 1``, ``x < n - 1``), when its bounds are constants and it has at
    least three iterations."""
    if not (isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)) or s.extent.value < 2:
        return set()
    if s.kind == LoopKind.THREAD_BINDING:  # a GPU thread's index is one value per thread, not a loop to cut
        return set()
    v, lo, hi = s.loop_var, s.min.value, s.min.value + s.extent.value - 1
    conds = [n.condition for n in collect(s.body, lambda n: isinstance(n, S.IfThenElse | E.Select))]
    conds += [n.args[0] for n in collect(s.body, lambda n: isinstance(n, E.Call) and n.op == "if_then_else")]
    out: set[int] = set()
    for c in conds:
        for atom in collect(c, lambda n: isinstance(n, E.CmpOp)):
            a, b = atom.a, atom.b
            k = b if a is v else a if b is v else None
            if not isinstance(k, E.IntImm):
                continue
            if isinstance(atom, E.EQ):
                if k.value in (lo, hi) or (s.extent.value <= SPLIT_WHOLE and lo <= k.value <= hi):
                    out.add(k.value)
            elif s.extent.value >= 3:
                out |= _singled_out(type(atom) if a is v else _MIRROR.get(type(atom)), k.value, lo, hi)
    return out


#: ``k < v`` is ``v > k``, and so on
_MIRROR = {E.LT: E.GT, E.LE: E.GE, E.GT: E.LT, E.GE: E.LE}


def _singled_out(op, k: int, lo: int, hi: int) -> set[int]:
    """The end of ``[lo, hi]`` whose value alone decides ``v op k`` (``i < n - 1``: the last
    row of a stencil that skips it), if there is one."""
    first, last = {  # the k at which the test is false (or true) at only the first / the last value
        E.LT: (lo + 1, hi), E.LE: (lo, hi - 1), E.GT: (lo, hi - 1), E.GE: (lo + 1, hi)}.get(op, (None, None))
    return ({lo} if k == first else set()) | ({hi} if k == last else set())


__all__ = ["peel_borders"]
