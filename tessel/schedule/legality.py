"""Legality of a schedule, judged on the operational model of seed 001, with fixes.

The central rule is about the schedule tree (``tree.py``): a stage's values exist only inside
the node it hangs under, from the point where it is computed. So a producer must hang at a node
that encloses every one of its readers' loops -- equivalently, LCA(producer, reader) must be
the producer's own attach point (seed 001's LCA rule; Example 5 breaks it). Around it sit the
rules that make the tree well defined at all (no attachment cycle, no attachment to a stage
that is inlined or that does not read the producer, outputs stored in full at the root) and a
few rules beyond the tree for schedules TVM accepted and silently miscompiled (parallel or
vectorized reduction loops, one thread index bound to two nested loops, rfactor of a reducer
whose result depends on the order of combination).

Every broken rule becomes a :class:`Violation`: one sentence in the model's terms saying which
stage cannot be placed where and why, and, where one exists, a fix as code. A fix is only
proposed after it has been applied to a copy of the schedule and shown to remove the problem,
so applying it (``exec(err.fix, {"s": s, **err.fix_names})``) is safe. The code names stages
and tensors by Python identifiers made from their names (``B.local`` -> ``B_local``);
``fix_names`` maps each identifier to the tensor the user holds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ScheduleError
from ..ir import expr as E
from ..te.tensor import Tensor
from .dataflow import loop_ranges, py_name
from .graph import effective_consumers, reaches
from .stage import INLINE, SCOPE, Stage
from .tree import ScheduleTree, TreeNode, _attach_problem

if TYPE_CHECKING:
    from .schedule import Schedule


@dataclass
class Violation:
    """One broken rule. ``rule`` is a stable short name; ``fix`` is code or None."""

    rule: str
    stage: Stage
    explanation: str
    fix: str | None = None
    names: dict[str, Any] = field(default_factory=dict)

    def error(self, others: int = 0) -> ScheduleError:
        msg = f"illegal schedule: {self.explanation}"
        if others:
            msg += f"\n  ({others} more problem(s); s.violations() lists them all)"
        err = ScheduleError(msg, explanation=self.explanation, fix=self.fix)
        err.rule = self.rule  # type: ignore[attr-defined]
        err.fix_names = dict(self.names)  # type: ignore[attr-defined]
        err.stage = self.stage.name  # type: ignore[attr-defined]
        return err


# ---- how to name things in fix code --------------------------------------------------------
class _Names:
    """Identifiers for stages in fix code, mapped to the tensors the user holds."""

    def __init__(self, sch: Schedule):
        self.sch = sch
        self.names: dict[str, Any] = {}
        self._by_stage: dict[int, str] = {}

    def stage(self, st: Stage) -> str:
        if id(st) in self._by_stage:
            return self._by_stage[id(st)]
        base = py_name(st.name)
        name, k = base, 0
        while name in self.names or name in ("s", "te"):
            k += 1
            name = f"{base}_{k}"
        self._by_stage[id(st)] = name
        self.names[name] = st.origin_op.output(0)
        return name

    def axis(self, st: Stage, iv: E.IterVar) -> str:
        """A handle for loop ``iv`` of ``st``: ``C.op.axis[0]`` when the user's own op has it."""
        name = self.stage(st)
        op, origin = st.op, st.origin_op
        for field_name in ("axis", "reduce_axis"):
            cur = getattr(op, field_name, ())
            for k, a in enumerate(cur):
                if a is iv:
                    orig = getattr(origin, field_name, ())
                    if k < len(orig) and orig[k] is iv:
                        return f"{name}.op.{field_name}[{k}]"
                    return f"s[{name}].op.{field_name}[{k}]"
        k = next((n for n, a in enumerate(st.leaf_iter_vars) if a is iv), None)
        if k is not None:
            return f"s[{name}].leaf_iter_vars[{k}]"
        k = next(n for n, a in enumerate(st.all_iter_vars) if a is iv)
        return f"s[{name}].all_iter_vars[{k}]"

    def te(self) -> str:
        from .. import te

        self.names["te"] = te
        return "te"


