"""Which spatial axes of a scan are fixed points (TVM's ScanFixPointAnalysis).

Spatial axis ``k`` of a scan's state is a fixed point when element ``i`` of step ``t`` is
computed only from element ``i`` (along ``k``) of the steps before: then the scan may run that
axis outside its time loop, each ``i`` an independent recurrence. It is decided on the body's
index expressions alone, as TVM does:

* *exact reach*: follow each state dimension forward through the body. A read ``S[..., v, ...]``
  whose index along the dimension is exactly an axis ``v`` of the reading stage carries the
  dimension to that axis; a read at any other index (``S[t - 1, 10]``, ``S[t - 1, i + 1]``)
  fails it; an axis reached from two different state dimensions fails both. The axis is a
  candidate when the update's dimension ``k`` is reached from the state's dimension ``k`` alone.
* *no interference*: from the update's dimension, walk back through every index that mentions
  an axis (not only the exact ones); meeting a state dimension other than ``k`` fails it.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import collect, free_vars
from .operation import Operation, post_dfs_order
from .tensor import ComputeOp, Tensor

Key = tuple[Operation, int, int]  # (operation, output, dimension)


def _key(t: Tensor, dim: int) -> Key:
    return (t.op, t.value_index, dim)


def _spatial_axes(scan) -> list[tuple[E.IterVar, ...]]:
    """The spatial axes of each state, in order (dimension 1 on)."""
    return [scan.spatial_of(i) for i in range(len(scan.update))]


def _loads(op: ComputeOp) -> list[E.ProducerLoad]:
    return [ld for b in op.body for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]


def _exact_reach(scan, body: list[Operation]) -> tuple[dict[Key, E.IterVar], set[int]]:
    """Each dimension reached exactly from one spatial axis, and the ids of the axes that fail."""
    reach: dict[Key, E.IterVar] = {}
    failed: set[int] = set()
    for state, axes in zip(scan.state_placeholder, _spatial_axes(scan)):
        for k, iv in enumerate(axes, start=1):
            reach[_key(state, k)] = iv

    def merge(dst: Key, src: Key) -> None:
        if src not in reach:
            return
        if dst not in reach:
            reach[dst] = reach[src]
        elif reach[dst] is not reach[src]:
            failed.update((id(reach[dst]), id(reach[src])))

    for op in body:
        if not isinstance(op, ComputeOp):
            continue
        where = {iv.var: d for d, iv in enumerate(op.axis)}
        for ld in _loads(op):
            for d, idx in enumerate(ld.indices):
                src = _key(ld.producer, d)
                if isinstance(idx, E.Var) and idx in where:
                    for out in op.outputs:
                        merge(_key(out, where[idx]), src)
                elif src in reach:
                    failed.add(id(reach[src]))
    return reach, failed


def _reads_other_state(scan, body: list[Operation], start: Key, own: Key) -> bool:
    """Whether walking back from ``start`` through any index that mentions an axis meets a
    state dimension other than ``own``."""
    ops = {id(op) for op in body}
    states = {_key(s, k) for s in scan.state_placeholder for k in range(len(s.shape))}
    graph: dict[Key, list[Key]] = {}
    for op in body:
        if not isinstance(op, ComputeOp):
            continue
        where = {iv.var: d for d, iv in enumerate(op.axis)}
        for ld in _loads(op):
            if id(ld.producer.op) not in ops and _key(ld.producer, 0) not in states:
                continue
            for d, idx in enumerate(ld.indices):
                for v in free_vars(idx):
                    if v in where:
                        for out in op.outputs:
                            graph.setdefault(_key(out, where[v]), []).append(_key(ld.producer, d))
    seen, stack = {start}, [start]
    while stack:
        k = stack.pop()
        if k != own and k in states:
            return True
        for nxt in graph.get(k, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def fixed_point_axes(scan) -> dict[E.IterVar, bool]:
    """For each spatial axis of ``scan`` (a ``ScanOp``), whether it is a fixed point."""
    body = post_dfs_order(scan.body_ops())  # producers first: reach flows from the states forward
    body = [op for op in body if any(op is b for b in scan.body_ops())]
    reach, failed = _exact_reach(scan, body)
    out: dict[E.IterVar, bool] = {}
    for state, update, axes in zip(scan.state_placeholder, scan.update, _spatial_axes(scan)):
        for k, iv in enumerate(axes, start=1):
            key = _key(update, k)
            exact = id(iv) not in failed and reach.get(key) is iv
            out[iv] = exact and not _reads_other_state(scan, body, key, _key(state, k))
    return out


__all__ = ["fixed_point_axes"]
