"""Repairs for schedules that break a dependence, computed from the dependences themselves.

Three questions, each answered on the exact (source time, sink time) pairs of the dependences
(``legality.py``), over isl maps of the time space only -- the commands that realise an answer
are written and replayed by ``tessel.check.proposals``:

* **Fusion by shifting** (Tiramisu's ``correcting_loop_fusion_with_shifting``): statements B
  fused after statements A at loop level L share the loops ``0..L``. A dependence from A to B
  whose distance on a shared loop is negative (B would read a row A has not written yet) is
  repaired by delaying B's iterations on that loop: the least non-negative constant that makes
  every A->B distance non-negative there, outer loops first, where only the pairs still tied on
  the outer loops count. A B->A dependence bounds the same shift from above. When no constant
  works (an unbounded distance, or bounds that cross), fusion at L is impossible; the deepest
  level where it is possible is found by trying the outer ones.
* **Wavefront skewing**: for two consecutive loops ``i, j`` of a statement, the least factors
  ``(a, b)`` (``a >= 0``, ``b != 0``, ``gcd = 1``) such that ``a*di + b*dj >= 1`` for every
  distance not already carried outside: the new outer loop ``a*i + b*j`` then carries every
  dependence, so the inner loop of the unimodular completion carries none and may run in
  parallel.
* The time maps these transformations are (``retime``, ``fuse_after``, ``shifted``,
  ``skewed``), so a proposal is checked on the schedules before it is offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd

import islpy as isl

from .deps import Dependence
from .legality import Schedules, align, conflicts, equal_prefix, pad, time_pairs, union
from .space import DIM


def retime(sched: isl.Map, exprs: Sequence[str]) -> isl.Map:
    """``sched`` followed by the time map ``T[t0, ...] -> T[exprs]`` (integers and ``tK`` only)."""
    n = sched.dim(DIM.out)
    ts = ", ".join(f"t{k}" for k in range(n))
    return sched.apply_range(isl.Map(f"{{ T[{ts}] -> T[{', '.join(exprs)}] }}")).set_tuple_name(DIM.out, "T")


def fixed_value(sched: isl.Map, k: int) -> int | None:
    """The constant time coordinate ``k`` of ``sched`` (a static position), or None."""
    rng = sched.range()
    if rng.is_empty():
        return 0
    val = rng.plain_get_val_if_fixed(DIM.set, k)
    if not val.is_nan():
        return val.to_python()
    try:
        lo, hi = rng.dim_min(k), rng.dim_max(k)
    except isl.Error:
        return None
    if lo.is_cst() and hi.is_cst() and lo.is_equal(hi):
        pieces = lo.get_pieces()
        return pieces[0][1].get_constant_val().to_python() if pieces else 0
    return None


def fuse_after(sa: isl.Map, sb: isl.Map, last: int) -> isl.Map | None:
    """``sb`` placed right after ``sa`` inside the loops whose time dimensions end before
    ``last`` (the static position after the deepest shared loop): every static position before
    ``last`` takes ``sa``'s value, position ``last`` takes ``sa``'s plus one. None when ``sa``'s
    position there is not a constant."""
    n = max(sa.dim(DIM.out), sb.dim(DIM.out))
    sa, sb = pad(sa, n), pad(sb, n)
    exprs = [f"t{k}" for k in range(n)]
    for k in range(0, last + 1, 2):
        v = fixed_value(sa, k)
        if v is None:
            return None
        exprs[k] = str(v + 1 if k == last else v)
    return retime(sb, exprs)


def shifted(sched: isl.Map, shifts: dict[int, int]) -> isl.Map:
    """``sched`` with time dimension ``k`` delayed by ``shifts[k]``."""
    exprs = [f"t{k} + {shifts[k]}" if shifts.get(k) else f"t{k}" for k in range(sched.dim(DIM.out))]
    return retime(sched, exprs)


def completion(a: int, b: int) -> tuple[int, int] | None:
    """``(g, s)`` with ``a*s - b*g == 1``: the second row of a unimodular matrix ``[[a, b], [g, s]]``
    (the smallest non-negative ``s``); None when ``gcd(a, b) != 1``."""
    if gcd(a, b) != 1:
        return None
    for s in range(0, abs(b) + 2):
        if b and (a * s - 1) % b == 0:
            return (a * s - 1) // b, s
        if not b and a * s == 1:
            return 0, s
    return None


def skewed(sched: isl.Map, p: int, q: int, a: int, b: int) -> isl.Map:
    """``sched`` with time dimensions ``p, q`` (consecutive loops) mapped to ``a*tp + b*tq`` and
    the completion ``g*tp + s*tq``."""
    gs = completion(a, b)
    assert gs is not None, (a, b)
    g, s = gs
    exprs = [f"t{k}" for k in range(sched.dim(DIM.out))]
    exprs[p] = f"{a}*t{p} + {b}*t{q}"
    exprs[q] = f"{g}*t{p} + {s}*t{q}"
    return retime(sched, exprs)


# ---- fusion ------------------------------------------------------------------------------
def _min_delta(pairs: isl.Map | None, k: int) -> int | bool | None:
    """The least ``sink - source`` on time dimension ``k`` over every size (None: no pairs;
    False: unbounded below, no constant bounds it)."""
    if pairs is None or pairs.is_empty():
        return None
    d = pairs.deltas()
    if d.dim(DIM.param):
        d = d.project_out(DIM.param, 0, d.dim(DIM.param))
    try:
        lo = d.dim_min(k)
    except isl.Error:
        return False
    if not lo.is_cst():
        return False
    pieces = lo.get_pieces()
    return min(aff.get_constant_val().to_python() for _, aff in pieces)


def _tie(pairs: isl.Map | None, k: int, delta: int) -> isl.Map | None:
    """The pairs whose time difference on dimension ``k`` is ``delta`` (still tied after a shift)."""
    if pairs is None:
        return None
    n = pairs.dim(DIM.in_)
    ts, us = [f"a{j}" for j in range(n)], [f"b{j}" for j in range(n)]
    cond = isl.Map(f"{{ T[{', '.join(ts)}] -> T[{', '.join(us)}] : b{k} - a{k} = {delta} }}")
    out = pairs.intersect(cond)
    return None if out.is_empty() else out


def fusion_shifts(deps: Sequence[Dependence], scheds: Schedules, a_names: set[str], b_names: set[str],
                  dims: Sequence[int]) -> list[int] | None:
    """The least non-negative delays of B's loops at time dimensions ``dims`` (outermost first)
    that keep every dependence between the A and B statements, under ``scheds`` (B already
    fused after A there); None when no constant delays do."""
    al = align(scheds)
    ab = union([time_pairs(d, al) for d in deps if d.source.name in a_names and d.sink.name in b_names])
    ba = union([time_pairs(d, al) for d in deps if d.source.name in b_names and d.sink.name in a_names])
    return _shifts_from(ab, ba, list(dims))


def _shifts_from(ab: isl.Map | None, ba: isl.Map | None, dims: list[int]) -> list[int] | None:
    """Outermost loop first: the least delay making every A->B distance there non-negative
    (and no B->A one negative); the pairs left tied go on to the inner loops. When the inner
    loops cannot be repaired, one more step of delay here unties every A->B pair instead."""
    if not dims:
        # tied on every shared loop: B runs after A in the same iteration, so a B->A pair goes back
        return None if ba is not None else []
    k = dims[0]
    lo, hi = _min_delta(ab, k), _min_delta(ba, k)
    if lo is False or hi is False:
        return None
    least = max(0, -lo) if lo is not None else 0
    for s in (least, least + 1):
        if hi is not None and s > hi:
            return None
        inner = _shifts_from(_tie(ab, k, -s), _tie(ba, k, s), dims[1:])
        if inner is not None:
            return [s, *inner]
    return None


def fused_schedules(scheds: Schedules, a_names: set[str], b_names: set[str], last: int,
                    dims: Sequence[int], shifts: Sequence[int] = ()) -> dict[str, isl.Map] | None:
    """``scheds`` with every B statement fused right after the A statements at the static
    position ``last`` and delayed by ``shifts`` on ``dims``; None when A's position is not fixed."""
    al = align(scheds)
    anchor = max((al[n] for n in a_names), key=lambda m: fixed_value(m, last) or 0)
    out = dict(al)
    for n in b_names:
        got = fuse_after(anchor, al[n], last)
        if got is None:
            return None
        out[n] = shifted(got, dict(zip(dims, shifts)))
    return out


