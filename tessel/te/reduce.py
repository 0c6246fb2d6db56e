"""Reduction axes and commutative reducers (sum, min, max and user-defined ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.dtype import DType


def reduce_axis(dom, name: str = "rv", thread_tag: str = "") -> E.IterVar:
    """A reduction axis over ``dom``: a ``(begin, end)`` pair (end exclusive) or a Range."""
    if isinstance(dom, E.Range):
        rng = dom
    else:
        try:
            begin, end = dom
        except (TypeError, ValueError):
            raise DefinitionError(f"reduce_axis {name}: dom must be (begin, end) or a Range, got {dom!r}") from None
        rng = E.Range.from_begin_end(begin, end)
    if not rng.extent.dtype.is_integer:
        raise DefinitionError(f"reduce_axis {name}: bounds must be integers")
    return E.IterVar(rng, E.Var(name, rng.extent.dtype), E.IterVar.REDUCE, thread_tag)


def thread_axis(dom=None, tag: str = "", name: str = "") -> E.IterVar:
    """An IterVar standing for a hardware thread index (``threadIdx.x``, ``blockIdx.x`` ...)."""
    if isinstance(dom, str):
        tag, dom = dom, None
    if dom is not None and not isinstance(dom, E.Range):
        dom = E.Range.from_begin_end(*dom)
    return E.IterVar(dom, E.Var(name or tag or "thread", "int32"), E.IterVar.THREAD, tag)


@dataclass(frozen=True)
class ReducerProperties:
    """What a reducer declares about its combine function. rfactor relies on these: combining
    partial results in another order is only right for a function that is commutative and
    associative with a neutral identity.

    ``trusted``: the declaration is the user's (``te.comm_reducer``), and rfactor takes their
    word for it, as TVM does (TVM's own tests rfactor an arg-max whose ties make it commute
    only in the value). A reducer tessel builds itself is not trusted: rfactor tries values
    on it and refuses it on a counterexample.
    """

    commutative: bool = True
    associative: bool = True
    trusted: bool = False

    @property
    def reorderable(self) -> bool:
        return self.commutative and self.associative


# declarations by the reducer's definition (name, dtypes, combine and identity as text), so that
# a copy of the computation (a snapshot, a replay onto fresh tensors) keeps them
_DECLARED: dict[tuple, ReducerProperties] = {}


def _definition(comb: E.CommReducer) -> tuple:
    return (comb.name, tuple(str(v.dtype) for v in comb.lhs), tuple(str(r) for r in comb.result),
            tuple(str(i) for i in comb.identity))


def declared_properties(comb: E.CommReducer) -> ReducerProperties | None:
    """What the reducer that made ``comb`` declared; None for a combiner made some other way."""
    return _DECLARED.get(_definition(comb))


def _declare(comb: E.CommReducer, props: ReducerProperties) -> None:
    key = _definition(comb)
    old = _DECLARED.get(key)
    if old is not None and old != props:  # two reducers defined alike, declared differently: the weaker
        props = ReducerProperties(old.commutative and props.commutative, old.associative and props.associative,
                                  old.trusted and props.trusted)
    _DECLARED[key] = props


class Reducer:
    """A user-visible reducer: call it as ``r(expr, axis=k, where=cond)``.

    Called with two plain expressions and no axis it combines them directly, so
    ``te.max(a, b)`` is the elementwise maximum, as in TVM.
    """

    def __init__(self, fcombine: Callable, fidentity: Callable, name: str,
                 properties: ReducerProperties = ReducerProperties()):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name
        self.properties = properties
        self._cache: dict[tuple[DType, ...], E.CommReducer] = {}

    def combiner(self, dtypes: tuple[DType, ...]) -> E.CommReducer:
        if dtypes not in self._cache:
            lhs = [E.Var("x" if len(dtypes) == 1 else f"x{k}", t) for k, t in enumerate(dtypes)]
            rhs = [E.Var("y" if len(dtypes) == 1 else f"y{k}", t) for k, t in enumerate(dtypes)]
            res = self.fcombine(*lhs, *rhs) if len(dtypes) == 1 else self.fcombine(tuple(lhs), tuple(rhs))
            res = res if isinstance(res, tuple | list) else (res,)
            ident = self.fidentity(*dtypes)
            ident = ident if isinstance(ident, tuple | list) else (ident,)
            if len(res) != len(dtypes) or len(ident) != len(dtypes):
                raise DefinitionError(
                    f"reducer {self.name}: combine and identity must give {len(dtypes)} value(s), one per input"
                )
            res = tuple(E.cast(r, t) for r, t in zip(res, dtypes))
            ident = tuple(E.cast(v, t) for v, t in zip(ident, dtypes))
            self._cache[dtypes] = E.CommReducer(lhs, rhs, res, ident, self.name)
            _declare(self._cache[dtypes], self.properties)
        return self._cache[dtypes]

    def __call__(self, expr, axis=None, where=None, init=None):
        if axis is not None and not isinstance(axis, E.IterVar | list | tuple):
            if where is None and init is None:
                return self.fcombine(E.convert(expr), E.convert(axis))
        if axis is None:
            raise DefinitionError(f"te.{self.name} needs axis=: the reduce_axis (or list of them) to reduce over")
        axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
        for a in axes:
            if not isinstance(a, E.IterVar) or not a.is_reduce:
                raise DefinitionError(f"te.{self.name}: axis {a} is not a reduce_axis; create it with te.reduce_axis")
        sources = tuple(E.convert(e) for e in expr) if isinstance(expr, tuple | list) else (E.convert(expr),)
        cond = E.const(True) if where is None else E.convert(where)
        comb = self.combiner(tuple(s.dtype for s in sources))
        inits = ()
        if init is not None:
            inits = tuple(E.cast(v, s.dtype) for v, s in zip(init if isinstance(init, tuple | list) else (init,), sources))
        outs = tuple(E.Reduce(comb, sources, axes, cond, k, inits) for k in range(len(sources)))
        return outs if len(outs) > 1 else outs[0]


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce", *,
                 commutative: bool = True, associative: bool = True) -> Reducer:
    """A reducer from a combine function and an identity per dtype.

    As its name says (TVM's ``comm_reducer``), it declares the combine function commutative and
    associative with ``fidentity`` neutral, and ``rfactor`` trusts that declaration, as TVM
    does: it combines partial results in another order than the serial loop would. tessel
    still tries sample values and *warns* when they contradict the declaration (an arg-max that
    breaks ties by position picks another index of a tied maximum after rfactor). Say
    ``commutative=False`` or ``associative=False`` for a function that is not, and tessel keeps
    its reductions serial (rfactor refuses them).
    """
    return Reducer(fcombine, fidentity, name, ReducerProperties(commutative, associative, trusted=True))


def _builtin(fcombine: Callable, fidentity: Callable, name: str) -> Reducer:
    """A reducer tessel defines itself: its declaration is checked on sample values by rfactor."""
    return Reducer(fcombine, fidentity, name, ReducerProperties())


def _min_value(t: DType):
    return E.const(t.min_value() if not t.is_float else -float("inf"), t)


def _max_value(t: DType):
    return E.const(t.max_value() if not t.is_float else float("inf"), t)


sum = _builtin(lambda x, y: x + y, lambda t: E.const(0, t), name="sum")
min = _builtin(lambda x, y: E.min_(x, y), _max_value, name="min")
max = _builtin(lambda x, y: E.max_(x, y), _min_value, name="max")
min.__doc__ = """``te.min(expr, axis=k)`` reduces, ``te.min(a, b)`` is elementwise. As NumPy's ``min`` and
``minimum``: a NaN operand makes the result NaN, whatever the order a schedule visits the
axis in (split, reorder, rfactor, vectorize, parallel); integers as usual."""
max.__doc__ = """``te.max(expr, axis=k)`` reduces, ``te.max(a, b)`` is elementwise. As NumPy's ``max`` and
``maximum``: a NaN operand makes the result NaN, whatever the order a schedule visits the
axis in (split, reorder, rfactor, vectorize, parallel); integers as usual."""


def _arg_reducer(better: Callable, best: Callable, far: Callable, name: str) -> Reducer:
    """An index-and-value reducer that answers as NumPy's ``argmax``/``argmin`` do: the first
    index of the best value, a NaN counted best (the first NaN's index), whatever the order a
    schedule combines in. Ties go to the smaller index, so the combine commutes and associates
    and rfactor, vector partials and threads give the index the serial loop gives (the naive
    ``select(x >= y, ...)`` of TVM's tutorial does not: another index of a tied value once
    reordered). The identity's index is the largest, so a real element always wins a tie."""

    def combine(x, y):
        (xi, xv), (yi, yv) = x, y
        first = E.lt(xi, yi)
        nan_x = E.ne(xv, xv)
        pick_x = E.logical_or(E.logical_or(better(xv, yv), E.logical_and(E.eq(xv, yv), first)),
                              E.logical_and(nan_x, E.logical_or(E.eq(yv, yv), first)))
        return E.select(pick_x, xi, yi), best(xv, yv)

    return _builtin(combine, lambda ti, tv: (E.const(ti.max_value(), ti), far(tv)), name)


argmax = _arg_reducer(E.gt, E.max_, _min_value, "argmax")
argmin = _arg_reducer(E.lt, E.min_, _max_value, "argmin")
argmax.__doc__ = """``I, V = te.compute(shape, lambda i: te.argmax((k, A[i, k]), axis=k))``: the index (the first
where the maximum is, as NumPy's ``argmax``; a NaN is the maximum) and the maximum itself, the
same under any schedule."""
argmin.__doc__ = """``te.argmin((k, A[i, k]), axis=k)``: the first index of the minimum (NumPy's ``argmin``) and
the minimum, the same under any schedule."""


def min_value(dtype) -> E.PrimExpr:
    from ..ir.dtype import dtype as to_dtype

    return _min_value(to_dtype(dtype))


def max_value(dtype) -> E.PrimExpr:
    from ..ir.dtype import dtype as to_dtype

    return _max_value(to_dtype(dtype))


