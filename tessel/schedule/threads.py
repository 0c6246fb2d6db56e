"""Thread semantics of a schedule, as TVM TE v0.14 defines them.

A loop bound to a thread axis (``bind``) is not a loop on a GPU: every thread of the launch runs
the body once with the loop's value equal to its own index. Two facts decide what that means for
storage and bounds:

* a thread axis has a *rank*: ``blockIdx.*`` is 0, ``threadIdx.*`` and ``vthread`` are 1;
* a storage scope has a rank too: ``global`` 0, ``shared`` 1, ``warp`` 2, ``local`` 3.

Storage of rank r is shared by all the threads of every axis of rank >= r: a ``shared`` buffer is
one per block, seen by all of its threads, so InferBound sizes it for every ``threadIdx`` value
(it *relaxes* those loops) but not for other blocks; a ``local`` buffer is one per thread and
relaxes nothing; ``global`` relaxes every thread axis; ``warp`` relaxes its lanes
(``threadIdx.x``). A stage without a scope of its own gets the one its place implies: local
inside thread loops, shared inside block loops only, global elsewhere (TVM's
``InferStorageScope``).

Which thread a loop is, is the thread axis's *tag* for hardware threads (two
``te.thread_axis("threadIdx.x")`` objects are the same index) but the axis *object* for virtual
threads: ``vx`` and ``vy``, both tagged ``vthread``, are two virtual threads that may nest.
A loop bound to a thread inside a loop of another stage bound to the same thread is the same
thread, not a second loop: that is cooperative fetching (a shared tile's copy distributed over
the consumer's threads), legal, and lowered as the enclosing thread's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from .fixes import FixBuilder, Names, choose
from .violation import Violation, ViolationKind

if TYPE_CHECKING:
    from .stage import Stage

#: storage scopes by rank (TVM's StorageRank)
STORAGE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


@dataclass(frozen=True)
class ThreadScope:
    """A thread tag's rank (0 block, 1 thread) and dimension (x=0, y=1, z=2; -1 virtual)."""

    rank: int
    dim: int

    @property
    def virtual(self) -> bool:
        return self.dim < 0


def thread_scope(tag: str) -> ThreadScope | None:
    """The scope of a thread tag (TVM reads the dimension from the character after the dot);
    None for no tag, ``pipeline``, or a tag of no GPU thread (kept as an ordinary loop)."""
    if not tag or tag == "pipeline":
        return None
    if tag.startswith("vthread") or tag == "cthread":
        return ThreadScope(1, -1)
    for prefix, rank in (("blockIdx.", 0), ("threadIdx.", 1)):
        if tag.startswith(prefix) and tag[len(prefix):len(prefix) + 1] in ("x", "y", "z"):
            return ThreadScope(rank, "xyz".index(tag[len(prefix)]))
    return None  # a tag of no GPU thread: the loop is an ordinary loop everywhere


def is_virtual(thread: E.IterVar) -> bool:
    ts = thread_scope(thread.thread_tag)
    return ts is not None and ts.virtual


def same_thread(a: E.IterVar, b: E.IterVar) -> bool:
    """Whether two thread axes are one index: by tag for hardware threads, by object for
    virtual ones (TVM gives each vthread axis its own ``virtual_thread`` scope)."""
    if a is b:
        return True
    if is_virtual(a) or is_virtual(b):
        return False
    return bool(a.thread_tag) and a.thread_tag == b.thread_tag


def thread_key(thread: E.IterVar) -> object:
    """A hashable key with ``same_thread``'s identity."""
    return ("v", id(thread)) if is_virtual(thread) else thread.thread_tag


def bound_thread(st: Stage, iv: E.IterVar) -> E.IterVar | None:
    """The thread axis loop ``iv`` of ``st`` is bound to (None: not bound, or a ``pipeline``)."""
    attr = st.iter_var_attrs.get(iv)
    thread = getattr(attr, "bind_thread", None)
    if thread is None or thread_scope(thread.thread_tag) is None:
        return None
    return thread


def bind_map(stages) -> dict[E.IterVar, E.IterVar]:
    """Every bound leaf loop of every stage -> its thread axis (TVM's ``bind_map``)."""
    out: dict[E.IterVar, E.IterVar] = {}
    for st in stages:
        for iv in st.iter_var_attrs:
            thread = bound_thread(st, iv)
            if thread is not None:
                out[iv] = thread
    return out


def storage_scope(st: Stage, path: list[E.IterVar], binds: dict[E.IterVar, E.IterVar]) -> str:
    """The stage's storage scope: its own (``set_scope``, ``cache_read(..., "shared")``), else the
    one its attach path implies (TVM's InferStorageScope): local under a threadIdx/vthread loop,
    shared under block loops only, global otherwise."""
    if getattr(st, "scope_given", False) or st.scope != "global":
        return st.scope
    host = st.attach_stage
    if host is not None and any(st.op is t.op for t in getattr(host.op, "update", ())):
        return storage_scope(host, [], binds)  # a scan's update is stored in the scan's output
    rank = -1
    for iv in path:
        thread = binds.get(iv)
        ts = thread_scope(thread.thread_tag) if thread is not None else None
        if ts is not None:
            rank = max(rank, ts.rank)
    return {-1: "global", 0: "shared", 1: "local"}[rank]


