"""computeAt by position (seed 003): ``s[P].compute_at(s[C], pos)`` with an int ``pos``.

Compute P -- and every stage that must move with it -- inside the outer ``pos`` loops of C's
loop nest. P need only be upstream of C. As nvFuser does it today (``../shared/peers/NVFUSER.md``
section 5), in four steps, each of which is a function here:

1. **select** the stages that move: every stage on a path from P to the *common consumer*
   (the first stage at or after C that every use of P flows into), or, without one, P and its
   dependents that have uses;
2. **span** the stages from C along the edges the selection allows, preferring at each step the
   edge that keeps most of C's first ``pos`` loops (a reduction-then-broadcast detour loses one);
3. **replay** along that tree (``transform_replay.py``): producers as consumers, consumers as
   producers, so every reached stage's outer loops are images of C's first ``pos`` loops;
4. **place**: each selected stage gets the position its loops map to (``compute_at_pos``), no
   deeper than is legal, and is attached (a TE ``compute_at``) at the loop that position names;
   the other consumers -- the common consumer, terminal outputs -- get the same outer loops and
   share them (``shared_loops``) without being computed at anything (``max_producer_pos``).

The result is an ordinary TE schedule: relations, attachments, and for a stage sharing a loop
it does not read from, the map of which of its loops are the host's. Everything is worked out on
a copy and committed only when it is legal, so a refused call leaves the schedule as it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from .axis_map import Graph, common_consumer, reaches
from .checking import checker
from .kinds import ROOT, SCOPE, Placement
from .max_position import inliner_limit
from .promises import Refusal, short_of_request
from .storage_point import (
    exact_share,
    init_outside,
    normalize_pos,
    share_by_image,
    share_reduction_loop,
    shares_host_loops,
)
from .transform_replay import (
    FixedLoopsError,
    leaf_images,
    replay_consumer_as_producer,
    replay_producer_as_consumer,
)

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage

MODES = ("standard", "best_effort", "most_inlined")


@dataclass
class Report:
    """What one computeAt did, for the explorer and for users who ask (``s.position_log``)."""

    call: str
    common_consumer: str | None
    selected: list[str]
    tree: list[tuple[str, str, str]] = field(default_factory=list)  # (from, to, "PasC"/"CasP")
    replayed: list[str] = field(default_factory=list)
    attached: list[tuple[str, str, str, int]] = field(default_factory=list)  # (stage, at stage, loop, pos)
    shared: list[tuple[str, str, str]] = field(default_factory=list)  # (stage, host, loop)
    made: list[tuple[str, object, str]] = field(default_factory=list)  # (stage, relation, replayed from)
    #: (stage, host, loop): run in the host's loop over the box of each iteration (Placement.image)
    boxed: list[tuple[str, str, str]] = field(default_factory=list)
    #: best effort: (whose position, asked, given, why not deeper), in the order decided
    lowered: list[tuple[str, int, int, str]] = field(default_factory=list)

    def to_text(self) -> str:
        lines = [self.call, f"  common consumer: {self.common_consumer or 'none'}",
                 f"  selected: {', '.join(self.selected) or 'none'}",
                 f"  replayed: {', '.join(self.replayed) or 'none'}"]
        lines += [f"  {a} computed at {b}'s loop {loop} (position {p})" for a, b, loop, p in self.attached]
        lines += [f"  {a} shares {b}'s loops down to {loop}" for a, b, loop in self.shared]
        lines += [f"  {a} runs in {b}'s loop {loop} over the box of its domain each iteration covers "
                  f"(recomputed where boxes overlap)" for a, b, loop in self.boxed]
        lines += [f"  lowered {a} from {p} to {q}: {why}" for a, p, q, why in self.lowered]
        return "\n".join(lines)


def replay_origins(sch: Schedule) -> dict[int, str]:
    """For every relation a position primitive made by replay: the stage it was replayed from."""
    return {id(rel): ref for rep in sch.position_log for _, rel, ref in rep.made}


# ---- 1. selection --------------------------------------------------------------------------
def select(g: Graph, producer: Stage, cc: Stage | None) -> list[Stage]:
    """The stages that move with the producer (placeholders never move)."""
    if cc is not None:
        chosen = [producer] + [x for x in g.downstream(producer) if x is not cc and reaches(g, x, cc)]
    else:
        chosen = [producer] + [x for x in g.downstream(producer) if g.consumers[id(x)]]
    order = {id(st): k for k, st in enumerate(g.sch.stages)}
    return sorted((x for x in chosen if not x.is_placeholder), key=lambda s: order[id(s)])


# ---- 2 and 3. spanning tree and replay -------------------------------------------------------
def span_and_replay(g: Graph, ref: Stage, pos: int, selected: list[Stage], report: Report | None = None,
                    allow=None, best_effort: bool = False) -> dict[int, list[int]]:
    """Replay outwards from ``ref`` along the edges that keep most of its first ``pos`` loops.

    Returns, for every reached stage, the reference loop index of each of its leading image
    loops (``refidx``). ``allow(y, x, direction)`` says which edges may be taken."""
    sel = {id(s) for s in selected}
    if allow is None:
        def allow(y: Stage, x: Stage, d: str) -> bool:
            return id(x) in sel if d == "PasC" else (id(x) in sel or id(y) in sel)
    refidx: dict[int, list[int]] = {id(ref): list(range(pos))}
    posof: dict[int, int] = {id(ref): pos}
    info: dict[int, dict[int, E.IterVar]] = {id(ref): {id(r): r for r in ref.op.root_iter_vars}}
    order = {id(st): k for k, st in enumerate(g.sch.stages)}
    while True:
        best = None
        for yid in list(refidx):
            y = _stage(g, yid)
            for d, xs in (("PasC", g.producers[yid]), ("CasP", g.consumers[yid])):
                for x in xs:
                    if id(x) in refidx or x.is_placeholder or not allow(y, x, d):
                        continue
                    amap = g.map(x, y) if d == "PasC" else g.map(y, x)
                    step = amap.c2p if d == "PasC" else amap.p2c
                    got = {k: step[v] for k, v in info[yid].items() if v in step}
                    key = (len(got), -order[id(x)], d == "PasC")
                    if best is None or key > best[0]:
                        best = (key, y, x, d, got)
        if best is None:
            return refidx
        _, y, x, d, got = best
        fixed = max(x.compute_at_pos, x.max_producer_pos)
        before = {id(r) for r in x.relations}
        if d == "PasC":
            res = replay_producer_as_consumer(g, x, y, posof[id(y)], fixed, best_effort)
        else:
            res = replay_consumer_as_producer(g, x, y, posof[id(y)], fixed, best_effort)
        info[id(x)] = got
        posof[id(x)] = res.pos
        refidx[id(x)] = [refidx[id(y)][j] for j in res.ref_index]
        if report is not None:
            report.tree.append((y.name, x.name, d))
            if res.replayed:
                report.replayed.append(x.name)
                report.made += [(x.name, r, y.name) for r in x.relations if id(r) not in before]


def _stage(g: Graph, sid: int) -> Stage:
    return next(st for st in g.stages if id(st) == sid)


# ---- 4. positions and placement --------------------------------------------------------------
def self_limit(g: Graph, st: Stage, upto: int) -> Refusal | None:
    """The first of ``st``'s loops it cannot share with a consumer: a reduction loop (its
    consumers need the finished value), a vectorized loop, a loop of an axis no consumer maps."""
    unmapped: dict[int, str] = {}
    for c in g.consumers[id(st)]:
        amap = g.map(st, c)
        for p, why in amap.unmappable.items():
            unmapped.setdefault(id(p), why)
    from .dataflow import connected

    if upto > 0 and getattr(st.op, "definitions", ()) and st.leaf_iter_vars:
        iv = st.leaf_iter_vars[0]
        return Refusal("UNMAPPABLE_AXIS", st, f"{st.name} is a definition of a recurrence: it must run whole, after "
                       f"the definition before it (lowering refuses it inside another stage's loop), so it stays "
                       f"at the root", 0, (st,), (iv,))
    for k, iv in enumerate(st.leaf_iter_vars[:upto]):
        if iv.is_reduce:
            return Refusal("RECOMPUTE_REDUCTION", st, f"{st.name}'s loop {iv.name} is a reduction loop: the stages "
                           f"reading {st.name} need its finished value, so they cannot share that loop "
                           f"(sharing it would need {st.name}'s reduction recomputed for every iteration)", k,
                           (st,), (iv,))
        if st.leaf_kind(iv) == LoopKind.VECTORIZED:
            return Refusal("UNMAPPABLE_AXIS", st, f"{st.name}'s loop {iv.name} is vectorized; a vectorized loop "
                           "runs as one vector operation and cannot enclose other stages", k, (st,), (iv,))
        near = connected(st, iv)
        bad = next((why for r in st.op.root_iter_vars if id(r) in near and id(r) in unmapped
                    for why in [unmapped[id(r)]]), None)
        if bad is not None:
            return Refusal("UNMAPPABLE_AXIS", st, f"{st.name}'s loop {iv.name} cannot be shared: {bad}", k, (st,), (iv,))
    return None


class Placer:
    """Decides each selected stage's position and the TE loop it is attached at."""

    def __init__(self, g: Graph, refidx: dict[int, list[int]], host: Stage | None):
        self.g, self.refidx, self.host = g, refidx, host
        # for each stage: reference loop index -> (stage owning the loop, loop)
        self.owner: dict[int, dict[int, tuple[Stage, E.IterVar]]] = {}
        self.lowered: list[tuple[str, int, int, str]] = []  # best effort: what place() lowered, and why
        self.uninlinable: frozenset[int] = frozenset()  # ids of loops no stage may be inlined into
        self.merged: list[tuple[str, str, str]] = []  # (stage, host, loop): a reduction loop it now shares
        if host is not None:
            self.owner[id(host)] = {r: (host, host.leaf_iter_vars[h]) for h, r in enumerate(refidx.get(id(host), []))}

    def as_sibling(self, st: Stage) -> None:
        """A consumer that is not moved shares every reference loop the host has and it has (a
        host that itself shares this consumer's loops lends them back: nvFuser's
        AdvancedComputeAt8, t7 sharing t4's loop as a later target)."""
        hown = self.owner.get(id(self.host), {}) if self.host is not None else {}
        own: dict[int, tuple[Stage, E.IterVar]] = {}
        for k, r in enumerate(self.refidx.get(id(st), [])):
            own[r] = resolve(*hown[r]) if r in hown else (st, st.leaf_iter_vars[k])
        self.owner[id(st)] = own

    def loop_for(self, st: Stage, k: int) -> tuple[tuple[Stage, E.IterVar] | None, Refusal | None]:
        """The loop where ``st``'s loop ``k`` would live, the same through every consumer."""
        mine = self.refidx.get(id(st), [])
        if k >= len(mine):
            return None, None
        r = mine[k]
        found: tuple[Stage, E.IterVar] | None = None
        first: Stage | None = None
        for c in self.g.consumers[id(st)]:
            cidx = self.refidx.get(id(c))
            img = leaf_images(st, c, dict(self.g.map(st, c).p2c)).get(st.leaf_iter_vars[k])
            leaf_at = next((j for j, x in enumerate(c.leaf_iter_vars) if img is not None and x is img), None)
            if cidx is None or leaf_at is None or leaf_at >= len(cidx):
                return None, Refusal("UNMAPPABLE_AXIS", st, f"its reader {c.name} has no loop that is {st.name}'s "
                                     f"loop {st.leaf_iter_vars[k].name} among its outer loops", k, (st, c),
                                     (st.leaf_iter_vars[k],))
            if cidx[leaf_at] != r:
                return None, Refusal("BROADCAST_TWO_WAYS", st, f"{c.name} reads {st.name}'s axis along its loop "
                                     f"{c.leaf_iter_vars[leaf_at].name}, another reader along a different loop; "
                                     f"{st.name} is broadcast two different ways into stages that share loops",
                                     k, (st, c), (st.leaf_iter_vars[k],))
            loop = self.owner.get(id(c), {}).get(r) or resolve(c, c.leaf_iter_vars[leaf_at])
            if found is not None and resolve(*found)[1] is not resolve(*loop)[1]:  # one loop, however reached
                one = self._one_reduction_loop(r, first, found, c, loop)
                if one is not None:
                    found = one
                    continue
                return None, Refusal("RECOMPUTE_REDUCTION", st, f"its readers {first.name} and {c.name} run "
                                     f"{st.name}'s loop {st.leaf_iter_vars[k].name} as two different loops "
                                     f"({found[0].name}'s {found[1].name} and {loop[0].name}'s {loop[1].name}), "
                                     f"so {st.name} would have to be computed once inside each: recomputed",
                                     k, (st, first, c), (found[1], loop[1]))
            found, first = loop, first or c
        return found, None

    def _one_reduction_loop(self, r: int, a: Stage, la: tuple[Stage, E.IterVar], b: Stage,
                            lb: tuple[Stage, E.IterVar]) -> tuple[Stage, E.IterVar] | None:
        """Two readers running a producer's loop as two reduction loops of their own (nvFuser's
        ReductionMultiConsumer): one runs its update in the other's loop, its init and storage
        around it (``storage_point.share_reduction_loop``). The loop both now run, or None."""

        for x, lx, h, lh in ((b, lb, a, la), (a, la, b, lb)):
            if lx[0] is x and lh[0] is h and share_reduction_loop(x, lx[1], h, lh[1]):
                self.owner.setdefault(id(x), {})[r] = lh
                self.merged.append((x.name, h.name, lh[1].name))
                return lh
        return None

    def place(self, st: Stage, want: int, best_effort: bool) -> tuple[int, Refusal | None]:
        """The position ``st`` gets (at most ``want``) and why not deeper."""
        why = self_limit(self.g, st, want)
        limit = min(want, why.limit) if why is not None else want
        rule = inliner_limit(self.g, st, limit, best_effort, self.uninlinable)
        if rule is not None:
            why, limit = rule, rule.limit
        loops: list[tuple[Stage, E.IterVar]] = []
        for k in range(limit):
            loop, bad = self.loop_for(st, k)
            if loop is None:
                why, limit = bad or why, k
                break
            loops.append(loop)
        if limit < want and not best_effort and why is not None:
            return limit, why
        if limit < want and why is not None:
            self.lowered.append((f"{st.name}'s position", want, limit, why.text))
        mine = self.refidx.get(id(st), [])
        own = {r: loops[k] for k, r in enumerate(mine[:limit])}
        for k, r in enumerate(mine[limit:], start=limit):
            own[r] = (st, st.leaf_iter_vars[k])
        self.owner[id(st)] = own
        if limit:
            loops = [self._readers_own(st, lp) for lp in loops]
            at_stage, at_loop = loops[-1]
            shared = tuple((st.leaf_iter_vars[k], loops[k][1]) for k in range(limit)
                           if loops[k][0] is not st and exact_share(st, st.leaf_iter_vars[k], *loops[k]))
            st.placement = Placement(SCOPE, at_stage, at_loop, shared, limit)
        else:  # where it was, at position 0
            st.placement = dataclasses.replace(st.placement, position=0)
        return limit, None


    def _readers_own(self, st: Stage, loop: tuple[Stage, E.IterVar]) -> tuple[Stage, E.IterVar]:
        """A host loop that is a reader's own loop, lent to the host (nvFuser's
        AdvancedComputeAt8): ``st`` is attached at the reader's loop, so the schedule tree puts
        it above that reader; other shared loops stay as reached."""
        owner = resolve(*loop)
        return owner if owner[0] is not loop[0] and any(owner[0] is c for c in self.g.consumers[id(st)]) else loop


