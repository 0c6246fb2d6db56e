"""Reducers whose result depends on the order of combination: rfactor and parallel partial
sums combine in another order than the serial loop, so a reducer is factored only when what it
declares (``te.comm_reducer``) and sample values allow it. A legality rule of its own
(``ViolationKind.RFACTOR_ORDER_DEPENDENT_REDUCER``), kept apart from the tree rules."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from ..errors import TesselError
from ..ir import expr as E
from .violation import Violation, ViolationKind

if TYPE_CHECKING:
    from .stage import Stage


def _samples(dt) -> list:
    if dt.is_bool:
        return [False, True]
    if dt.is_float:
        return [-2.5, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0]
    if dt.is_uint:
        return [0, 1, 2, 3, 5, 7]
    return [-7, -2, -1, 0, 1, 2, 3, 5]


def _same(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b):
        if isinstance(x, float) or isinstance(y, float):
            fx, fy = float(x), float(y)
            if math.isnan(fx) and math.isnan(fy):
                continue
            if not math.isclose(fx, fy, rel_tol=1e-6, abs_tol=1e-9):
                return False
        elif x != y:
            return False
    return True


def _fmt(t: tuple) -> str:
    return t[0].__repr__() if len(t) == 1 else "(" + ", ".join(repr(x) for x in t) + ")"


def _sample_points(pools: list[list]) -> list[tuple]:
    """Every combination of the sample values, thinned evenly to at most 64 (deterministic)."""
    values = [tuple(x) for x in itertools.product(*pools)]
    step = max(1, math.ceil(len(values) / 64))
    return values[::step]


# reorder_counterexample's answers, by reducer object (kept alive with its answer, so an id is
# never reused while its entry stands): the search evaluates the combine some 2300 times (about
# 30 ms for an argmax's), and a row reduction factored in two levels (autosched.partials) asks
# again about the same reducer
_ANSWERS: dict[int, tuple[E.CommReducer, str | None]] = {}
_ANSWERS_KEEP = 256


def reorder_counterexample(comb: E.CommReducer) -> str | None:
    """``_counterexample``, remembered per reducer object (a reducer is immutable)."""
    hit = _ANSWERS.get(id(comb))
    if hit is not None and hit[0] is comb:
        return hit[1]
    found = _counterexample(comb)
    if len(_ANSWERS) >= _ANSWERS_KEEP:
        _ANSWERS.pop(next(iter(_ANSWERS)))
    _ANSWERS[id(comb)] = (comb, found)
    return found


def _counterexample(comb: E.CommReducer) -> str | None:
    """Values showing that ``comb`` may not be combined in another order, or None.

    The combine function is evaluated on fixed sample values that include ties and zeros:
    commutativity, associativity, and that the identity is neutral (every partial result of an
    rfactor starts from it). Evaluation is exact for these small values, so a difference is a
    real one. This can only refute a reducer's declaration (see ``check_reducer_reorderable``):
    finding nothing proves nothing, and a combine function that cannot be evaluated is not
    refuted."""
    pools = [_samples(v.dtype) for v in comb.lhs]
    values = _sample_points(pools)
    f = _combine_function(comb)
    return (_not_commutative(f, values, pools) or _not_associative(f, values)
            or _identity_not_neutral(comb, f, values))


def _combine_function(comb: E.CommReducer):
    """``comb``'s combine on concrete tuples; None where it has no value here."""
    from ..ir.evaluate import evaluate

    def f(a: tuple, b: tuple) -> tuple | None:
        env = {**dict(zip(comb.lhs, a)), **dict(zip(comb.rhs, b))}
        try:
            return tuple(evaluate(r, env) for r in comb.result)
        except (TesselError, ArithmeticError):  # no value here (an intrinsic, a division by 0): nothing refuted
            return None

    return f


def _not_commutative(f, values: list[tuple], pools: list[list]) -> str | None:
    n = len(values)
    pairs = [(a, b) for a in values for b in values] if n * n <= 400 else \
        [(values[i % n], values[(i * 7 + 3) % n]) for i in range(400)]
    # near-ties: equal in all but one component (where tie-breaking rules hide)
    for a in values[:24]:
        for k in range(len(a)):
            for x in pools[k][:3]:
                pairs.append((a, (*a[:k], x, *a[k + 1:])))
    for a, b in pairs:
        ab, ba = f(a, b), f(b, a)
        if ab is not None and ba is not None and not _same(ab, ba):
            return (f"it is not commutative: combine(x, y) = {_fmt(ab)} but combine(y, x) = {_fmt(ba)} "
                    f"for x = {_fmt(a)}, y = {_fmt(b)}")
    return None