def _try(sch: Schedule, code: str, names: dict[str, Any], target: Violation | None) -> int:
    """Apply ``code`` to a copy: 2 when the copy is legal, 1 when ``target``'s problem is gone, 0 else.

    The copy is deep (operations and IterVars too), since a fix may be a dataflow rewrite that
    changes IterVars (rfactor); the names the code uses are mapped onto the copy's tensors.
    """
    import copy

    memo: dict[int, Any] = {id(getattr(sch, "history", None)): None}
    try:
        trial = copy.deepcopy(sch, memo)
    except Exception:
        return 0
    local = {k: memo.get(id(v), v) if isinstance(v, Tensor) else v for k, v in names.items()}
    try:
        exec(code, {"s": trial, **local})
        left = find_violations(trial, propose=False)
    except Exception:
        return 0
    if not left:
        return 2
    if target is not None and not any(v.rule == target.rule and v.stage.name == target.stage.name for v in left):
        return 1
    return 0


def _choose(sch: Schedule, v: Violation, candidates: list[str], names: _Names) -> Violation:
    """Keep the first candidate fix that makes the schedule legal, else one that removes ``v``."""
    best, score = None, 0
    for code in candidates:
        got = _try(sch, code, names.names, v)
        if got > score:
            best, score = code, got
        if got == 2:
            break
    if best is not None:
        v.fix = best
        v.names = {k: x for k, x in names.names.items() if _mentions(best, k)}
    return v


def _mentions(code: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code) is not None


# ---- the rules -----------------------------------------------------------------------------
def find_violations(sch: Schedule, propose: bool = True) -> list[Violation]:
    """Every broken rule, the ones that keep the tree from being built first."""
    out: list[Violation] = []
    stages = [st for st in sch.stages if not st.is_placeholder]
    broken: set[int] = set()
    for st in stages:
        v = _check_output(sch, st, propose) or _check_attachment(sch, st, propose)
        if v is not None:
            out.append(v)
            broken.add(id(st))
    tree = ScheduleTree(sch)
    cons = effective_consumers(sch)
    for st in stages:
        if id(st) in broken or st.attach_type != SCOPE:
            continue
        v = _check_reader_relation(sch, st, cons, propose)
        if v is not None:
            out.append(v)
            broken.add(id(st))
    for st in stages:
        if id(st) in broken or st.attach_type == INLINE:
            continue
        for r in cons.get(st, []):
            if id(r) in tree.detached:
                continue
            v = _check_lca(sch, tree, st, r, cons, propose)
            if v is not None:
                out.append(v)
                break
    for st in stages:
        for iv, attr in st.iter_var_attrs.items():
            if attr.kind in ("parallel", "vectorized") and iv.is_reduce and any(iv is x for x in st.leaf_iter_vars):
                out.append(_reduction_annotation(sch, st, iv, attr.kind, propose))
    out.extend(_check_threads(sch, tree, propose))
    return out


def verify(sch: Schedule) -> None:
    """Raise a ScheduleError for the first broken rule (all are in ``s.violations()``)."""
    found = find_violations(sch)
    if found:
        raise found[0].error(len(found) - 1)


def _check_output(sch: Schedule, st: Stage, propose: bool) -> Violation | None:
    if not st.is_output or st.attach_type not in (INLINE, SCOPE):
        return None
    names = _Names(sch)
    n = names.stage(st)
    if st.attach_type == INLINE:
        why = (f"{st.name} is an output of the schedule but is marked inline: the caller receives all of "
               f"{st.name}, so it must be stored, and an inlined stage is never stored (its expression is "
               f"substituted into its readers)")
        rule = "inlined-output"
    else:
        where = _loop_words(st.attach_stage, st.attach_ivar)
        why = (f"{st.name} is an output of the schedule but is attached inside {where}: the caller receives "
               f"all of {st.name}, so it must be computed in full, once, at the root; inside that loop it "
               f"would be recomputed on every iteration or only partly stored")
        rule = "attached-output"
    v = Violation(rule, st, why)
    return _choose(sch, v, [f"s[{n}].compute_root()"], names) if propose else v


