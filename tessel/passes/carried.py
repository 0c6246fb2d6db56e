"""Which loops of a kernel carry a dependence through memory, so that the C compiler's own
auto-vectorizer is kept off them.

tessel's C for a recurrence, a scan or an in-place stencil is right as a sequential program,
but at ``-O3`` the C compiler may vectorize it anyway, relying on its own dependence analysis,
and that analysis has bugs: GCC 12 at ``-O3 -march=native`` vectorizes the outer loop of
``for i < 7, j < 7: A[i*10+j+11] = A[i*10+j] + A[i*10+j+22]`` and gets other values than at
``-O2``. tessel knows these loops exactly, so it does not hand them over: the generator puts
an empty ``__asm__ volatile("")`` at the top of each one's body (see ``CStmtWriter.visit_For``),
which no vectorizer moves lanes across (GCC 12 keeps the inner loops vectorized; ``#pragma GCC
novector`` exists only from GCC 14 and GCC 12 ignores it; clang's ``#pragma clang loop
vectorize(disable)`` is clang's alone), and leaves every other loop to the vectorizer.

A sequential loop ``v`` *carries* a dependence here when its body writes a buffer that it also
reads (or writes) at another index, and two different iterations ``v`` and ``v + d`` (``d >=
1``; either access first) may touch one element, the loops inside ``v`` running over their
ranges independently on each side and the loops outside shared. With affine indices and
constant bounds (the Analyzer's, lets and the vectorizer's alignment peel included) this is
decided exactly by a search for an integer solution of ``index_x - index_y == 0`` in the box
of the variables' ranges; otherwise (symbolic sizes) the loop carries nothing only when the
Analyzer proves the difference of the indices nonzero. An index of no known form
(data-dependent, a vector that is not a ramp) counts as carrying: a loop kept scalar
needlessly costs speed, a vectorized one that should not be costs the values.

Left to the vectorizer, as carrying nothing here: a buffer read and written at the *same* index
(``C[i, j] += ...``: a reduction into its element, matmul's and every sum's, which every
vectorizer handles); indices that do not vary inside the loop (each iteration touches the same
elements); a temporary allocated inside the loop (a new one in each iteration); each iteration
touching a block of its own (a tiled output); a parallel or vectorized loop, whose iterations
legality checked independent against the exact dependences.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import cached_property

from ..arith import Analyzer
from ..arith import const_bound as cb
from ..arith.linear import IntForm, add_terms, affine_terms, form_bounds, int_form, solvable_in_box
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import (
    StructKey,
    Visitor,
    collect,
    free_vars,
    ir_transform,
    structural_equal,
    substitute,
    uses_var,
)
from ..ir.intrinsics import ADDRESS_OPS
from ..ir.stmt import LoopKind
from ..tunables import current

#: the loops whose iterations run one after the other; a parallel loop's (threads) or a
#: vectorized one's (lanes) are independent, which legality checked against the exact
#: dependences, so there is nothing for the guard to keep
_SEQUENTIAL = (LoopKind.SERIAL, LoopKind.UNROLLED)


@dataclass(frozen=True)
class _Access:
    """A load or store: its flat index (affine lets substituted), the loops around it and
    how many of them are outside its buffer's allocation."""

    buffer: S.Buffer
    index: E.PrimExpr
    shown: E.PrimExpr  # the index as the IR writes it (for the reason)
    store: bool
    loops: tuple[S.For, ...]
    allocated_at: int
    lanes: int

    @cached_property
    def form(self) -> IntForm | None:
        """The index as a form over variables by id, a ramp's lane as "lane" (asked only of
        the accesses of a buffer some loop writes)."""
        flat = self.index.value if isinstance(self.index, E.Broadcast) else self.index
        if isinstance(flat, E.Ramp):
            base, stride = int_form(flat.base), int_form(flat.stride)
            ok = base is not None and stride is not None and not stride[0]
            return (add_terms(base[0], {"lane": stride[1]}), base[1]) if ok else None
        return int_form(flat) if flat.dtype.lanes == 1 else None


