"""tessel's index expressions as isl quasi-affine functions, over named spaces.

Everything tessel says to isl passes through this module and its siblings in ``poly/``; no
other package imports islpy (its API moves between yearly releases, so it is pinned in
``pyproject.toml`` and wrapped here).

Names are data: a stage, axis or size variable may be called anything, so isl never sees a
user's string. :class:`Namer` gives every object (a loop variable, a size variable, a stage, a
tensor) one isl name made of ``[A-Za-z0-9_]`` and unique within a model; the user's name
is kept beside it for messages.

:class:`Converter` turns an expression into a piecewise quasi-affine function of the space's
dimensions (loop variables) and parameters (symbolic sizes): sums, products by constants,
``floordiv``/``floormod``/truncating ``/`` and ``%`` by constants, ``min``/``max`` and
``select``/``if_then_else`` on affine conditions. Anything else raises :class:`NotAffine`
carrying the sub-expression and why, which callers report ("approximate: A[i*j] is not
quasi-affine: product of i and j").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import islpy as isl

from ..ir import expr as E
from ..ir.names import identifier, shown

CTX = isl.DEFAULT_CONTEXT
DIM = isl.dim_type
T = TypeVar("T")
# isl counts operations per context, and tessel has one: a budgeted question holds this lock,
# so that two threads' budgets never reset each other's count
_BUDGET = threading.RLock()
_depth = threading.local()


def bounded(operations: int, question: Callable[[], T]) -> tuple[bool, T | None]:
    """``(True, question())`` when isl answers within ``operations`` of its operations, else
    ``(False, None)``. Nested, the outer budget counts (the inner one is not reset)."""
    with _BUDGET:
        depth = getattr(_depth, "n", 0)
        if depth:
            return True, question()
        _depth.n = 1
        CTX.set_max_operations(operations)
        CTX.reset_operations()
        try:
            return True, question()
        except isl.Error as e:
            if "maximal number of operations" not in str(e):
                raise
            return False, None
        finally:
            CTX.set_max_operations(0)
            CTX.reset_operations()
            _depth.n = 0


class NotAffine(Exception):
    """An expression isl cannot represent exactly; ``reason`` says which part and why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Namer:
    """One safe, unique isl name per object (by identity), and the reverse lookup."""

    def __init__(self) -> None:
        self._by_id: dict[int, str] = {}
        self._objects: dict[str, Any] = {}
        self._taken: set[str] = set()
        self._next: dict[str, int] = {}

    def name(self, obj: Any, hint: object, prefix: str = "") -> str:
        """The isl name of ``obj`` (made from ``hint``, the user's name, on first use)."""
        got = self._by_id.get(id(obj))
        if got is not None:
            return got
        base = prefix + identifier(hint, "c")
        cand, k = base, self._next.get(base, 1)  # where the search stopped last time: linear in the names
        while cand in self._taken:
            cand, k = f"{base}_{k}", k + 1
        self._next[base] = k
        self._taken.add(cand)
        self._by_id[id(obj)] = cand
        self._objects[cand] = obj
        return cand

    def known(self, obj: Any) -> str | None:
        """The isl name ``obj`` was given, if it was given one (never makes one)."""
        return self._by_id.get(id(obj))

    def fresh(self, hint: str) -> str:
        """A name no object owns (for time-space dimensions and scratch spaces)."""
        return self.name(object(), hint)

    def owner(self, isl_name: str) -> Any:
        return self._objects.get(isl_name)


def set_space(dims: Sequence[str], params: Sequence[str], tuple_name: str | None = None) -> isl.Space:
    sp = isl.Space.create_from_names(CTX, set=list(dims), params=list(params))
    return sp.set_tuple_name(DIM.set, tuple_name) if tuple_name else sp


def universe(space: isl.Space) -> isl.Set:
    return isl.Set.universe(space)