def _loop_words(st: Stage | None, iv: E.IterVar | None) -> str:
    return f"{st.name if st else '?'}'s loop over {iv.name if iv is not None else '?'}"


def _check_attachment(sch: Schedule, st: Stage, propose: bool) -> Violation | None:
    if st.attach_type != SCOPE:
        return None
    why = _attach_problem(st)
    if why is None:
        return None
    names = _Names(sch)
    n = names.stage(st)
    tgt, iv = st.attach_stage, st.attach_ivar
    where = _loop_words(tgt, iv)
    candidates = [f"s[{n}].compute_root()"]
    if "cycle" in why:
        chain = [st.name]
        s = tgt
        while s is not None and s is not st and len(chain) < 32:
            chain.append(s.name)
            s = s.attach_stage
        if tgt is st:
            text = (f"{st.name} is attached inside its own loop over {iv.name if iv is not None else '?'}: "
                    f"{st.name} would have to exist before it is computed, so the schedule tree has no place for it")
            rule = "self-attachment"
        else:
            text = (f"{st.name} is attached inside {where}, but the attachments {' -> '.join(chain)} -> {st.name} "
                    f"form a cycle: each stage would have to run inside the next, so the schedule tree has no "
                    f"place for any of them")
            rule = "attachment-cycle"
            members = []
            s = st
            while s is not None and not any(s is m for m in members):
                members.append(s)
                s = s.attach_stage
            candidates = [f"s[{names.stage(m)}].compute_root()" for m in members]
    elif tgt is not None and tgt.attach_type == INLINE:
        text = (f"{st.name} is attached inside {where}, but {tgt.name} is inlined: its expression is "
                f"substituted into its readers and it has no loops, so there is nowhere to compute {st.name}")
        rule = "inlined-target"
        candidates.append(f"s[{names.stage(tgt)}].compute_root()")
    elif tgt is not None and iv is not None and not any(iv is x for x in tgt.leaf_iter_vars):
        text = (f"{st.name} is attached at {where}, but {iv.name} is not one of {tgt.name}'s loops now "
                f"({tgt._leaf_names()}), so the schedule tree has no node for it")
        rule = "stale-attachment"
        from .dataflow import descendants

        desc = descendants(tgt, [iv])
        leaves = [x for x in tgt.leaf_iter_vars if id(x) in desc]
        if leaves:
            candidates.insert(0, f"s[{n}].compute_at(s[{names.stage(tgt)}], {names.axis(tgt, leaves[-1])})")
    else:
        text = f"{st.name} is attached inside {where}, but {why}"
        rule = "bad-attachment"
    v = Violation(rule, st, text)
    return _choose(sch, v, candidates, names) if propose else v


def _check_reader_relation(sch: Schedule, st: Stage, cons: dict, propose: bool) -> Violation | None:
    """A stage may only be attached to a stage that reads it, directly or through others."""
    tgt = st.attach_stage
    assert tgt is not None and st.attach_ivar is not None
    if reaches(cons, st, tgt):
        return None
    names = _Names(sch)
    n = names.stage(st)
    readers = ", ".join(r.name for r in cons.get(st, [])) or "none"
    text = (f"{st.name} is attached inside {_loop_words(tgt, st.attach_ivar)}, but {tgt.name} does not read "
            f"{st.name}, directly or through other stages ({st.name}'s readers: {readers}); a stage can only be "
            f"computed inside the loops of a stage that consumes it, where it is needed")
    v = Violation("attached-to-non-consumer", st, text)
    if not propose:
        return v
    candidates = [f"s[{n}].compute_root()"]
    direct = cons.get(st, [])
    if len(direct) == 1 and direct[0].leaf_iter_vars and direct[0].attach_type != INLINE:
        r = direct[0]
        candidates.insert(0, f"s[{n}].compute_at(s[{names.stage(r)}], {names.axis(r, r.leaf_iter_vars[0])})")
    return _choose(sch, v, candidates, names)