def resolve(st: Stage, leaf: E.IterVar) -> tuple[Stage, E.IterVar]:
    """The loop ``st``'s loop ``leaf`` really is: a host's loop it shares, else its own."""
    host_loop = st.shared_loops.get(leaf)
    if host_loop is not None and st.attach_stage is not None:
        owner = st.schedule.stage_of_iter_var(host_loop)
        if owner is not None:
            return owner, host_loop
    return st, leaf


def shared_first(host: Stage, loops: list[E.IterVar]) -> list[E.IterVar]:
    """``host``'s loops reordered with ``loops`` (a reader shares them) outermost, in that order:
    then a reader attached at the last of them runs inside those alone."""
    return list(loops) + [iv for iv in host.leaf_iter_vars if not any(iv is lp for lp in loops)]


def regroup_fix(names, st: Stage):
    """A candidate fix for a stage that shares a host's loops but runs inside others of the
    host's too (the host reordered or split since): the host's shared loops outermost again."""
    from .fixes import FixBuilder

    if not shares_host_loops(st, once=False) or st.attach_stage is None:
        return None
    host = st.attach_stage
    loops = [st.shared_loops[iv] for iv in st.leaf_iter_vars[:len(st.shared_loops)]]
    if not all(any(lp is x for x in host.leaf_iter_vars) for lp in loops):
        return None
    return FixBuilder(names).reorder(host, shared_first(host, loops))


