"""A loop bound to a thread inside a loop bound to the same thread is that thread, not a loop.

ScheduleOps makes one ``For(kind="thread_binding")`` per bound loop of every stage, over the
thread axis's variable. Where a stage attached inside a consumer's thread loops binds its own
loops to the same threads (cooperative fetching: a shared tile copied by the consumer's
threads), the inner loop stands for the enclosing thread's value on a GPU: each thread does
its share. So the inner loop is removed and its variable becomes the enclosing one's; what
remains is one loop per thread on every path, which a GPU launch, the CUDA generator and the
simulator read directly, and which the CPU targets run serially (when that is equivalent:
``tessel.schedule.threads.cpu_refusal``).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, Visitor, substitute
from ..ir.stmt import LoopKind
from ..schedule.threads import relaxes, thread_scope


def thread_loop_key(loop: S.For) -> object:
    """Which thread a bound loop is: its tag for hardware threads, its variable for virtual ones."""
    ts = thread_scope(loop.thread_tag)
    return ("v", loop.loop_var) if ts is None or ts.virtual else loop.thread_tag


class _Merge(Mutator):
    statements_only = True

    def __init__(self) -> None:
        self.bound: dict[object, E.Var] = {}

    def visit_For(self, s: S.For):
        if s.kind != LoopKind.THREAD_BINDING or not s.thread_tag:
            return self.generic_visit(s)
        key = thread_loop_key(s)
        outer = self.bound.get(key)
        if outer is not None:  # the same thread as an enclosing loop: its value, not a loop
            body = s.body if outer is s.loop_var else substitute(s.body, {s.loop_var: outer})
            return self.visit(body)
        self.bound[key] = s.loop_var
        try:
            return self.generic_visit(s)
        finally:
            del self.bound[key]


def merge_nested_threads(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` with every thread loop nested in a loop of the same thread removed."""
    return _Merge().visit(stmt)




def serial_refusal(ctx) -> str | None:
    """Why running this schedule's thread loops one after another (the CPU targets) would not
    compute what the threads compute, or None when it would.

    Serial loops are the threads exactly when no thread reads what another wrote in storage
    they share, and storage private to a thread is not one copy for all of them. Two patterns
    break that: a stage filled *cooperatively* (its loop bound to a thread it is nested in,
    storage shared by that thread's values: each thread writes its share, all read the whole),
    and a stage private to a thread but filled outside that thread's loop (each thread has its
    own copy on a GPU; serially they would overwrite one)."""
    from ..schedule.threads import same_thread

    for st, path in ctx.paths.items():
        scope = ctx.scopes[st]
        for iv in st.leaf_iter_vars:
            thread = ctx.binds.get(iv)
            if thread is None:
                continue
            if iv.is_reduce:
                return (f"stage {st.name}'s reduction loop {iv.name} is bound to {thread.thread_tag}: a "
                        f"cross-thread reduction, where the threads combine their partial results")
            nested = any(p in ctx.binds and same_thread(ctx.binds[p], thread) for p in path)
            shared = relaxes(scope, thread)
            if nested and shared:
                return (f"stage {st.name} ({scope}) is filled cooperatively: its loop {iv.name} is bound to "
                        f"{thread.thread_tag}, the thread it runs inside, so each thread writes only its share "
                        f"and reads the others' after a barrier")
            if not nested and not shared:
                return (f"stage {st.name} ({scope}) is private to each {thread.thread_tag} thread but is filled "
                        f"by its loop {iv.name} outside that thread's loop, so every thread has its own copy")
    return None


def free_thread_vars(stmt: S.Stmt, threads) -> list[str]:
    """Names of thread variables ``stmt`` reads outside a loop bound to them (a region private to
    a thread, used before the thread's loop: one copy per thread on a GPU)."""
    v = _Loose({t.var for t in threads})
    v.visit(stmt)
    return sorted(v.found)


class _Loose(Visitor):
    def __init__(self, want: set[E.Var]) -> None:
        self.want, self.inside, self.found = want, set(), set()

    def visit_Var(self, e: E.Var) -> None:
        if e in self.want and e not in self.inside:
            self.found.add(e.name)

    def visit_For(self, s: S.For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        new = s.loop_var in self.want and s.loop_var not in self.inside
        if new:
            self.inside.add(s.loop_var)
        self.visit(s.body)
        if new:
            self.inside.discard(s.loop_var)


__all__ = ["free_thread_vars", "merge_nested_threads", "serial_refusal", "thread_loop_key"]