def _check_lca(sch: Schedule, tree: ScheduleTree, st: Stage, r: Stage, cons: dict, propose: bool) -> Violation | None:
    """Seed 001's LCA rule: ``st``'s attach point must enclose where its reader ``r`` runs."""
    at = tree.placement(st)
    use = tree.innermost(r)
    if at.kind == "root" or ScheduleTree.dominates(at, use):
        return None
    assert at.stage is not None and at.iter_var is not None
    names = _Names(sch)
    n, owner = names.stage(st), at.stage
    loop = at.iter_var
    handle = names.axis(owner, loop)
    rplace = tree.placement(r)
    if rplace.kind == "root":
        rwhere = "at the root"
    else:
        rwhere = f"inside {rplace.where()}"
    rel = "above" if any(a is rplace for a in at.ancestors()) else "outside"
    new = "new " if r.created_by and r.created_by.startswith(("cache_read", "cache_write", "rfactor")) else ""
    lca = ScheduleTree.lca(tree.stage_node(st), tree.stage_node(r))
    text = (f"{st.name} is attached inside {owner.name}'s loop over {loop.name} ({handle}), but its {new}reader "
            f"{r.name} sits {rwhere}, {rel} that loop, so {r.name} would read {st.name} before it exists "
            f"(in the schedule tree LCA({st.name}, {r.name}) is {lca.where()}, above {st.name}'s attach point "
            f"{at.where()}; a producer must be computed at a node that encloses all of its readers)")
    v = Violation("lca", st, text)
    if not propose:
        return v
    # A reader the user placed keeps its place and the producer moves out to it; a reader still
    # at the root where a rewrite put it (seed 001's B.local) moves in to the producer's loop.
    move_reader = []
    if r is not owner and not r.is_output and reaches(cons, r, owner):
        move_reader.append(f"s[{names.stage(r)}].compute_at(s[{names.stage(owner)}], {handle})")
    move_producer = []
    if r.attach_type == SCOPE and r.attach_stage is not None and r.attach_ivar is not None:
        t = r.attach_stage
        move_producer.append(f"s[{n}].compute_at(s[{names.stage(t)}], {names.axis(t, r.attach_ivar)})")
    candidates = move_producer + move_reader if move_producer else move_reader
    candidates.append(f"s[{n}].compute_root()")
    return _choose(sch, v, candidates, names)


# ---- rules beyond the tree -----------------------------------------------------------------
def _reduction_annotation(sch: Schedule, st: Stage, iv: E.IterVar, kind: str, propose: bool = True) -> Violation:
    verb = {"parallel": "parallelize", "vectorized": "vectorize"}[kind]
    out = st.op.outputs[0].name if st.op.outputs else st.name
    idx = ", ".join(a.name for a in st.op.axis)
    text = (f"stage {st.name}: cannot {verb} {iv.name}: it is a reduction loop, so all of its iterations "
            f"update the same element {out}[{idx}]; " + (
                "run in parallel they race on it and lose updates" if kind == "parallel" else
                "a vector over it would write one element from every lane at once and keep only one") +
            f". {verb.capitalize()} a data-parallel loop instead, or rfactor the reduction first so that the "
            f"loop becomes a data-parallel axis of the factored stage")
    v = Violation(f"{kind}-reduction", st, text)
    if not propose:
        return v
    names = _Names(sch)
    n = names.stage(st)
    method = "parallel" if kind == "parallel" else "vectorize"
    # set behind the primitives' back (they refuse it): the fix must take the annotation off first
    undo = f"s[{n}].iter_var_attrs.pop({names.axis(st, iv)})\n" if iv in st.iter_var_attrs else ""
    data = [a for a in st.leaf_iter_vars if not a.is_reduce]
    rng = loop_ranges(st, st.op.axis)
    trivial = all(E.is_const_int(getattr(rng.get(a), "extent", None), 1) for a in data)
    candidates = [undo + f"{n}_rf = s.rfactor({n}, {names.axis(st, iv)})\n"
                  f"s[{n}_rf].{method}(s[{n}_rf].op.axis[0])"]
    if data:  # a data-parallel loop is the simpler fix, unless it runs once (a full reduction)
        pick = data[0] if kind == "parallel" else data[-1]
        plain = [undo + f"s[{n}].{method}({names.axis(st, pick)})"]
        if kind == "vectorized" and st.leaf_iter_vars[-1] is not pick:
            # a vector loop belongs innermost: move the data-parallel loop inside the reduction
            order = [a for a in st.leaf_iter_vars if a is not pick] + [pick]
            plain.insert(0, undo + f"s[{n}].reorder({', '.join(names.axis(st, a) for a in order)})\n"
                         f"s[{n}].{method}({names.axis(st, pick)})")
        candidates[len(candidates) if trivial else 0:0] = plain
    return _choose(sch, v, candidates, names)