def update_producer_positions(g: Graph, stages) -> None:
    """``max_producer_pos``: how many of a stage's outer loops a producer is computed in."""
    for st in stages:
        if st.compute_at_pos <= 0:
            continue
        last = st.leaf_iter_vars[st.compute_at_pos - 1]
        for c in g.consumers[id(st)]:
            img = leaf_images(st, c, dict(g.map(st, c).p2c)).get(last)
            k = next((j for j, x in enumerate(c.leaf_iter_vars) if img is not None and x is img), -1)
            c.max_producer_pos = max(c.max_producer_pos, k + 1)


def compute_at_position(sch: Schedule, producer: Stage, consumer: Stage, pos, mode: str = "standard") -> Report:
    """``s[P].compute_at(s[C], pos, mode)``: worked out on a copy, committed when legal.

    Standard mode refuses what it cannot honour (``promises.py``); best effort lowers the
    position one loop at a time and records each step's reason in ``Report.lowered``."""
    from .positions import refuse

    if mode not in MODES:
        raise ScheduleError(f"stage {producer.name}: compute_at mode must be one of {', '.join(MODES)}, got {mode!r}")
    p = normalize_pos(consumer, pos, "compute_at")
    if not any(x is consumer for x in Graph(sch).downstream(producer)):
        raise ScheduleError(
            f"stage {producer.name}: compute_at({consumer.name}, {pos}) needs {consumer.name} to read "
            f"{producer.name}, directly or through other stages, but it does not; compute {producer.name} at "
            f"one of its readers: {', '.join(c.name for c in Graph(sch).consumers[id(producer)]) or 'none'}")
    if mode == "most_inlined":
        p = len(consumer.leaf_iter_vars)
    lowered: list[tuple[str, int, int, str]] = []
    while True:
        got = _attempt(sch, producer, consumer, pos, p, mode)
        if isinstance(got, Report):
            got.lowered[:0] = lowered
            return got
        if mode == "standard" or p == 0:
            raise refuse(sch, got, producer, consumer, pos, p)
        lowered.append((f"the position at {consumer.name}", p, p - 1, got.text))
        p -= 1