class Converter:
    """Expressions over ``dims`` (Var -> position) and ``params`` (Var -> position) of ``space``.

    ``env`` may bind further variables to already converted values (a ``Let``, or a loop
    variable that stands for an expression of the dimensions); ``values`` binds variables to
    expressions converted when first used (a loop that runs once stands for its one value: a
    statement deep in a nest uses few of the many around it).
    """

    def __init__(self, space: isl.Space, dims: Mapping[E.Var, int], params: Mapping[E.Var, int],
                 env: Mapping[E.Var, isl.PwAff] | None = None, domain: isl.Set | None = None,
                 values: Mapping[E.Var, E.PrimExpr] | None = None):
        self.space = space
        self.values = values or {}
        #: where the converted expressions are evaluated: lets a product with a piecewise factor
        #: be affine on each piece (see _mul_on_pieces)
        self.domain = domain
        self.ls = isl.LocalSpace.from_space(space)
        self.dims = dims
        self.params = params
        self.env = dict(env or {})

    # ---- values --------------------------------------------------------------------------
    def const(self, v: int) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.zero_on_domain(self.ls).set_constant_val(isl.Val.int_from_si(CTX, int(v))))

    def var(self, pos: int, kind=DIM.set) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.var_on_domain(self.ls, kind, pos))

    def aff(self, e: E.PrimExpr) -> isl.PwAff:
        """``e`` as a piecewise quasi-affine function; raises NotAffine."""
        if isinstance(e, E.IterVar):
            e = e.var
        if isinstance(e, int):
            return self.const(e)
        method = getattr(self, "_aff_" + type(e).__name__, None)
        if method is None:
            raise NotAffine(f"`{shown(e)}` ({type(e).__name__}) is not an integer affine expression")
        return method(e)

    def _aff_IntImm(self, e: E.IntImm) -> isl.PwAff:
        return self.const(e.value)

    def _aff_Var(self, e: E.Var) -> isl.PwAff:
        if e in self.env:
            return self.env[e]
        if e in self.values:
            got = self.env[e] = self.aff(self.values[e])
            return got
        if e in self.dims:
            return self.var(self.dims[e])
        if e in self.params:
            return self.var(self.params[e], DIM.param)
        raise NotAffine(f"`{shown(e.name)}` is neither a loop of this space nor a symbolic size")

    def _aff_Add(self, e) -> isl.PwAff:
        return self.aff(e.a).add(self.aff(e.b))

    def _aff_Sub(self, e) -> isl.PwAff:
        return self.aff(e.a).sub(self.aff(e.b))

    def _aff_Mul(self, e) -> isl.PwAff:
        a, b = self.aff(e.a), self.aff(e.b)
        if a.is_cst() or b.is_cst():
            return a.mul(b)
        got = self._mul_on_pieces(a, b) if self.domain is not None else None
        if got is None:
            raise NotAffine(f"`{shown(e)}` multiplies two non-constants")
        return got

    def _mul_on_pieces(self, a: isl.PwAff, b: isl.PwAff) -> isl.PwAff | None:
        """``a * b`` where, on each piece of ``b``, one factor is constant over the known
        domain: ``i.outer * min(n, 4)`` is ``4*i.outer`` for ``n >= 4`` and ``0`` otherwise,
        because ``i.outer`` is 0 when ``n < 4`` (a split cut down to its parent)."""
        out = None
        for piece, aff in b.get_pieces():
            where = piece.intersect(self.domain)
            pa = isl.PwAff.from_aff(aff).intersect_domain(piece)
            lhs = a.intersect_domain(piece)
            if not pa.is_cst():
                lhs = lhs.gist(where)
                if not lhs.is_cst():
                    return None
            prod = lhs.mul(pa) if lhs.is_cst() or pa.is_cst() else None
            if prod is None:
                return None
            out = prod if out is None else out.union_add(prod)
        return out

    def _divisor(self, e, what: str) -> isl.PwAff:
        b = self.aff(e.b)
        if not b.is_cst():
            raise NotAffine(f"`{shown(e)}` {what} by a non-constant")
        if not b.non_zero_set().is_equal(b.domain()):
            raise NotAffine(f"`{shown(e)}` {what} by zero")
        return b

    def _aff_FloorDiv(self, e) -> isl.PwAff:
        return self.aff(e.a).div(self._divisor(e, "divides")).floor()

    def _aff_FloorMod(self, e) -> isl.PwAff:
        a, b = self.aff(e.a), self._divisor(e, "takes a remainder")
        return a.sub(b.mul(a.div(b).floor()))

    def _aff_Div(self, e) -> isl.PwAff:
        if not e.dtype.is_integer:
            raise NotAffine(f"`{shown(e)}` is a floating-point division")
        return self.aff(e.a).tdiv_q(self._divisor(e, "divides"))

    def _aff_Mod(self, e) -> isl.PwAff:
        if not e.dtype.is_integer:
            raise NotAffine(f"`{shown(e)}` is a floating-point remainder")
        return self.aff(e.a).tdiv_r(self._divisor(e, "takes a remainder"))

    def _aff_Min(self, e) -> isl.PwAff:
        return self.aff(e.a).min(self.aff(e.b))

    def _aff_Max(self, e) -> isl.PwAff:
        return self.aff(e.a).max(self.aff(e.b))

    def _aff_Cast(self, e: E.Cast) -> isl.PwAff:
        src = e.value.dtype
        if e.dtype.is_integer and src.is_integer and e.dtype.bits >= min(src.bits, 32):
            return self.aff(e.value)  # an index widened (or kept at 32 bits): the same integer
        raise NotAffine(f"`{shown(e)}` converts {src} to {e.dtype}")

    def _aff_Select(self, e: E.Select) -> isl.PwAff:
        return self._choose(e.condition, e.true_value, e.false_value)

    def _aff_Call(self, e: E.Call) -> isl.PwAff:
        if e.op == "if_then_else" and len(e.args) == 3:
            return self._choose(*e.args)
        raise NotAffine(f"`{shown(e)}` calls {shown(e.op)}")

    def _aff_Let(self, e: E.Let) -> isl.PwAff:
        inner = Converter(self.space, self.dims, self.params, {**self.env, e.var: self.aff(e.value)}, self.domain,
                          self.values)
        return inner.aff(e.body)

    def _choose(self, cond, a, b) -> isl.PwAff:
        c = self.set(cond)
        return self.aff(a).intersect_domain(c).union_add(self.aff(b).intersect_domain(c.complement()))

    # ---- conditions ------------------------------------------------------------------------
    def set(self, c: E.PrimExpr) -> isl.Set:
        """The points where condition ``c`` holds; raises NotAffine."""
        if isinstance(c, E.IntImm):
            u = isl.Set.universe(self.space)
            return u if c.value else isl.Set.empty(self.space)
        cmp = {E.LT: "lt_set", E.LE: "le_set", E.GT: "gt_set", E.GE: "ge_set", E.EQ: "eq_set", E.NE: "ne_set"}
        for cls, meth in cmp.items():
            if type(c) is cls:
                return getattr(self.aff(c.a), meth)(self.aff(c.b))
        if isinstance(c, E.And):
            return self.set(c.a).intersect(self.set(c.b))
        if isinstance(c, E.Or):
            return self.set(c.a).union(self.set(c.b))
        if isinstance(c, E.Not):
            return self.set(c.a).complement()
        if isinstance(c, E.Let):
            inner = Converter(self.space, self.dims, self.params, {**self.env, c.var: self.aff(c.value)}, self.domain,
                              self.values)
            return inner.set(c.body)
        raise NotAffine(f"the condition `{shown(c)}` is not an affine comparison")