def reduction_annotation_error(stage: Stage, iv: E.IterVar, kind: str) -> ScheduleError:
    """The error ``parallel``/``vectorize`` raise for a reduction loop (before changing anything)."""
    return _reduction_annotation(stage.schedule, stage, iv, kind).error()


_FAMILIES = {"threadIdx": ("threadIdx.x", "threadIdx.y", "threadIdx.z"),
             "blockIdx": ("blockIdx.x", "blockIdx.y", "blockIdx.z"),
             "vthread": ("vthread",)}


def _bound_tag(node: TreeNode) -> str | None:
    if node.kind != "loop" or node.stage is None:
        return None
    attr = node.stage.iter_var_attrs.get(node.iter_var)
    if attr is None or attr.kind != "thread_binding" or attr.bind_thread is None:
        return None
    return attr.bind_thread.thread_tag or None


def _check_threads(sch: Schedule, tree: ScheduleTree, propose: bool) -> list[Violation]:
    """One thread index may count at most one loop on any path from the root."""
    out: list[Violation] = []
    reported: set[int] = set()

    def walk(node: TreeNode, bound: dict[str, TreeNode]) -> None:
        tag = _bound_tag(node)
        if tag is not None and tag in bound and id(node) not in reported:
            reported.add(id(node))
            out.append(_thread_twice(sch, tree, node, bound[tag], tag, propose))
        inner = dict(bound)
        if tag is not None and tag not in bound:
            inner[tag] = node
        for c in node.children:
            walk(c, inner)

    walk(tree.root, {})
    return out


def _thread_twice(sch: Schedule, tree: ScheduleTree, node: TreeNode, outer: TreeNode, tag: str,
                  propose: bool) -> Violation:
    st, iv = node.stage, node.iter_var
    assert st is not None and iv is not None
    text = (f"{st.name}'s loop over {iv.name} is bound to {tag}, but it runs inside {outer.where()}, which is "
            f"already bound to {tag}: one thread index cannot count two nested loops, so both would take the "
            f"same value and most iterations would never run")
    v = Violation("thread-bound-twice", st, text)
    if not propose:
        return v
    names = _Names(sch)
    n = names.stage(st)
    used = {t for a in [node, *node.ancestors()] if (t := _bound_tag(a))}
    for sub in node.walk():
        t = _bound_tag(sub)
        if t:
            used.add(t)
    family = _FAMILIES.get(tag.split(".")[0], ())
    others = [t for fam in ([family] + [f for f in _FAMILIES.values() if f is not family]) for t in fam]
    candidates = [f's[{n}].bind({names.axis(st, iv)}, {names.te()}.thread_axis("{t}"))'
                  for t in others if t not in used]
    return _choose(sch, v, candidates[:3], names)


# ---- reducers whose result depends on the order of combination ------------------------------
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


