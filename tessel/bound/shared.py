"""The slice of a stage that shares a host stage's loops (computeAt by position, seed 003).

A stage computed at a loop of a stage that does not read it (nvFuser's "other consumers get the
same outer loops") takes its outer loop values from the host's loops: ``stage.shared_loops``
names, for each of its loops, the host loop it is. Its region in one iteration is then what its
own loops reach with those values fixed -- the slice of its domain the host iteration stands
for -- instead of what readers request (an output has none inside the loop).
"""

from __future__ import annotations

from ..arith import Analyzer, IntSet
from ..schedule import relations as R
from ..schedule.stage import Stage
from ..te.operation import Request


def intact(st: Stage) -> bool:
    """Whether the stage's shared loops are still its outer loops and it is attached at the last
    of them (a split or fuse of them since, or a TE compute_at, ends the sharing)."""
    from ..schedule.storage_point import shares_host_loops

    return hasattr(st.op, "axis") and shares_host_loops(st, once=False)


def stored_leaves(st: Stage) -> list | None:
    """The stage's shared loops that enclose its storage (``Placement.store``): all of them when
    it is stored where it is computed, those down to the store loop otherwise (none at the root);
    None when the store loop is none of them any more (a host's loops changed since)."""
    from ..schedule.storage_point import real_loop

    store = st.placement.store
    pairs = list(st.placement.shared)
    if store is None:
        return [leaf for leaf, _ in pairs]
    if not store:
        return []
    k = next((j for j, (_, loop) in enumerate(pairs) if real_loop(st.schedule, loop) is store[0]), None)
    return [leaf for leaf, _ in pairs[:k + 1]] if k is not None else None


def shared_request(st: Stage, ana: Analyzer, resolve=None, leaves=None) -> Request | None:
    """The stage's slice as a request on its first output; None unless it shares loops.

    ``resolve(loop)`` gives the variable a host loop's value is in the lowered code (a host that
    itself shares its loops takes them from its own host), or None when it has none. ``leaves``:
    the shared loops fixed (default all: the slice one iteration computes; ``stored_leaves``:
    the slice its storage holds)."""
    if not intact(st):
        return None
    if resolve is None:
        from ..schedule.storage_point import real_loop

        def resolve(loop):
            return real_loop(st.schedule, loop).var
    fixed = st.shared_loops if leaves is None else {leaf: st.shared_loops[leaf] for leaf in leaves}
    values = {leaf: resolve(loop) for leaf, loop in fixed.items()}
    if any(v is None for v in values.values()):
        return None
    rng = {iv: iv.dom for iv in st.op.root_iter_vars if iv.dom is not None}
    R.pass_down_domain(st.relations, rng, cut=R.Cut(R.bound_to_thread(st.iter_var_attrs)))
    up: dict = {}
    for leaf in st.leaf_iter_vars:
        up[leaf] = IntSet.single_point(values[leaf]) if leaf in values else IntSet.from_range(rng[leaf])
    R.pass_up_domain(st.relations, rng, up, ana)
    sets = [up[iv] if iv in up else IntSet.from_range(iv.dom) for iv in st.op.axis]
    return st.op.outputs[0], sets


def image_request(st: Stage, ana: Analyzer) -> Request:
    """A stage computed at a host loop by image (``Placement.image``): the box of its domain
    one iteration covers. The host's loops down to the attach point are fixed at their values,
    the host's others run whole; its root axes' ranges then stand for the tied axes of ``st``,
    and ``st``'s other axes run whole."""
    host, at = st.attach_stage, st.attach_ivar
    rng = {iv: iv.dom for iv in host.op.root_iter_vars if iv.dom is not None}
    R.pass_down_domain(host.relations, rng, cut=R.Cut(R.bound_to_thread(host.iter_var_attrs)))
    k = next(j for j, x in enumerate(host.leaf_iter_vars) if x is at)
    up: dict = {}
    for j, leaf in enumerate(host.leaf_iter_vars):
        up[leaf] = IntSet.single_point(leaf.var) if j <= k else IntSet.from_range(rng[leaf])
    R.pass_up_domain(host.relations, rng, up, ana)
    tied = {id(a): h for a, h in st.placement.image}
    sets = [up[tied[id(iv)]] if id(iv) in tied and tied[id(iv)] in up else IntSet.from_range(iv.dom)
            for iv in st.op.axis]
    return st.op.outputs[0], sets


def slice_only(st: Stage, readers: dict, bodies: dict, memo: dict | None = None) -> bool:
    """Whether ``st``'s slice is all its readers read: each reads it exactly (offset 0, every
    axis along one of its own loops) and is the owner of the shared loops or itself slice-only.

    Then InferBound takes the slice instead of the union of the requests: the same set, but
    written in the host's loop variables directly rather than through a chain of readers'
    regions (which over fused loops grows with every stage of the chain)."""
    from ..schedule.axis_map import read_map

    memo = {} if memo is None else memo
    if id(st) in memo:
        return memo[id(st)]
    memo[id(st)] = False
    if not intact(st):
        return False
    loops = {id(v) for v in st.shared_loops.values()}
    ok = True
    for c in readers.get(st, []):
        owner = any(id(iv) in loops for iv in c.leaf_iter_vars)
        if not owner and not slice_only(c, readers, bodies, memo):
            ok = False
            break
        amap = read_map(st, c, bodies[c.op])
        if amap.unmappable or not all(amap.exact(p) for p in st.op.axis):
            ok = False
            break
    memo[id(st)] = ok
    return ok


def identified(st: Stage, readers: dict, bodies: dict, whole=lambda host: True) -> bool:
    """Whether ``st``'s outer loops *are* its host's loops (nvFuser's loop sharing, exactly):
    its first loops are all shared, exactly, with loops of a stage at the root or of a stage that
    is itself identified (``whole`` says which owners qualify), it is attached at the last of
    them, and its readers read only its slice. Then it keeps the ranges of its whole
    domain, lowering runs only its other loops with the shared ones taken from the host (whose
    loops must run over its whole domain, ``whole``), and
    its storage is its slice's box (``ctx.boxes``): exact work, whatever the loops fused."""
    if not intact(st) or stored_leaves(st) is None:
        return False
    for host_loop in st.shared_loops.values():
        owner = st.schedule.stage_of_iter_var(host_loop)
        if owner is None or host_loop not in owner.leaf_iter_vars or not whole(owner):
            return False
    return not readers.get(st) or slice_only(st, readers, bodies)


__all__ = ["identified", "image_request", "intact", "shared_request", "slice_only", "stored_leaves"]