def relaxes(scope: str, thread: E.IterVar) -> bool:
    """Whether storage of ``scope`` is shared by all values of ``thread`` (TVM's NeedRelax for a
    bound loop): then InferBound sizes it for every value, else for the thread's own."""
    ts = thread_scope(thread.thread_tag)
    if ts is None:
        return False
    rank = STORAGE_RANK.get(scope.split(".")[0], 0)
    if rank == STORAGE_RANK["warp"] and ts.rank == 1 and ts.dim == 0:
        return True  # warp memory is one per warp: its lanes are threadIdx.x
    return rank <= ts.rank




def env_threads(st: Stage, threads: list[E.IterVar]) -> None:
    """``env_threads``: the thread axes become the scan stage's outermost loops, each bound to
    itself, so the stages of its body attached at the scan axis run inside them."""
    from .kinds import IterVarAttr

    if st.op.body_scope() is None:
        raise ScheduleError(f"stage {st.name}: env_threads is for a scan (te.scan), whose steps run inside the "
                            f"threads; bind the loops of {st.name} with s[{st.name}].bind(loop, thread) instead")
    if st.env_thread_axes:
        raise ScheduleError(f"stage {st.name}: env_threads was already given "
                            f"({', '.join(t.thread_tag for t in st.env_thread_axes)}); give all threads in one call")
    for t in threads:
        if not isinstance(t, E.IterVar) or t.iter_type != E.IterVar.THREAD or thread_scope(t.thread_tag) is None:
            raise ScheduleError(f"stage {st.name}: env_threads needs thread axes such as "
                                f"te.thread_axis((0, 32), 'threadIdx.x'), got {t!r}")
        if t.dom is None:
            raise ScheduleError(f"stage {st.name}: env_threads: thread axis {t.thread_tag} has no declared range, "
                                f"so the launch has no size; declare it: te.thread_axis((0, n), {t.thread_tag!r})")
    st.env_thread_axes = list(threads)
    st.leaf_iter_vars[0:0] = threads
    st.all_iter_vars.extend(threads)
    for t in threads:
        st.iter_var_attrs[t] = IterVarAttr(kind=LoopKind.THREAD_BINDING, bind_thread=t)


# ---- legality: bind's rule on the loops as written (its rules on extents: tessel.check.threads) ----
def thread_violations(sch, propose: bool = True) -> list:
    """One stage binding two of its loops to one thread: the thread has one value per launch, so
    both loops would take it and most iterations would never run. (Loops of *different* stages
    bound to one thread, one inside the other, are one loop: cooperative fetching.)"""
    out = []
    for st in sch.stages:
        seen: dict[object, E.IterVar] = {}
        for iv in st.leaf_iter_vars:
            thread = bound_thread(st, iv)
            if thread is None:
                continue
            key = thread_key(thread)
            if key in seen:
                out.append(_bound_twice(sch, st, seen[key], iv, thread, propose))
            else:
                seen[key] = iv
    return out


def _bound_twice(sch, st: Stage, outer: E.IterVar, inner: E.IterVar, thread: E.IterVar, propose: bool):
    tag = thread.thread_tag
    text = (f"stage {st.name}: its loops {outer.name} and {inner.name} are both bound to {tag}, one inside "
            f"the other: a thread has one value for the whole launch, so both loops would take the same "
            f"value and most of their iterations would never run. Bind one loop that counts both (fuse them, "
            f"then bind the fused loop once), or keep one of them an ordinary loop inside each thread")
    v = Violation(ViolationKind.THREAD_BOUND_TWICE, st, text, (st,), (outer, inner))
    if not propose:
        return v
    names = Names(sch)
    leaves = st.leaf_iter_vars
    if leaves.index(inner) == leaves.index(outer) + 1:
        fix = FixBuilder(names).fuse_bind(st, outer, inner, tag)
    else:  # the loops between them move inside: the same iterations, in another order
        order = [x for x in leaves if x is not inner]
        order.insert(order.index(outer) + 1, inner)
        handles = {f"loop{k}": iv for k, iv in enumerate(order)}
        fix = FixBuilder(names).name_axes(st, handles)
        fix.lines.append(f"s[{names.stage(st)}].reorder({', '.join(handles)})")
        fix.steps.append(FixBuilder(names).reorder(st, order).steps[0])
        k = order.index(outer)
        fix.fuse_bind(st, outer, inner, tag, (f"loop{k}", f"loop{k + 1}"))
    candidates = [fix, FixBuilder(names).drop_annotation(st, inner)]
    return choose(sch, v, candidates)


__all__ = ["STORAGE_RANK", "ThreadScope", "bind_map", "bound_thread", "is_virtual", "relaxes",
           "env_threads", "same_thread", "storage_scope", "thread_key", "thread_scope",
           "thread_violations"]
