"""The polyhedral analysis of a schedule, computed once per schedule state.

Building twice the same schedule (the second build finds its code in the cache) must not pay
for the analysis again, and a legality check right after a build asks the same questions, so
the model and its dependences are kept beside the schedule, keyed by everything lowering reads
from it: each stage's operation, attachment, relations, loop order, annotations, and the
user's assumptions. Any primitive changes one of those and so the key.

The analysis is stored on the schedule object itself (``own_memo``), not in a table keyed by
it: the analysis refers back to the schedule (and its stages do), so a table's entry would keep
its key alive and a tuner's thousands of candidates would never be freed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..bound.infer import BoundContext, run_infer_bound
from ..errors import TesselError
from ..ir import expr as E
from ..ir.fingerprint import Unhashable, fingerprint
from ..schedule.commands import commands_key, seen_by_caller
from ..schedule.kinds import SCOPE
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .bounds import check_accesses, check_in_place_coverage
from .deps import Dependence, carried, dependences
from .model import Model, build
from .recurrence import check_recurrences

#: per memo slot, bumped by ``retire``: a memo stored in an earlier generation is not served
_GENERATION: dict[str, int] = {}
#: how many analyses were computed (not found in the cache), for tests and benchmarks
RUNS = {"model": 0, "dependences": 0, "bounds": 0}
#: seconds spent in each (what the analysis adds to builds; see benchmarks/poly_build.py)
SECONDS = {"model": 0.0, "dependences": 0.0, "bounds": 0.0}


def state_key(sch: Schedule) -> tuple[tuple, list]:
    """The key (object ids and kinds) and the objects whose ids it holds: the cache keeps them
    alive, so an id in a stored key can never come to mean another object."""
    parts: list = []
    refs: list = []
    for st in sch.stages:
        attrs = tuple((id(iv), a.kind, id(a.bind_thread)) for iv, a in st.iter_var_attrs.items())
        shared = tuple((id(a), id(b)) for a, b in st.placement.shared)  # loops that are a host's
        shared += tuple(("store", *map(id, st.placement.store))) if st.placement.store is not None else ()
        parts.append((id(st.op), st.attach_type, id(st.attach_stage), id(st.attach_ivar), shared, st.compute_at_pos,
                      tuple(map(id, st.leaf_iter_vars)), tuple(map(id, st.relations)), attrs, st.scope))
        refs += [st.op, st.attach_stage, st.attach_ivar, *st.leaf_iter_vars, *st.relations, *st.iter_var_attrs]
        refs += [iv for pair in st.placement.shared for iv in pair] + list(st.placement.store or ())
        refs += [a.bind_thread for a in st.iter_var_attrs.values()]
        parts.append((tuple(map(id, st.commands)), id(st.storage), st.scan_fold))  # Tiramisu's commands, a scan's fold
        refs += [*st.commands, st.storage]
    parts.append(tuple(map(id, sch.orders)))
    refs += list(sch.orders)
    parts.append(tuple(str(a) for a in getattr(sch, "assumptions", ())))
    return tuple(parts), refs


@dataclass(eq=False)
class Analysis:
    sch: Schedule
    _model: Model | None = field(default=None)
    _deps: list[Dependence] | None = field(default=None)
    _bounds: list = field(default_factory=list)
    _among: dict = field(default_factory=dict)
    _pairs: dict = field(default_factory=dict)  # dependences' relations by pair of accesses
    _content: list = field(default_factory=list)  # content_key, once made
    _ctx: list = field(default_factory=list)  # InferBound's result, once made

    @property
    def bound(self) -> BoundContext:
        """InferBound's result for this state, made once: the model (for legality) and the
        lowering start from the same ranges, and neither changes them (InferBound was run
        twice per build before)."""
        if not self._ctx:
            self._ctx.append(run_infer_bound(self.sch, check=False))
        return self._ctx[0]

    @property
    def model(self) -> Model:
        if self._model is None:
            RUNS["model"] += 1
            t0 = time.perf_counter()
            self._model = build(self.sch, self.bound)
            SECONDS["model"] += time.perf_counter() - t0
        return self._model

    def check_bounds(self) -> None:
        """Refuse a read outside its tensor (``poly/bounds.py``); the verdict is remembered,
        and a clean one also for identical schedules built later (``known_clean``)."""
        if not self._bounds and known_clean(self.sch, "bounds"):
            self._bounds.append(None)
        if not self._bounds:
            RUNS["bounds"] += 1
            t0 = time.perf_counter()
            try:
                check_accesses(self.sch)
                if any(st.attach_type == SCOPE and seen_by_caller(st) for st in self.sch.stages):
                    check_in_place_coverage(self.model)  # elements of a caller's tensor never written
                if any(getattr(st.op, "definitions", ()) for st in self.sch.stages):
                    check_recurrences(self.model)  # the loop order against a recurrence's self-reads
                self._bounds.append(None)
                remember_clean(self.sch, "bounds")
            except TesselError as err:
                self._bounds.append(err)
            finally:
                SECONDS["bounds"] += time.perf_counter() - t0
        if self._bounds[0] is not None:
            raise self._bounds[0]

    @property
    def dependences(self) -> list[Dependence]:
        if self._deps is None:
            model = self.model
            RUNS["dependences"] += 1
            t0 = time.perf_counter()
            self._deps = dependences(model, pairs=self._pairs)
            SECONDS["dependences"] += time.perf_counter() - t0
        return self._deps

    def among(self, stmts: list) -> list[Dependence]:
        """The dependences between ``stmts`` (computed for those alone unless all are known)."""
        ids = {id(x) for x in stmts}
        if self._deps is not None:
            return [d for d in self._deps if id(d.source) in ids and id(d.sink) in ids]
        key = frozenset(ids)
        if key not in self._among:
            model = self.model
            RUNS["dependences"] += 1
            t0 = time.perf_counter()
            self._among[key] = dependences(model, stmts, self._pairs)
            SECONDS["dependences"] += time.perf_counter() - t0
        return self._among[key]

    def carried(self, stage: Stage, iv: E.IterVar):
        """(dependence, carried part) for the first loop made of ``iv`` that carries one, or None;
        flow dependences are named first."""
        order = {"flow": 0, "anti": 1, "output": 2}
        for lp in self.model.loops_of(stage, iv):
            deps = sorted(self.among(self.model.statements_in(lp)), key=lambda d: order[d.kind])
            got = carried(self.model, deps, lp)
            if got is not None:
                return got
        return None


def _body_parts(body) -> tuple:
    """A compute's body is a tuple of expressions, an extern's one statement."""
    if body is None:
        return ()
    return tuple(body) if isinstance(body, (tuple, list)) else (body,)


def content_key(sch: Schedule) -> str | None:
    """A hash of everything the analysis reads, by content and position (not by object): an
    identical schedule built again -- a cached build of the same program -- has the same key.
    None when some part cannot be hashed faithfully (then nothing is shared). Made once per
    state of the schedule (a build asks for it several times), like the analysis itself."""
    found = analysis(sch)
    if not found._content:
        found._content.append(_content_key(sch))
    return found._content[0]


def _content_key(sch: Schedule) -> str | None:
    parts: list = [tuple(sch.assumptions)]
    pos = {id(st): k for k, st in enumerate(sch.stages)}
    for st in sch.stages:
        ivs = {id(iv): k for k, iv in enumerate(st.all_iter_vars)}
        op = st.op
        att = st.attach_stage
        parts += [type(op).__qualname__, op.name, st.attach_type, st.scope, st.is_output,
                  tuple((t.shape, t.dtype, t.name) for t in op.outputs), tuple(op.root_iter_vars),
                  _body_parts(getattr(op, "body", None)),
                  # a declared domain and a recurrence's directions and storage decide reads too
                  (op.where,) if op.where is not None else (), tuple(getattr(op, "directions", ())),
                  tuple(op.storage(t).name for t in op.outputs),
                  pos.get(id(att), -1) if att is not None else -1, st.scan_fold,
                  next((k for k, iv in enumerate(att.all_iter_vars) if iv is st.attach_ivar), -1) if att else -1,
                  # the loops it shares with its host (by position in each), and how many
                  tuple((ivs.get(id(a), -1), next((k for k, iv in enumerate(att.all_iter_vars) if iv is b), -1))
                        for a, b in st.placement.shared) if att else (), st.compute_at_pos,
                  # where it is stored when apart from where it is computed (by the store loop's place)
                  _store_place(sch, st, pos),
                  tuple(ivs.get(id(iv), -1) for iv in st.leaf_iter_vars),
                  tuple((r.kind, tuple(ivs.get(id(iv), -1) for iv in (*r.inputs, *r.outputs)),
                         tuple(r.params().values())) for r in st.relations),
                  tuple(sorted((ivs.get(id(iv), -1), a.kind) for iv, a in st.iter_var_attrs.items()))]
    parts.append(commands_key(sch))
    try:
        return fingerprint(*parts)
    except Unhashable:
        return None


def _store_place(sch: Schedule, st: Stage, pos: dict) -> tuple | None:
    """Where ``st`` is stored when apart from where it is computed: each store loop as (its
    stage's place, its place among that stage's IterVars); None when stored where computed."""
    store = st.placement.store
    if store is None:
        return None
    owners = [sch.stage_of_iter_var(lp) for lp in store]
    return tuple((pos.get(id(o), -1), next((k for k, iv in enumerate(o.all_iter_vars) if iv is lp), -1) if o else -1)
                 for o, lp in zip(owners, store))


#: content keys of schedules found clean (no read outside, no illegal annotation), most recent last
_CLEAN: dict[tuple[str, str], None] = {}
_CLEAN_LIMIT = 256
#: builds may run in several threads at once (tessel.distributed.run_ranks' ranks): one writer at a time
_CLEAN_LOCK = threading.Lock()


def known_clean(sch: Schedule, what: str) -> bool:
    """Whether an identical schedule was already found clean for ``what`` in this process."""
    key = content_key(sch)
    return key is not None and (key, what) in _CLEAN


def remember_clean(sch: Schedule, what: str) -> None:
    key = content_key(sch)
    if key is None:
        return
    with _CLEAN_LOCK:
        _CLEAN[(key, what)] = None
        while len(_CLEAN) > _CLEAN_LIMIT:
            del _CLEAN[next(iter(_CLEAN))]


def forget() -> None:
    """Forget the schedules found clean and the analyses made (a cold build measured in a
    process that has built the same program before)."""
    with _CLEAN_LOCK:
        _CLEAN.clear()
    retire("_memo_analysis")


def retire(slot: str) -> None:
    """Stop serving every memo stored so far in ``slot`` (on whatever objects hold one)."""
    _GENERATION[slot] = _GENERATION.get(slot, 0) + 1


def own_memo(obj: object, slot: str, key: object) -> object | None:
    """What ``remember(obj, slot, key, value)`` stored on ``obj`` under this ``key``, or None.
    The memo lives in the object's own attribute, so it dies with the object (a cycle back to
    it is collected); a shallow copy of the object that inherited the attribute is told apart
    by the owner stored beside the value, and ``retire`` retires every memo of a slot at once."""
    got = getattr(obj, slot, None)
    if got is None or got[0] is not obj or got[1] != _GENERATION.get(slot, 0) or got[2] != key:
        return None
    return got[4]


def remember(obj: object, slot: str, key: object, refs: list, value: object) -> None:
    """Store ``value`` on ``obj`` (see ``own_memo``); ``refs`` are the objects whose ids ``key``
    holds, kept alive with it so an id can never come to mean another object. A slot's name
    starts with ``_memo_``: ``Schedule.copy`` drops those (a copy holding its original's memo
    would keep the original alive)."""
    assert slot.startswith("_memo_"), slot
    setattr(obj, slot, (obj, _GENERATION.get(slot, 0), key, refs, value))


def analysis(sch: Schedule) -> Analysis:
    key, refs = state_key(sch)
    got = own_memo(sch, "_memo_analysis", key)
    if got is not None:
        return got  # type: ignore[return-value]
    result = Analysis(sch)
    remember(sch, "_memo_analysis", key, refs, result)
    return result


__all__ = ["RUNS", "SECONDS", "Analysis", "analysis", "content_key", "forget", "known_clean", "own_memo",
           "remember", "remember_clean", "retire", "state_key"]