def _attempt(sch: Schedule, producer: Stage, consumer: Stage, pos, p: int, mode: str) -> Report | Refusal:
    """One try at consumer position ``p``: the report, committed, or why it is refused."""
    from .positions import commit

    trial = sch.copy(record=False)
    tp, tc = trial.stages[sch.stages.index(producer)], trial.stages[sch.stages.index(consumer)]
    g = Graph(trial)
    cc = common_consumer(g, tp, tc)
    selected = select(g, tp, cc)
    report = Report(f"s[{producer.name}].compute_at(s[{consumer.name}], {pos}, mode={mode!r})",
                    cc.name if cc is not None else None, [s.name for s in selected])
    best = mode != "standard"
    try:
        refidx = span_and_replay(g, tc, p, selected, report, best_effort=best)
    except FixedLoopsError as err:
        return Refusal("FIXED_LOOPS", err.target, str(err), max(err.target.compute_at_pos, err.target.max_producer_pos),
                       (err.target,), tuple(err.target.leaf_iter_vars[:err.target.max_producer_pos]))
    g = Graph(trial)
    short = short_of_request(g, tp, tc, refidx, p)
    if short is not None and not best:
        return short
    if short is not None:
        report.lowered.append((f"{producer.name}'s position", p, short.limit, short.text))
    refusal = place_all(g, refidx, selected, tc, best, report) or _still_illegal(trial)
    if refusal is not None:
        return refusal
    commit(sch, trial)
    return report