def repair_fusion(deps: Sequence[Dependence], scheds: Schedules, a_names: set[str], b_names: set[str],
                  levels: Sequence[tuple[int, int]], context: isl.Set | None = None
                  ) -> tuple[int, list[int], dict[str, isl.Map]] | None:
    """The deepest fusion of B after A, from ``levels`` (each loop's first time dimension and
    width, outermost first, fusing at the last one first), with the shifts that make it keep
    every dependence: ``(level index, shifts per time dimension, schedules)``, checked; None
    when not even the outermost level works."""
    for depth in range(len(levels) - 1, -1, -1):
        dims = [p + w for p, width in levels[: depth + 1] for w in range(width)]
        last = dims[-1] + 1
        fused = fused_schedules(scheds, a_names, b_names, last, dims)
        if fused is None:
            continue
        shifts = fusion_shifts(deps, fused, a_names, b_names, dims)
        if shifts is None:
            continue
        result = fused_schedules(scheds, a_names, b_names, last, dims, shifts)
        if result is not None and not conflicts(deps, result, context):
            return depth, shifts, result
    return None


# ---- wavefronts --------------------------------------------------------------------------
def inner_distances(deps: Sequence[Dependence], scheds: Schedules, p: int, q: int) -> isl.Set | None:
    """The distances on time dimensions ``(p, q)`` of the dependences not carried before ``p``
    nor inside ``q``, over every size (None when there are none)."""
    al = align(scheds)
    maps = [equal_prefix(time_pairs(d, al), p) for d in deps if d.source.name in al and d.sink.name in al]
    pairs = union([m for m in maps if not m.is_empty()])
    if pairs is None or pairs.is_empty():
        return None
    d = pairs.deltas()
    if d.dim(DIM.param):
        d = d.project_out(DIM.param, 0, d.dim(DIM.param))
    n = d.dim(DIM.set)
    d = d.project_out(DIM.set, q + 1, n - q - 1).project_out(DIM.set, 0, p)
    d = d.project_out(DIM.set, 1, q - p - 1) if q - p > 1 else d
    # pairs equal on both loops are carried inside them: a skew of the two leaves them alone
    d = d.reset_tuple_id().subtract(isl.Set("{ [0, 0] }"))
    return None if d.is_empty() else d


def skew_factors(dist: isl.Set, limit: int = 4) -> tuple[int, int] | None:
    """The least ``(a, b)`` (by ``a + |b|``, then ``a``, then positive ``b`` first) with ``a >= 0``,
    ``b != 0``, ``gcd(a, b) = 1`` and ``a*di + b*dj >= 1`` on every distance ``(di, dj)``."""
    cands = [(a, b) for a in range(0, limit + 1) for b in range(-limit, limit + 1)
             if b != 0 and gcd(a, b) == 1]
    cands.sort(key=lambda ab: (ab[0] + abs(ab[1]), ab[0], -ab[1]))
    for a, b in cands:
        bad = isl.Set(f"{{ [x, y] : {a}*x + {b}*y <= 0 }}")
        if dist.intersect(bad).is_empty():
            return a, b
    return None


__all__ = ["completion", "fixed_value", "fuse_after", "fused_schedules", "fusion_shifts", "inner_distances",
           "repair_fusion", "retime", "shifted", "skew_factors", "skewed"]
