"""Message passing over a stage's IterVar relations (seed 000, "IterVar hyper-graph").

``pass_down_domain`` gives derived loops their ranges from their parents'; ``pass_up_domain``
turns index sets of leaf loops into index sets of root axes; ``pass_up_index`` turns leaf loop
variables into root index expressions (what lowering substitutes into a stage's body).
"""

from __future__ import annotations

from ..arith import Analyzer, IntSet, eval_set
from ..errors import BoundError
from ..ir import expr as E
from ..ir import op as O
from ..schedule.relations import Fuse, Rebase, Singleton, Split
from ..schedule.stage import Stage


def ceildiv(a, b) -> E.PrimExpr:
    return O.floordiv(O.sub(O.add(a, b), 1), b)


def pass_down_domain(st: Stage, rmap: dict[E.IterVar, E.Range], ana: Analyzer) -> None:
    def put(iv: E.IterVar, r: E.Range) -> None:
        r = E.Range(ana.simplify(r.min), ana.simplify(r.extent))
        rmap[iv] = r
        ana.bind(iv.var, r)

    for rel in st.relations:
        if isinstance(rel, Split):
            if rel.parent not in rmap:
                raise BoundError(f"stage {st.name}: no range known for {rel.parent.name}")
            ext = rmap[rel.parent].extent
            bound = st.iter_var_attrs.get(rel.inner if rel.factor is not None else rel.outer)
            tighten = not (bound and bound.bind_thread is not None) and not E.is_const_int(ext, 0)
            if rel.factor is not None:
                f = O.min_(ext, rel.factor) if tighten else rel.factor
                put(rel.inner, E.Range(0, f))
                put(rel.outer, E.Range(0, ceildiv(ext, rel.factor)))
            else:
                n = O.min_(ext, rel.nparts) if tighten else rel.nparts
                put(rel.outer, E.Range(0, n))
                put(rel.inner, E.Range(0, ceildiv(ext, rel.nparts)))
        elif isinstance(rel, Fuse):
            # exact: a fused extent beyond the loop's dtype is widened later (index_dtype), not wrapped
            put(rel.fused, E.Range(0, O.binary_exact(E.Mul, rmap[rel.outer].extent, rmap[rel.inner].extent)))
        elif isinstance(rel, Rebase):
            put(rel.rebased, E.Range(0, rmap[rel.parent].extent))
        elif isinstance(rel, Singleton):
            put(rel.iter_var, E.Range(0, 1))


def _matches(s: IntSet, r: E.Range, ana: Analyzer) -> bool:
    if s.is_everything():
        return False
    if s.min_value is None or s.max_value is None:
        return False
    return ana.can_prove_equal(s.min_value, r.min) and ana.can_prove_equal(
        s.max_value, O.sub(O.add(r.min, r.extent), 1)
    )


def pass_up_domain(st: Stage, rmap: dict[E.IterVar, E.Range], up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            so, si = up[rel.outer], up[rel.inner]
            pr = rmap[rel.parent]
            if _matches(so, rmap[rel.outer], ana) and _matches(si, rmap[rel.inner], ana):
                up[rel.parent] = IntSet.from_range(pr)
            else:
                f = rmap[rel.inner].extent
                e = O.add(O.add(O.mul(rel.outer.var, f), rel.inner.var), pr.min)
                up[rel.parent] = eval_set(e, {rel.outer.var: so, rel.inner.var: si})
        elif isinstance(rel, Fuse):
            sf = up[rel.fused]
            ro, ri = rmap[rel.outer], rmap[rel.inner]
            if _matches(sf, rmap[rel.fused], ana):
                up[rel.outer], up[rel.inner] = IntSet.from_range(ro), IntSet.from_range(ri)
            elif sf.is_single_point():
                v = sf.point_value()
                up[rel.outer] = IntSet.single_point(O.add(O.floordiv(v, ri.extent), ro.min))
                up[rel.inner] = IntSet.single_point(O.add(O.floormod(v, ri.extent), ri.min))
            else:
                fv = E.Var("fused", rel.fused.dtype)
                up[rel.outer] = eval_set(O.add(O.floordiv(fv, ri.extent), ro.min), {fv: sf})
                up[rel.inner] = IntSet.from_range(ri)
        elif isinstance(rel, Rebase):
            sr = up[rel.rebased]
            pr = rmap[rel.parent]
            if _matches(sr, rmap[rel.rebased], ana):
                up[rel.parent] = IntSet.from_range(pr)
            else:
                up[rel.parent] = eval_set(O.add(rel.rebased.var, pr.min), {rel.rebased.var: sr})


def pass_up_index(st: Stage, rmap: dict[E.IterVar, E.Range], value: dict[E.IterVar, E.PrimExpr]) -> None:
    """Extend ``value`` (leaf IterVar -> expression) to every IterVar of the stage."""
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            f = rmap[rel.inner].extent
            e = O.add(O.mul(value[rel.outer], f), value[rel.inner])
            pmin = rmap[rel.parent].min
            value[rel.parent] = e if E.is_const_int(pmin, 0) else O.add(e, pmin)
        elif isinstance(rel, Fuse):
            v = value[rel.fused]
            ro, ri = rmap[rel.outer], rmap[rel.inner]
            value[rel.outer] = O.add(O.floordiv(v, ri.extent), ro.min)
            value[rel.inner] = O.add(O.floormod(v, ri.extent), ri.min)
        elif isinstance(rel, Rebase):
            value[rel.parent] = O.add(value[rel.rebased], rmap[rel.parent].min)