def _not_associative(f, values: list[tuple]) -> str | None:
    n = len(values)
    for i in range(300):
        a, b, c = values[i % n], values[(i * 5 + 1) % n], values[(i * 11 + 2) % n]
        ab, bc = f(a, b), f(b, c)
        left = f(ab, c) if ab is not None else None
        right = f(a, bc) if bc is not None else None
        if left is not None and right is not None and not _same(left, right):
            return (f"it is not associative: combine(combine(x, y), z) = {_fmt(left)} but combine(x, combine(y, z)) "
                    f"= {_fmt(right)} for x = {_fmt(a)}, y = {_fmt(b)}, z = {_fmt(c)}")
    return None


def _identity_not_neutral(comb: E.CommReducer, f, values: list[tuple]) -> str | None:
    from ..ir.evaluate import evaluate

    try:
        ident = tuple(evaluate(i) for i in comb.identity)
    except (TesselError, ArithmeticError):  # same: an identity without a value here refutes nothing
        return None
    for a in values:
        got = f(ident, a)
        if got is not None and not _same(got, a):
            return f"its identity {_fmt(ident)} is not neutral: combine(identity, x) = {_fmt(got)} for x = {_fmt(a)}"
    return None


def _reorder_refusal(comb: E.CommReducer) -> tuple[str | None, str | None]:
    """Why rfactor may not reorder ``comb`` (what the reducer declares decides; a declaration of
    tessel's own that the sample values contradict is refused with them), and for a user's
    declaration, which rfactor trusts, what the sample values say against it (a warning)."""
    from ..te.reduce import declared_properties

    props = declared_properties(comb)
    if props is None:
        return ("it declares nothing about the order of combination (make it with te.comm_reducer, which "
                "declares it commutative and associative)"), None
    if not props.commutative:
        return "it is declared not commutative (commutative=False)", None
    if not props.associative:
        return "it is declared not associative (associative=False)", None
    found = reorder_counterexample(comb)
    return (None, found) if props.trusted else (found, None)


def reorderable(comb: E.CommReducer) -> bool:
    """Whether partial results of ``comb`` may be combined in another order with nothing to
    doubt: what tessel may do on its own (``auto_schedule``), where a user's rfactor is taken
    on their word. A naive argmax (``select(x >= y, ...)``, another index of a tied maximum
    once reordered) is not; one that breaks ties by the index is."""
    return _reorder_refusal(comb) == (None, None)


def check_reducer_reorderable(stage: Stage, comb: E.CommReducer, axis: E.IterVar) -> None:
    """rfactor combines partial results in another order: refuse reducers for which that matters.

    A ``te.comm_reducer`` is the user's statement that its combine commutes and associates;
    as TVM does, rfactor takes it, with a warning when sample values contradict it."""
    why, doubt = _reorder_refusal(comb)
    if doubt is not None:
        import warnings

        from ..errors import TesselWarning

        warnings.warn(f"rfactor of {stage.name} over {axis.name}: the reducer {comb.name} is declared commutative and "
                      f"associative (te.comm_reducer), and rfactor trusts that, as TVM does; but {doubt}. The "
                      f"factored reduction may then give other results than the serial loop for such values "
                      f"(e.g. another index of a tied maximum); declare it with commutative=False or "
                      f"associative=False to keep it serial", TesselWarning, stacklevel=5)
    if why is None:
        return
    text = (f"rfactor of {stage.name} over {axis.name}: the reducer {comb.name} cannot be factored, because {why}. "
            f"rfactor computes one partial result per value of {axis.name} and combines them afterwards, in a "
            f"different order than the original loop, so {stage.name} would silently get different values. "
            f"Make the combine function commutative and associative with a neutral identity (for an arg-max, "
            f"break ties by index), or keep the reduction serial (do not rfactor it)")
    raise Violation(ViolationKind.RFACTOR_ORDER_DEPENDENT_REDUCER, stage, text, (stage,), (axis,)).error()


__all__ = ["check_reducer_reorderable", "reorder_counterexample"]
