"""The polyhedral analysis of a schedule, computed once per schedule state.

Building twice the same schedule (the second build finds its code in the cache) must not pay
for the analysis again, and a legality check right after a build asks the same questions, so
the model and its dependences are kept beside the schedule, keyed by everything lowering reads
from it: each stage's operation, attachment, relations, loop order, annotations, and the
user's assumptions. Any primitive changes one of those and so the key.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from ..errors import TesselError
from ..ir import expr as E
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .bounds import check_accesses
from .deps import Dependence, carried, dependences
from .model import Model, build

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: how many analyses were computed (not found in the cache), for tests and benchmarks
RUNS = {"model": 0, "dependences": 0, "bounds": 0}


def state_key(sch: Schedule) -> tuple[tuple, list]:
    """The key (object ids and kinds) and the objects whose ids it holds: the cache keeps them
    alive, so an id in a stored key can never come to mean another object."""
    parts: list = []
    refs: list = []
    for st in sch.stages:
        attrs = tuple((id(iv), a.kind, id(a.bind_thread)) for iv, a in st.iter_var_attrs.items())
        parts.append((id(st.op), st.attach_type, id(st.attach_stage), id(st.attach_ivar),
                      tuple(map(id, st.leaf_iter_vars)), tuple(map(id, st.relations)), attrs, st.scope))
        refs += [st.op, st.attach_stage, st.attach_ivar, *st.leaf_iter_vars, *st.relations, *st.iter_var_attrs]
        refs += [a.bind_thread for a in st.iter_var_attrs.values()]
    parts.append(tuple(str(a) for a in getattr(sch, "assumptions", ())))
    return tuple(parts), refs


@dataclass(eq=False)
class Analysis:
    sch: Schedule
    _model: Model | None = field(default=None)
    _deps: list[Dependence] | None = field(default=None)
    _bounds: list = field(default_factory=list)

    @property
    def model(self) -> Model:
        if self._model is None:
            RUNS["model"] += 1
            self._model = build(self.sch)
        return self._model

    def check_bounds(self) -> None:
        """Refuse a read outside its tensor (``poly/bounds.py``); the verdict is remembered."""
        if not self._bounds:
            RUNS["bounds"] += 1
            try:
                check_accesses(self.sch)
                self._bounds.append(None)
            except TesselError as err:
                self._bounds.append(err)
        if self._bounds[0] is not None:
            raise self._bounds[0]

    @property
    def dependences(self) -> list[Dependence]:
        if self._deps is None:
            RUNS["dependences"] += 1
            self._deps = dependences(self.model)
        return self._deps

    def carried(self, stage: Stage, iv: E.IterVar):
        """(dependence, carried part) for the first loop made of ``iv`` that carries one, or None."""
        order = {"flow": 0, "anti": 1, "output": 2}
        deps = sorted(self.dependences, key=lambda d: order[d.kind])
        for lp in self.model.loops_of(stage, iv):
            got = carried(self.model, deps, lp)
            if got is not None:
                return got
        return None


def analysis(sch: Schedule) -> Analysis:
    key, refs = state_key(sch)
    got = _CACHE.get(sch)
    if got is not None and got[0] == key:
        return got[2]
    result = Analysis(sch)
    _CACHE[sch] = (key, refs, result)
    return result


__all__ = ["RUNS", "Analysis", "analysis", "state_key"]
