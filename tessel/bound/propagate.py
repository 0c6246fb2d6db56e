"""Message passing over a stage's IterVar relations (seed 000, "IterVar hyper-graph").

``pass_down_domain`` gives derived loops their ranges from their parents'; ``pass_up_domain``
turns index sets of leaf loops into index sets of root axes; ``pass_up_index`` turns leaf loop
variables into root index expressions (what lowering substitutes into a stage's body). The
arithmetic of each relation lives with the relation (``tessel.schedule.relations``); this module
binds it to a stage: its thread bindings, and InferBound's analyzer.
"""

from __future__ import annotations

from ..arith import Analyzer, IntSet
from ..errors import BoundError
from ..ir import expr as E
from ..schedule import relations as R
from ..schedule.stage import Stage

ceildiv = R.ceildiv


def pass_down_domain(st: Stage, rmap: dict[E.IterVar, E.Range], ana: Analyzer) -> None:
    def put(iv: E.IterVar, r: E.Range) -> None:
        r = E.Range(ana.simplify(r.min), ana.simplify(r.extent))
        rmap[iv] = r
        ana.bind(iv.var, r)

    def missing(rel: R.Relation, iv: E.IterVar) -> None:
        raise BoundError(f"stage {st.name}: no range known for {iv.name}")

    R.pass_down_domain(st.relations, rmap, put, R.Cut(R.bound_to_thread(st.iter_var_attrs, st.relations), ana), missing)


def pass_up_domain(st: Stage, rmap: dict[E.IterVar, E.Range], up: dict[E.IterVar, IntSet], ana: Analyzer) -> None:
    R.pass_up_domain(st.relations, rmap, up, ana)


def pass_up_index(st: Stage, rmap: dict[E.IterVar, E.Range], value: dict[E.IterVar, E.PrimExpr]) -> list[R.Guard]:
    """Extend ``value`` (leaf IterVar -> expression) to every IterVar of the stage; return the
    guards of the non-divisible splits on the way, in the order the splits were made."""
    return R.pass_up_index(st.relations, rmap, value)
