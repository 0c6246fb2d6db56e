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
from ..schedule.stage import SCOPE, Stage
from ..te.operation import Request


def shared_request(st: Stage, ana: Analyzer) -> Request | None:
    """The stage's slice as a request on its first output; None unless it shares loops."""
    if st.attach_type != SCOPE or not st.shared_loops or not hasattr(st.op, "axis"):
        return None
    rng = {iv: iv.dom for iv in st.op.root_iter_vars if iv.dom is not None}
    R.pass_down_domain(st.relations, rng, cut=R.Cut(R.bound_to_thread(st.iter_var_attrs)))
    up: dict = {}
    for leaf in st.leaf_iter_vars:
        host = st.shared_loops.get(leaf)
        up[leaf] = IntSet.single_point(host.var) if host is not None else IntSet.from_range(rng[leaf])
    R.pass_up_domain(st.relations, rng, up, ana)
    sets = [up[iv] if iv in up else IntSet.from_range(iv.dom) for iv in st.op.axis]
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
    if st.attach_type != SCOPE or not st.shared_loops or not hasattr(st.op, "axis"):
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


__all__ = ["shared_request", "slice_only"]