def _still_illegal(trial: Schedule) -> Refusal | None:
    """A legality rule the placement broke (a reader left outside a shared loop): refused."""
    found = checker().violations(trial, propose=False)
    if not found:
        return None
    v = found[0]
    return Refusal("UNMAPPABLE_AXIS", v.stage, v.explanation, v.stage.compute_at_pos, tuple(v.stages), tuple(v.loops))


def choose_host(g: Graph, selected: list[Stage], ref: Stage, refidx: dict[int, list[int]]) -> tuple[Stage | None, list[Stage]]:
    """The stage whose loops the moved stages live in, and the other outer consumers."""
    sel = {id(s) for s in selected}
    outer = [c for s in selected for c in g.consumers[id(s)] if id(c) not in sel and id(c) in refidx]
    uniq: list[Stage] = []
    for c in outer:
        if not any(c is u for u in uniq):
            uniq.append(c)
    if not uniq:
        return None, []
    host = ref if any(ref is u for u in uniq) else next((u for u in uniq if u.attach_type == ROOT), None)
    return host, [u for u in uniq if u is not host and u.attach_type == ROOT]


def place_all(g: Graph, refidx: dict[int, list[int]], selected: list[Stage], ref: Stage, best_effort: bool,
              report: Report | None = None, caps: dict[str, int] | None = None,
              uninlinable: frozenset[int] = frozenset()) -> Refusal | None:
    """Positions for the selected stages (consumers first), then the siblings' shared loops.

    ``caps``: the deepest position a stage (by name) may get, which a best-effort caller lowers
    after a refusal found only once the siblings are placed (a reader it would have to share)."""
    host, siblings = choose_host(g, selected, ref, refidx)
    placer = Placer(g, refidx, host)
    placer.uninlinable = uninlinable
    for sib in siblings:
        placer.as_sibling(sib)
    for st in reversed(selected):
        want = min(len(refidx.get(id(st), [])), (caps or {}).get(st.name, len(st.leaf_iter_vars)))
        got, why = placer.place(st, want, best_effort)
        if why is not None:
            return _prefer_ref(g, refidx, selected, ref, why)
        if got and report is not None:
            report.attached.append((st.name, st.attach_stage.name, st.attach_ivar.name, got))
    update_producer_positions(g, selected)
    if report is not None:
        report.lowered += placer.lowered
        report.shared += placer.merged
    for sib in siblings:
        why = share_loops(placer, sib)
        if why is not None:
            return why
        if (sib.shared_loops or sib.placement.image) and report is not None:
            got = report.boxed if sib.placement.image else report.shared
            got.append((sib.name, sib.attach_stage.name, sib.attach_ivar.name))
    return None