def reorder_counterexample(comb: E.CommReducer) -> str | None:
    """Why ``comb`` may not be combined in another order, or None when no sample shows it.

    Checked by evaluating the combine function on sample values that include ties and zeros:
    commutativity, associativity, and that the identity is neutral (every partial result of an
    rfactor starts from it). Evaluation is exact for these small values, so a difference is a
    real one; passing is evidence, not proof. A combiner that cannot be evaluated at all is
    refused, since then nothing shows that reordering is safe.
    """
    from ..ir.evaluate import evaluate

    lhs, rhs = comb.lhs, comb.rhs
    pools = [_samples(v.dtype) for v in lhs]
    rnd = random.Random(0)
    values: list[tuple] = []
    total = math.prod(len(p) for p in pools)
    if total <= 64:
        import itertools

        values = [tuple(x) for x in itertools.product(*pools)]
    else:
        values = [tuple(rnd.choice(p) for p in pools) for _ in range(64)]

    def f(a: tuple, b: tuple) -> tuple | None:
        env = {**dict(zip(lhs, a)), **dict(zip(rhs, b))}
        try:
            return tuple(evaluate(r, env) for r in comb.result)
        except Exception:
            return None

    evaluated = 0
    pairs = [(a, b) for a in values for b in values] if len(values) ** 2 <= 400 else \
        [(rnd.choice(values), rnd.choice(values)) for _ in range(400)]
    # near-ties: equal in all but one component (where tie-breaking rules hide)
    for a in values[:24]:
        for k in range(len(a)):
            for x in pools[k][:3]:
                pairs.append((a, (*a[:k], x, *a[k + 1:])))
    for a, b in pairs:
        ab, ba = f(a, b), f(b, a)
        if ab is None or ba is None:
            continue
        evaluated += 1
        if not _same(ab, ba):
            return (f"it is not commutative: combine(x, y) = {_fmt(ab)} but combine(y, x) = {_fmt(ba)} "
                    f"for x = {_fmt(a)}, y = {_fmt(b)}")
    for _ in range(300):
        a, b, c = rnd.choice(values), rnd.choice(values), rnd.choice(values)
        ab, bc = f(a, b), f(b, c)
        if ab is None or bc is None:
            continue
        left, right = f(ab, c), f(a, bc)
        if left is None or right is None:
            continue
        evaluated += 1
        if not _same(left, right):
            return (f"it is not associative: combine(combine(x, y), z) = {_fmt(left)} but combine(x, combine(y, z)) "
                    f"= {_fmt(right)} for x = {_fmt(a)}, y = {_fmt(b)}, z = {_fmt(c)}")
    try:
        ident = tuple(evaluate(i) for i in comb.identity)
    except Exception:
        ident = None
    if ident is not None:
        for a in values:
            got = f(ident, a)
            if got is not None and not _same(got, a):
                return (f"its identity {_fmt(ident)} is not neutral: combine(identity, x) = {_fmt(got)} "
                        f"for x = {_fmt(a)}")
    if evaluated == 0:
        return "tessel could not evaluate its combine function, so nothing shows that reordering it is safe"
    return None


def check_reducer_reorderable(stage: Stage, comb: E.CommReducer, axis: E.IterVar) -> None:
    """rfactor combines partial results in another order: refuse reducers for which that matters."""
    why = reorder_counterexample(comb)
    if why is None:
        return
    text = (f"rfactor of {stage.name} over {axis.name}: the reducer {comb.name} cannot be factored, because {why}. "
            f"rfactor computes one partial result per value of {axis.name} and combines them afterwards, in a "
            f"different order than the original loop, so {stage.name} would silently get different values. "
            f"Make the combine function commutative and associative with a neutral identity (for an arg-max, "
            f"break ties by index), or keep the reduction serial (do not rfactor it)")
    raise Violation("rfactor-order-dependent-reducer", stage, text).error()


__all__ = ["Violation", "check_reducer_reorderable", "find_violations", "reduction_annotation_error",
           "reorder_counterexample", "verify"]
