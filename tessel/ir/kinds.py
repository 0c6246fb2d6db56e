"""The IR's two vocabularies of kinds: how a loop runs and what fact an ``AttrStmt`` carries.

They sit below every node module because the statement classes, the printer and the passes
all speak them, and the printer must not depend on the node classes it prints.
"""

from __future__ import annotations

from enum import StrEnum


class LoopKind(StrEnum):
    """How a loop runs: the one vocabulary of a schedule's annotations and of the IR's loops
    (a str, so that it prints, serializes and compares as the name it has always had).
    ``TENSORIZED`` marks the loops a tensor intrinsic replaces; no ``For`` has it."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"
    TENSORIZED = "tensorized"


class AttrKey(StrEnum):
    """The facts an ``AttrStmt`` carries, each made by one step and read by the next ones (a
    user's ``pragma`` is ``PRAGMA`` plus its name, which is data)."""

    PRODUCE = "produce"  # ScheduleOps: the statements that compute ``node`` (an operation)
    DOUBLE_BUFFER_SCOPE = "double_buffer_scope"  # ScheduleOps -> storage_flatten
    BUFFER_DIM_ALIGN = "buffer_dim_align"  # ScheduleOps -> storage_flatten (storage_align)
    BUFFER_BIND_SCOPE = "buffer_bind_scope"  # an extern's buffer bound to a tensor's region
    PRAGMA_DEBUG_SKIP_REGION = "pragma_debug_skip_region"  # a region the user asked to leave out
    SMALL_SIZES = "small_sizes"  # loop_partition: the branch kept for inputs smaller than a factor
    NOT_VECTORIZED = "not_vectorized"  # vectorize: why a loop stayed scalar (a comment in the code)
    STREAM_STORE = "stream_store"  # vectorize -> the C generator: non-temporal stores
    HEAP = "heap"  # hoist_allocations -> the C generator: ``node`` allocated here (value: once | per_thread)
    REGISTERS = "registers"  # promote_registers -> the C generator: ``node`` kept in variables (value: its cells)
    PRAGMA = "pragma_"  # the prefix of a user's pragma
