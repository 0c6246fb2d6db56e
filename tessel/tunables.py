"""Every limit at which tessel's analyses and generators stop, as one frozen record.

Each limit trades the time of a build (or the size of its code) against what the build makes:
past it an exact analysis gives its sound fallback (and says so, ``arith/budget.py``), a loop is
cut no further, stays a loop instead of being unrolled, a temporary goes to the heap. So a
kernel depends on them as it depends on its schedule, and they are one value, :func:`current`,
which is part of the key the driver remembers lowered code and kernels under: code made under
other limits is never handed back. Change them for a stretch of code with :func:`using`::

    with tessel.tunables.using(max_unroll_statements=4096):
        f = tessel.build(s, [A, B])

The setting is the process's (as a module constant was), so builds in other threads meanwhile
see it too. The defaults are what the test suite and ``benchmarks/`` are measured with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .errors import BuildError


@dataclass(frozen=True)
class Tunables:
    """The limits, each with why it exists; all are counts (of operations, statements, bytes
    ...), never seconds, so a build does not depend on the load of the machine."""

    # ---- budgets of the exact analyses (arith/budget.py: past one, the sound answer, aloud)
    #: isl operations one emptiness question of the lowered code may take (issue 31's strip
    #: stencil needs ~10^7 without a budget; the suite's kernels stay far below 10^5)
    emptiness_operations: int = 200_000
    #: isl operations the exact region of one stage may take before it keeps InferBound's box
    region_operations: int = 2_000_000
    #: constraints an exact region may add to its box (the suite's kernels add at most 6): each
    #: is a min or max in a loop bound, which every later pass reasons about
    region_constraints: int = 16
    #: proof attempts (a bound of a linear form against one fact) of one simplification
    proof_steps: int = 20_000
    #: proof attempts of one pass over a whole kernel: the suite's kernels take at most a few
    #: thousand; a split nested four deep over symbolic sizes took 40,000 (10 s)
    pass_proof_steps: int = 12_000
    #: min/max terms past which a bound or condition is not reasoned about further (cut on,
    #: asked of isl): each term doubles the cases an exact question splits into
    minmax_terms: int = 8

    # ---- loop partitioning (passes/loop_partition.py): each cut duplicates a loop body
    #: cuts per kernel and pass (tails, then borders: at most twice this in all); 16 left a
    #: depthwise tile computed beside its padded copy with a test in its inner loop
    max_partitions: int = 24
    #: loops specialized on a min/max term of their bounds, per kernel
    max_specializations: int = 4
    #: tails within tails whose loops are still cut at symbolic points
    max_tail_depth: int = 2

    # ---- unrolling
    #: the largest constant extent the IR unroller copies a loop for (passes/unroll.py)
    max_unroll_extent: int = 64
    #: statements one loop may become when the IR unroller copies it
    max_unrolled_stmts: int = 4096
    #: straight-line statements one unrolled loop nest of a schedule may become; past it the C
    #: compiler's time grows fast and the schedule is refused with a split proposed
    #: (schedule/unroll_limit.py)
    max_unroll_statements: int = 1024
    #: the largest split factor that refusal proposes
    max_unroll_factor: int = 64
    #: copies ``#pragma GCC unroll`` asks for at most (GCC's time grows fast with it)
    max_pragma_unroll: int = 64

    # ---- vectors (passes/vectorize.py)
    #: vector chunks of one loop unrolled; more stay a loop over chunks
    max_unrolled_chunks: int = 8
    #: outputs at least this many bytes are written around the caches (streaming stores)
    stream_min_bytes: int = 16 << 20

    # ---- memory of the C kernel (passes/memory.py)
    #: larger (or symbolic) temporaries go to the heap
    stack_limit_bytes: int = 32 * 1024
    #: a local temporary this small, touched only at constant offsets, becomes variables ...
    max_promoted_elements: int = 1024
    #: ... at most this many of them (vector registers)
    max_promoted_variables: int = 64

    # ---- the guard that keeps GCC's vectorizer off loops carrying a dependence (passes/carried.py)
    #: sums enumerated for a pair of access classes before they are asked one difference at a time
    max_sums: int = 1 << 14
    #: values tried before a pair counts as meeting (the loop is then kept from the vectorizer)
    max_steps: int = 4096
    #: residues of the outer loops' variables asked apart where an index takes one modulo a
    #: constant (a folded storage's slot); past this many, such an index keeps its loop scalar
    max_residues: int = 64

    def key(self) -> tuple:
        """The values in field order: the part of a cache key these limits make."""
        return dataclasses.astuple(self)


_CURRENT: list[Tunables] = [Tunables()]


def current() -> Tunables:
    """The limits builds use now."""
    return _CURRENT[0]


@contextmanager
def using(**changes: int) -> Iterator[Tunables]:
    """The limits ``changes`` set (by field name) for the code inside; as they were after it."""
    names = {f.name for f in dataclasses.fields(Tunables)}
    for name, value in changes.items():
        if name not in names:
            raise BuildError(f"tunables.using: no limit named {name!r}; the limits are {', '.join(sorted(names))}")
        if type(value) is not int or value < 0:
            raise BuildError(f"tunables.using: {name} must be a non-negative int, got {value!r}")
    old = _CURRENT[0]
    _CURRENT[0] = dataclasses.replace(old, **changes)
    try:
        yield _CURRENT[0]
    finally:
        _CURRENT[0] = old


__all__ = ["Tunables", "current", "using"]