def pw_to_map(values: Sequence[isl.PwAff], domain: isl.Set, out_name: str | None, out_dims: Sequence[str] | None = None
              ) -> isl.Map:
    """The map ``domain -> [values...]`` (an access relation or a schedule), range named ``out_name``.
    The range's names go on the space before the map is made: naming the dimensions of a made
    map copies all of it once per dimension (cubic in a deep nest's time vector)."""
    sp = domain.get_space().from_domain().add_dims(DIM.out, len(values))
    for k, nm in enumerate(out_dims or ()):
        sp = sp.set_dim_name(DIM.out, k, nm)
    if out_name:
        sp = sp.set_tuple_name(DIM.out, out_name)
    if not values:
        m = isl.Map.from_domain(domain)
        return m.set_tuple_name(DIM.out, out_name) if out_name else m
    affs = _plain_affs(values)
    if affs is not None:
        graph = _graph(sp, affs, 0)
        if out_name:
            graph = graph.set_tuple_name(DIM.out, out_name)  # a product's range has no name
        return isl.Map.from_basic_map(graph).intersect_domain(domain)
    lst = isl.PwAffList.alloc(CTX, len(values))
    for v in values:
        lst = lst.add(v)
    return isl.Map.from_multi_pw_aff(isl.MultiPwAff.from_pw_aff_list(sp, lst)).intersect_domain(domain)


def _plain_affs(values: Sequence[isl.PwAff]) -> list[isl.Aff] | None:
    """The values as affine functions when each is one piece over the whole space (a loop
    variable, a constant, a sum of them): the common case, which ``_graph`` builds fast."""
    out = []
    for v in values:
        if v.n_piece() != 1:
            return None
        ((where, aff),) = v.get_pieces()
        if not where.plain_is_universe():
            return None
        out.append(aff)
    return out


def _graph(sp: isl.Space, affs: list[isl.Aff], first: int) -> isl.BasicMap:
    """The graph of ``affs`` (the range dimensions ``first..`` of ``sp``), made by halves: isl's
    ``from_multi_aff`` adds one dimension at a time, copying the growing map each time (cubic
    in the number of dimensions; a 100-stage compute_at chain has 401), halves make it quadratic."""
    n = len(affs)
    if n > 8:
        half = n // 2
        return _graph(sp, affs[:half], first).flat_range_product(_graph(sp, affs[half:], first + half))
    part = sp.drop_dims(DIM.out, first + n, sp.dim(DIM.out) - first - n).drop_dims(DIM.out, 0, first)
    lst = isl.AffList.alloc(CTX, n)
    for a in affs:
        lst = lst.add(a)
    return isl.BasicMap.from_multi_aff(isl.MultiAff.from_aff_list(part, lst))


def point_values(p: isl.Point, kind, n: int) -> list[int]:
    return [p.get_coordinate_val(kind, k).to_python() for k in range(n)]


__all__ = ["CTX", "DIM", "Converter", "Namer", "NotAffine", "point_values", "pw_to_map", "set_space", "universe"]