def carrying_loops(func: S.PrimFunc | S.Stmt, kinds: tuple[LoopKind, ...] = _SEQUENTIAL) -> dict[int, str]:
    """``id(loop) -> why`` for every loop of ``func`` (of one of ``kinds``) that carries a
    dependence (see the module). The vectorize pass asks it of its vectorized loops: lanes run
    in lockstep, which is right exactly when no two iterations touch one element."""
    if isinstance(func, S.PrimFunc):
        sizes = {v for b in func.params for d in b.shape for v in free_vars(d)}
        facts = [E.GE(v, E.IntImm(0, v.dtype)) for v in sizes] + [c for _, c in func.assumptions]
        body = func.body
    else:
        facts, body = [], func
    walk = _Accesses(facts, kinds)
    walk.visit(body)
    walk.finish()
    out: dict[int, str] = {}
    for loop, outer in walk.loops:
        if loop.kind not in kinds:
            continue
        at = len(outer)
        # a temporary allocated inside the loop is a new one in each iteration
        under = [a for a in walk.accesses if len(a.loops) > at and a.loops[at] is loop and a.allocated_at <= at]
        why = _carried(loop, outer, walk, facts, under)
        if why:
            out[id(loop)] = why
    return out


def _carried(loop: S.For, outer: tuple[S.For, ...], walk: _Accesses, facts: list, under: list[_Access]) -> str | None:
    """``_Loop.carried``, once per residue of the outer loops' variables where an index takes
    one modulo a constant (a folded storage's slot, ``h[(t + 1) % 2, i]`` against ``h[t % 2, i +
    1]``): the slots are then constants, and the two sides, which share the outer loops, are
    seen to touch different ones. Without this the index has no affine form and the inner loop
    was kept from the vectorizer."""
    for accesses, ranges in _by_residue(under, outer, walk):
        test = _Loop(loop, outer, walk, facts)
        test.shared.update(ranges)
        why = test.carried(accesses)
        if why:
            return why
    return None