def _prefer_ref(g: Graph, refidx: dict[int, list[int]], selected: list[Stage], ref: Stage, why: Refusal) -> Refusal:
    """The refusal to explain: the user's consumer's own limit when it has one (#110: T2's
    reduction loop, not T3's, which consumers-first placement happens to meet first)."""
    if why.stage is ref or not any(ref is s for s in selected):
        return why
    own = self_limit(g, ref, len(refidx.get(id(ref), [])))
    return own if own is not None else why


def share_loops(placer: Placer, sib: Stage) -> Refusal | None:
    """Attach an outer consumer inside the host's loops its producers are computed in."""
    need = sib.max_producer_pos
    host = placer.host
    if need == 0 or host is None:
        return None
    own = placer.owner.get(id(sib), {})
    idx = placer.refidx.get(id(sib), [])
    loops = [own.get(r) for r in idx[:need]]
    if len(loops) < need or any(lp is None or lp[0] is sib for lp in loops):
        return None  # its producers sit in its own loops: nothing to share
    bad = next((k for k in range(need) if not exact_share(sib, sib.leaf_iter_vars[k], *loops[k])), None)
    if host.attach_type == ROOT and bad is not None:

        if share_by_image(placer.g, sib, host):
            return None
    if host.attach_type != ROOT or bad is not None:
        why = (f"{host.name} is itself computed inside another stage" if host.attach_type != ROOT else
               f"its loop {sib.leaf_iter_vars[bad].name} does not run over the same values as "
               f"{host.name}'s {loops[bad][1].name}")
        return Refusal("UNMAPPABLE_AXIS", sib, f"{sib.name} reads stages computed inside {host.name}'s loops and "
                       f"would have to share them, but {why}", 0, (sib, host), ())

    store = init_outside(sib, need, [lp[1] for lp in loops])  # its reduction loop a host's: init outside
    why = runs_once(placer.g, sib, host, [lp[1] for lp in loops], reduction_ok=store is not None)
    if why is not None:
        return why
    shared = tuple((sib.leaf_iter_vars[k], loops[k][1]) for k in range(need))
    sib.placement = Placement(SCOPE, host, loops[-1][1], shared, sib.compute_at_pos, store)
    return None