def _by_residue(under: list[_Access], outer: tuple[S.For, ...], walk: _Accesses):
    """``(accesses, ranges)`` per residue modulo ``M`` (the moduli's lcm) of the outer variables
    that indices take modulo a constant: each such variable ``v`` written ``M * q + r``, ``q``
    shared over (a superset of) its range, the modulos folded to constants; ``under`` alone
    when there are none or too many residues."""
    loops = {lp.loop_var: walk.ranges[id(lp)] for lp in outer if id(lp) in walk.ranges}
    mods = [m for a in under for m in collect(a.index, lambda n: isinstance(n, E.FloorMod))
            if isinstance(m.b, E.IntImm) and m.b.value > 0 and free_vars(m.a) and free_vars(m.a) <= loops.keys()
            and (t := affine_terms(m.a)) is not None and isinstance(t[1], E.IntImm)]
    if not mods:
        yield under, {}
        return
    vs = sorted({v for m in mods for v in free_vars(m.a)}, key=lambda v: v.name)
    big = math.lcm(*(m.b.value for m in mods))
    if big ** len(vs) > current().max_residues:
        yield under, {}
        return
    qs = {v: E.Var(f"{v.name}_q", v.dtype) for v in vs}
    ranges = {id(qs[v]): (loops[v][0] // big, loops[v][1] // big) for v in vs}
    for rs in itertools.product(range(big), repeat=len(vs)):
        at = dict(zip(vs, rs))
        if any(not _has_residue(loops[v], big, r) for v, r in at.items()):
            continue
        folded = {id(m): _mod_at(m, at) for m in mods}
        vmap = {v: E.add(E.mul(E.IntImm(big, v.dtype), qs[v]), E.IntImm(r, v.dtype)) for v, r in at.items()}
        yield [replace(a, index=substitute(ir_transform(a.index, None, lambda n, f=folded: f.get(id(n))), vmap))
               for a in under], ranges


def _has_residue(span: tuple[int, int], big: int, r: int) -> bool:
    lo, hi = span
    return hi - lo + 1 >= big or any((x - r) % big == 0 for x in range(lo, hi + 1))


def _mod_at(m: E.FloorMod, at: dict) -> E.IntImm:
    """``m`` (``(sum c * v + k) % b``) where each ``v`` is ``at[v]`` modulo a multiple of ``b``."""
    terms, const = affine_terms(m.a)
    value = sum(c * at[v] for v, c in terms.items()) + const.value
    return E.IntImm(value % m.b.value, m.dtype)


class _Accesses(Visitor):
    """Every load and store with its loops; every loop with the loops outside it; the
    constant range of each loop's variable and of each let that is not affine (kept as a
    variable), where the Analyzer bounds them."""

    def __init__(self, facts: list, kinds: tuple[LoopKind, ...] = _SEQUENTIAL) -> None:
        self.kinds = kinds
        self.accesses: list[_Access] = []
        self.raw: list[tuple] = []  # what _record saw; made accesses by finish
        self.loops: list[tuple[S.For, tuple[S.For, ...]]] = []
        self.ranges: dict[int, tuple[int, int]] = {}  # id(loop) -> (first, last) value of its variable
        self.lets: dict[int, tuple[int, tuple[int, int] | None]] = {}  # id(var) -> (loops around, range)
        self.stack: list[S.For] = []
        self.env: dict[E.Var, E.PrimExpr] = {}
        self.allocated: dict[int, int] = {}  # id(buffer) -> loops around the allocation being walked
        self.ana = Analyzer()
        for c in facts:
            self.ana.assume(c)

    def _range(self, lo: E.PrimExpr, last: E.PrimExpr) -> tuple[int, int] | None:
        a, b = self.ana.const_int_bound(lo)[0], self.ana.const_int_bound(last)[1]
        return None if a is None or b is None else (a, b)

    def visit_For(self, s: S.For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        got = self._range(s.min, E.sub(E.add(s.min, s.extent), 1))
        if got is not None:
            self.ranges[id(s)] = got
        self.loops.append((s, tuple(self.stack)))
        self.stack.append(s)
        with self.ana.scoped_bind(s.loop_var, E.Range(s.min, s.extent)):
            self.visit(s.body)
        self.stack.pop()

    def visit_Allocate(self, s: S.Allocate) -> None:
        saved = self.allocated.get(id(s.buffer))
        self.allocated[id(s.buffer)] = len(self.stack)
        self.generic_visit(s)
        if saved is None:
            del self.allocated[id(s.buffer)]
        else:
            self.allocated[id(s.buffer)] = saved

    def _let(self, var: E.Var, value, body) -> None:
        self.visit(value)
        value = substitute(value, self.env) if self.env else value
        if int_form(value) is not None:
            self.env[var] = value
            self.visit(body)
            del self.env[var]
            return
        gaps = {id(c): E.Var("gap", c.dtype) for c in collect(value, lambda n: cb.align_gap_bound(n) is not None)}
        for c in collect(value, lambda n: id(n) in gaps):
            lo, hi = cb.align_gap_bound(c)
            self.ana.bind(gaps[id(c)], E.Range(lo, hi - lo + 1))
        value = ir_transform(value, None, lambda n: gaps.get(id(n))) if gaps else value
        got = self._range(value, value)
        self.lets[id(var)] = (len(self.stack), got)
        with self.ana.scoped_bind(var, E.Range(got[0], got[1] - got[0] + 1) if got else value):
            self.visit(body)

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        self._let(s.var, s.value, s.body)

    def visit_Let(self, e: E.Let) -> None:
        self._let(e.var, e.value, e.body)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self._record(s.buffer, s.indices[0], True)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self._record(e.buffer, e.indices[0], False)
        self.generic_visit(e)

    def visit_Call(self, e: E.Call) -> None:
        if e.op in (*ADDRESS_OPS, "tsl_align_gap") and isinstance(e.args[0], E.BufferLoad):  # an address, not a read
            for x in (*e.args[0].indices, *e.args[1:]):
                self.visit(x)
            return
        self.generic_visit(e)

    def _record(self, buf: S.Buffer, idx: E.PrimExpr, store: bool) -> None:
        self.raw.append((buf, idx, store, tuple(self.stack), self.allocated.get(id(buf), 0),
                         dict(self.env) if self.env else None))

    def finish(self) -> None:
        """The accesses that may take part in a carried dependence, one per buffer, kind, index
        and loop nest: the stores, and the loads under a sequential loop around a store to
        their buffer (most loads are of inputs, or of a packed copy made in a nest of its own:
        a matmul's 200 unrolled loads of ``A`` and ``B``); an unrolled body repeats its
        accesses."""
        written: dict[int, set[int]] = {}  # id(buffer) -> the sequential loops around its stores
        for r in self.raw:
            if r[2]:
                written.setdefault(id(r[0]), set()).update(id(lp) for lp in r[3] if lp.kind in self.kinds)
        seen: dict[tuple, _Access] = {}
        for r in self.raw:
            loops = written.get(id(r[0]))
            if loops is not None and (r[2] or any(id(lp) in loops for lp in r[3])):
                a = self._access(*r)
                seen.setdefault((id(a.buffer), a.store, StructKey(a.index), tuple(map(id, a.loops)),
                                 a.allocated_at), a)
        self.accesses, self.raw = list(seen.values()), []

    @staticmethod
    def _access(buf: S.Buffer, idx: E.PrimExpr, store: bool, loops: tuple, allocated: int,
                env: dict | None) -> _Access:
        shown, idx = idx, substitute(idx, env) if env else idx
        flat = idx.value if isinstance(idx, E.Broadcast) else idx
        return _Access(buf, idx, shown, store, loops, allocated, flat.lanes if isinstance(flat, E.Ramp) else 1)


class _Loop:
    """The dependence test for one loop (its variable ``v``) against the accesses under it."""

    def __init__(self, loop: S.For, outer: tuple[S.For, ...], walk: _Accesses, facts: list):
        self.loop, self.outer, self.walk, self.facts = loop, outer, walk, facts
        self.at = len(outer)
        own = walk.ranges.get(id(loop))
        self.shared: dict[object, tuple[int, int]] = {id(lp.loop_var): walk.ranges[id(lp)] for lp in outer
                                                      if id(lp) in walk.ranges}
        self.answers: dict[tuple, bool] = {}
        if own is not None:
            self.shared[id(loop.loop_var)] = own
            self.shared["d"] = (1, own[1] - own[0])

    def carried(self, under: list[_Access]) -> str | None:
        """Why the loop carries a dependence through one of the ``under`` accesses (None: it carries none)."""
        by_buffer: dict[int, list[_Access]] = {}
        for a in under:
            by_buffer.setdefault(id(a.buffer), []).append(a)
        self.sides: dict[tuple[int, bool], tuple[IntForm, dict] | None] = {}
        self.signs: dict[tuple[int, bool], tuple] = {}
        for accs in by_buffer.values():
            if not any(a.store for a in accs):
                continue
            others = self._one_per_form(accs)
            if self.in_blocks(others):
                continue
            met = self._meeting([a for a in others if a.store], others)
            if met is not None:
                (s, a), what = met, "written" if met[1].store else "read"
                return f"{s.buffer.name} is written at [{s.shown}] and {what} at [{a.shown}] in another iteration"
        return None

    def _inner(self, a: _Access) -> tuple[int, ...]:
        """The loops inside this one around ``a``, by identity: two accesses alike in form under
        different loops (an unrolled body's copies keep their inner loops' variables, with
        other ranges) are asked about apart."""
        return tuple(map(id, a.loops[self.at + 1:]))

    def _one_per_form(self, accs: list[_Access]) -> list[_Access]:
        """One access per kind and form on both sides (without a form: per index and loop
        nest): every question about a pair depends on those alone, and the copies of an
        unrolled body repeat them (a register tile: 3,000 pairs of a few distinct ones)."""
        seen: dict[object, _Access] = {}
        for a in accs:
            self._cached_side(a, False)
            self._cached_side(a, True)
            sx, sy = self.signs.get((id(a), False)), self.signs.get((id(a), True))
            key = (a.lanes, sx, sy, self._inner(a)) if sx is not None and sy is not None else \
                (StructKey(a.index), tuple(map(id, a.loops)))
            seen.setdefault((a.store, key), a)
        return list(seen.values())

    def in_blocks(self, accs: list[_Access]) -> bool:
        """Whether each iteration touches a block of the buffer of its own: every index is
        ``C*v`` plus the same terms outside the loop plus a part inside it, and all those
        parts stay within fewer than ``|C|`` consecutive elements (a tiled output: no pair
        needs a look)."""
        v = id(self.loop.loop_var)
        step, shared, lo, hi = None, None, None, None
        for a in accs:
            side = self._cached_side(a, False)
            if side is None:
                return False
            (terms, const), ranges = side
            own = {k: c for k, c in terms.items() if isinstance(k, tuple) and c}
            common = {k: c for k, c in terms.items() if not isinstance(k, tuple) and k != v and c}
            if step is None:
                step, shared = terms.get(v, 0), common
            if not step or terms.get(v, 0) != step or common != shared:
                return False
            got = form_bounds((own, const), ranges)
            if got is None:
                return False
            lo, hi = (got if lo is None else (min(lo, got[0]), max(hi, got[1])))
        return step is not None and hi - lo < abs(step)

    def _inside(self, v: E.Var, a: _Access) -> bool:
        let = self.walk.lets.get(id(v))
        return let[0] > self.at if let is not None else any(lp.loop_var is v for lp in a.loops[self.at:])

    def varies(self, a: _Access) -> bool:
        """Whether ``a``'s index may change from one iteration of the loop to the next."""
        if a.form is not None:
            ids = {id(lp.loop_var) for lp in a.loops[self.at:]}
            lets = self.walk.lets
            return any(k in ids or (k in lets and lets[k][0] > self.at) for k in a.form[0])
        return uses_var(a.index, lambda v: self._inside(v, a))

    def _meeting(self, stores: list[_Access], others: list[_Access]) -> tuple[_Access, _Access] | None:
        """A store and an access that may touch one element, ``x`` in iteration ``v`` and ``y``
        in iteration ``v + d`` (``d >= 1``) for ``(x, y)`` either way round, what is inside the
        loop free on each side: exactly when the indices are affine and every variable has
        constant bounds, else as far as the Analyzer proves the difference of the indices
        nonzero. Accesses whose forms differ only in their constants form a class, and a pair of
        classes asks one question per difference of constants: a register tile's 24 stores are
        one class, 1,100 pairs, 77 questions."""
        classes: dict[tuple, list[_Access]] = {}
        unformed: set[int] = set()
        for a in others:
            kx, ky = self.signs.get((id(a), False)), self.signs.get((id(a), True))
            if id(self.loop.loop_var) not in self.shared or kx is None or ky is None:
                unformed.add(id(a))
                continue
            terms = frozenset((k, c) for k, c in a.form[0].items() if c)
            classes.setdefault((a.store, kx[0], ky[0], a.lanes, terms, self.varies(a), self._inner(a)), []).append(a)
        for cs, ss in classes.items():
            for ca, aa in classes.items():
                if cs[0] and (cs[5] or ca[5]):
                    met = self._classes_meet(cs, ss, ca, aa) or self._classes_meet(ca, aa, cs, ss)
                    if met is not None:
                        return met if met[0].store else (met[1], met[0])
        for s in stores:
            for a in others:
                if (id(s) in unformed or id(a) in unformed) and a is not s and (self.varies(s) or self.varies(a)) \
                        and not (_same_index(a, s) and self._inner(a) == self._inner(s)) \
                        and (self._analyzer_meet(s, a) or self._analyzer_meet(a, s)):
                    return s, a
        return None

    def _classes_meet(self, cx: tuple, xs: list[_Access], cy: tuple, ys: list[_Access]) -> tuple | None:
        """An ``x`` of one class and a ``y`` of another that meet (``y`` in the later iteration)."""
        # one index under the same loops: a difference of 0 is the same element, a reduction into it
        alike = cx[3:5] == cy[3:5] and cx[6] == cy[6]
        pairs = {y.form[1] - x.form[1]: (x, y) for x in xs for y in ys}
        if alike:
            pairs.pop(0, None)
        if not pairs:
            return None
        x, y = next(iter(pairs.values()))
        sums = self._sums(self.sides[(id(x), False)], self.sides[(id(y), True)])
        if sums is not None:
            return next((pair for target, pair in pairs.items() if target in sums), None)
        for target, (x, y) in pairs.items():
            key = (cx[1], cy[2], target)
            if key not in self.answers:
                self.answers[key] = self._meet_forms(self.sides[(id(x), False)], self.sides[(id(y), True)],
                                                     id(self.loop.loop_var))
            got = self.answers[key]
            if got or (got is None and self._analyzer_meet(x, y)):
                return x, y
        return None

    def _sums(self, sx, sy) -> set[int] | None:
        """Every value of the difference of two sides' terms, when the loop's own variable
        drops out of it (two iterations ``d`` apart, wherever they are: any ``d`` is one
        the loop has) and its box is small: each difference of constants is then a lookup
        (None: asked one by one)."""
        ranges = {**self.shared, **sx[1], **sy[1]}
        diff = {k: c for k, c in add_terms(sx[0][0], {k: -c for k, c in sy[0][0].items()}).items() if c}
        v = id(self.loop.loop_var)
        if v in diff or not all(k in ranges for k in diff):
            return None
        if ranges[v][1] - ranges[v][0] < 1:  # one iteration: no second one to meet
            return set()
        sums, most = {0}, current().max_sums
        for k, c in diff.items():
            lo, hi = ranges[k]
            if len(sums) * (hi - lo + 1) > most:
                return None
            sums = {t + c * x for t in sums for x in range(lo, hi + 1)}
        return sums

    def _meet_forms(self, sx, sy, v) -> bool | None:
        """Whether two sides given as forms meet (see :meth:`_meeting`); None: not decided by
        the forms (the Analyzer is asked)."""
        ranges = {**self.shared, **sx[1], **sy[1]}
        diff = {k: c for k, c in add_terms(sx[0][0], {k: -c for k, c in sy[0][0].items()}).items() if c}
        if not all(k in ranges for k in diff):
            return None
        last = self.shared[v][1]  # the second iteration, v + d, is one of the loop's too
        return solvable_in_box([(k, c, *ranges[k]) for k, c in diff.items()], sy[0][1] - sx[0][1],
                         lambda got: got.get(v, ranges[v][0]) + got.get("d", 1) <= last)

    def _cached_side(self, a: _Access, shift: bool) -> tuple[IntForm, dict] | None:
        key = (id(a), shift)
        if key not in self.sides:
            side = self.sides[key] = self._side(a, "y" if shift else "x", shift)
            if side is not None:  # what the side is, as a key: two accesses alike ask alike
                (terms, const), ranges = side
                self.signs[key] = ((frozenset(terms.items()), frozenset(ranges.items())), const)
        return self.sides[key]

    def _side(self, a: _Access, tag: str, shift: bool) -> tuple[IntForm, dict] | None:
        """``a``'s index as a form on one side (``shift``: in iteration ``v + d``), and the
        ranges of that side's own variables: the loops inside, the lets bound inside, a
        ramp's lane."""
        if a.form is None:
            return None
        v = id(self.loop.loop_var)
        inner = {id(lp.loop_var): lp for lp in a.loops[self.at + 1:]}
        terms: dict = {}
        ranges: dict[object, tuple[int, int]] = {}
        for k, c in a.form[0].items():
            let = self.walk.lets.get(k) if k != "lane" else None
            if k == v:
                terms = add_terms(terms, {v: c, "d": c} if shift else {v: c})
                continue
            if k == "lane" or k in inner or (let is not None and let[0] > self.at):
                got = (0, a.lanes - 1) if k == "lane" else self.walk.ranges.get(id(inner[k])) if k in inner else let[1]
                k = (tag, k)
            else:
                got = let[1] if let is not None else None
            if got is not None:
                ranges[k] = got
            terms[k] = terms.get(k, 0) + c
        return (terms, a.form[1]), ranges

    def _analyzer_meet(self, x: _Access, y: _Access) -> bool:
        loop = self.loop
        ana = Analyzer()
        for c in self.facts:
            ana.assume(c)
        for lp in self.outer:
            ana.bind(lp.loop_var, E.Range(lp.min, lp.extent))
        v = loop.loop_var
        ana.bind(v, E.Range(loop.min, loop.extent))
        d = E.Var("d", v.dtype)
        ana.bind(d, E.Range(E.IntImm(1, v.dtype), E.sub(loop.extent, E.IntImm(1, loop.extent.dtype))))
        xi = _analyzer_side(ana, self.at, x, {})
        yi = _analyzer_side(ana, self.at, y, {v: E.add(v, d)})
        if xi is None or yi is None:
            return True
        if xi.dtype != yi.dtype:
            xi, yi = E.cast(xi, "int64"), E.cast(yi, "int64")
        diff = E.sub(xi, yi)
        zero = E.IntImm(0, diff.dtype)
        return not (ana.can_prove(E.GT(diff, zero)) or ana.can_prove(E.LT(diff, zero)))


def _same_index(a: _Access, b: _Access) -> bool:
    """One index written two ways, or the same expression: a reduction into its element."""
    if a.form is not None and b.form is not None:
        return a.lanes == b.lanes and a.form[1] == b.form[1] and \
            {k: c for k, c in a.form[0].items() if c} == {k: c for k, c in b.form[0].items() if c}
    return structural_equal(a.index, b.index)


def _analyzer_side(ana: Analyzer, at: int, a: _Access, vmap: dict) -> E.PrimExpr | None:
    """``a``'s index on one side for the Analyzer: the loops inside the loop at depth ``at``
    (and a ramp's lane) as variables of this side alone, over their ranges, ``vmap`` applied
    (None: a vector index of no known form, or a let that is not affine)."""
    vmap = dict(vmap)
    for lp in a.loops[at + 1:]:
        fresh = E.Var(lp.loop_var.name, lp.loop_var.dtype)
        ana.bind(fresh, E.Range(substitute(lp.min, vmap), substitute(lp.extent, vmap)))
        vmap[lp.loop_var] = fresh
    idx = a.index
    if isinstance(idx, E.Broadcast):
        idx = idx.value
    elif isinstance(idx, E.Ramp):
        lane = E.Var("lane", idx.base.dtype)
        ana.bind(lane, E.Range(E.IntImm(0, lane.dtype), E.IntImm(idx.lanes, lane.dtype)))
        idx = E.add(idx.base, E.mul(idx.stride, lane))
    return substitute(idx, vmap) if idx.dtype.lanes == 1 else None


__all__ = ["carrying_loops"]