def runs_once(g: Graph, sib: Stage, host: Stage, loops: list[E.IterVar], reduction_ok: bool = False) -> Refusal | None:
    """Why ``sib``, a reader that is not moved, would not compute its values once if it ran
    inside ``host``'s ``loops`` (its first loops, one for one), or None.

    Attached at the innermost of them, its whole body -- every loop it does not share, a
    reduction's init included -- runs once per iteration of *every* host loop around that point.
    So each of those loops must be one of the loops it shares (else all of it is computed once
    per value of a loop it does not have: nvFuser's NonUniqueBroadcastSize), and none of the
    loops it shares may be one of its reduction loops (else the reduction starts over on every
    iteration and keeps only the last term), unless its init and storage go outside that loop
    (``reduction_ok``: ``storage_point.init_outside``, nvFuser's Issue329)."""
    around = host.leaf_iter_vars[:host.leaf_iter_vars.index(loops[-1]) + 1]
    extra = [iv for iv in around if not any(iv is lp for lp in loops)]
    mine = sib.leaf_iter_vars[:len(loops)]
    red = None if reduction_ok else next((k for k, iv in enumerate(mine) if iv.is_reduce), None)
    if not extra and red is None:
        return None
    moved = [p for p in g.producers[id(sib)] if p.attach_stage is host and p.compute_at_pos > 0]
    first = extra[0] if extra else loops[red]
    limit = _outside(host, moved[0], first) if moved else 0
    names = ", ".join(p.name for p in moved) or "its producers"
    if extra:
        own = [iv for iv in sib.leaf_iter_vars if not any(iv is m for m in mine)]
        text = (f"{sib.name} reads {names}, computed inside {host.name}'s loops "
                f"{', '.join(_extent(host, iv) for iv in around)}, so it must run inside them too; it shares "
                f"{', '.join(_extent(host, iv) for iv in loops)} with its own loops, but "
                f"{', '.join(_extent(host, iv) for iv in extra)} is none of them ({sib.name}'s other loops, "
                f"tied to no loop of {host.name}'s by what it reads: "
                f"{', '.join(_extent(sib, iv) for iv in own) or 'none'}): all of "
                f"{sib.name} would be computed again on every iteration of it")
        order = tuple(shared_first(host, loops))
        return Refusal("UNMAPPABLE_AXIS", moved[0] if moved else sib, text, limit, (sib, host, *moved),
                       tuple(extra) + tuple(own), (host, order, len(loops)))
    text = (f"{sib.name} reads {names}, computed inside {host.name}'s loop {loops[red].name}, which {sib.name} "
            f"would share as its own reduction loop {mine[red].name}; {sib.name}'s body, its reduction's init "
            f"included, would run on every iteration of that loop, starting it over each time and keeping "
            f"only the last term")
    return Refusal("RECOMPUTE_REDUCTION", moved[0] if moved else sib, text, limit, (sib, host, *moved),
                   (loops[red], mine[red]))


def _outside(host: Stage, st: Stage, loop: E.IterVar) -> int:
    """How many of ``st``'s leading loops are host loops outside ``loop`` (its deepest position
    that keeps it out of ``loop``)."""
    at = host.leaf_iter_vars.index(loop)
    k = 0
    for iv in st.leaf_iter_vars[:st.compute_at_pos]:
        mapped = st.shared_loops.get(iv, iv)
        if not any(mapped is h for h in host.leaf_iter_vars[:at]):
            break
        k += 1
    return k


def _extent(st: Stage, iv: E.IterVar) -> str:
    """``i (7 values)``: a loop named with its extent, for refusals about extents that differ."""
    from .dataflow import loop_ranges

    r = loop_ranges(st, st.op.root_iter_vars).get(iv)
    return f"{iv.name} ({r.extent} values)" if r is not None else iv.name


__all__ = ["MODES", "Refusal", "Report", "compute_at_position", "replay_origins", "select",
           "shares_host_loops", "span_and_replay"]
