"""The error classes users catch (also ``tessel.error``, TVM's ``tvm.error``).

Every failure a user can cause is reported as a subclass of :class:`TesselError` whose message
names the stage, tensor or axis concerned and says what to do. Internal invariant failures are
:class:`InternalError`, so that a user can tell "my schedule is wrong" from "tessel is wrong".

Code written for TVM catches ``tvm.error.TVMError`` or ``RuntimeError`` (TVMError is a
RuntimeError there): :class:`TesselError` is a ``RuntimeError`` and ``TVMError`` is its other
name, so such code catches tessel's errors unchanged. The subclasses keep the Python base a
caller would expect besides (a malformed expression is also a ``TypeError``, a bad array a
``ValueError``), so tessel may refuse earlier than TVM (at the primitive, not at ``lower``)
and still land in the same ``except``.
"""

from __future__ import annotations


class TesselError(RuntimeError):
    """Base of every error tessel raises on purpose (TVM's ``TVMError``)."""


#: TVM's name for the base of its errors (``except tvm.error.TVMError``)
TVMError = TesselError


class DefinitionError(TesselError, TypeError):
    """A tensor expression is malformed (wrong index count, bad dtype, bad shape)."""


class ScheduleError(TesselError):
    """A schedule primitive was misused, or the schedule as a whole is illegal.

    ``explanation`` says in the operational model's terms what is wrong; ``fix`` is Python code
    that makes the schedule legal when one is known (else ``None``).
    """

    def __init__(self, message: str, *, explanation: str | None = None, fix: str | None = None):
        self.explanation = explanation or message
        self.fix = fix
        text = message
        if fix:
            text += f"\n  suggested fix: {fix}"
        super().__init__(text)


class DistributionError(ScheduleError):
    """A distributed schedule that owner-computes with messages before each kernel cannot run
    as asked (a halo wider than a neighbour's block, a read of a value another rank computes in
    the same kernel, an axis or reducer the ranks cannot split): the message names the stage,
    axis or tensor, gives a witness (the element, the instance reading it, the access) and what
    to change."""


class DistributedError(TesselError):
    """A distributed run failed on some rank (an error there, a message that did not come in
    time, MPI reporting a failure): raised on every rank, naming the rank and what it waited for,
    instead of leaving the others to hang."""


class BoundError(TesselError):
    """InferBound could not give a loop or a buffer a finite, well-defined range."""


class LowerError(TesselError):
    """The schedule cannot be turned into loops (e.g. an unsupported construct)."""


class BuildError(TesselError):
    """Code generation or native compilation failed."""


class GpuError(BuildError):
    """A schedule cannot become GPU kernels as it stands (work outside every bound loop, two
    launch extents of one thread axis that cannot be compared, a barrier that only some threads
    would reach): the message names the stage or buffer and says what to bind or change."""


class NoDeviceError(BuildError):
    """A CUDA kernel was called where no CUDA device (or no driver) is present: it compiled, and
    its source, PTX and resources can be inspected; run it with ``target="cuda-sim"`` here."""


class ArgumentError(TesselError, ValueError):
    """An array handed to a compiled kernel does not match what the kernel expects."""


class IndexOverflowError(ArgumentError):
    """The sizes of a call would take the kernel's narrow (int32) index arithmetic out of range.

    Index arithmetic over symbolic sizes keeps the sizes' dtype (seed 002); declaring the sizes
    int64 makes it int64 arithmetic."""


class ViewError(TesselError):
    """A view or report could not be made as asked (unknown stage or engine, Graphviz failed,
    a script given to the ``tessel`` command failed or built no schedule)."""


class InternalError(TesselError, AssertionError):
    """A broken invariant inside tessel: please report it with the program that caused it."""


class KernelRuntimeError(TesselError):
    """A kernel failed while running (an out-of-bounds access seen by the python target,
    a temporary buffer the C kernel could not allocate)."""


class TuneError(TesselError):
    """A tuning template, config space, task or tuning log is malformed (an unknown knob, a
    split of an axis that is not there, a log line that is not a record)."""


class RaceError(KernelRuntimeError):
    """Two threads of a GPU kernel touched one shared or global address with no barrier between
    them, at least one writing (found by ``target="cuda-sim"``): the result would depend on the
    order the hardware happens to run them in. ``buffer``, ``threads`` (two ``(block, thread)``
    index triples) and ``statements`` (the two accesses, as printed IR) say which."""

    def __init__(self, message: str, *, buffer: str = "", threads: tuple = (), statements: tuple = ()):
        self.buffer, self.threads, self.statements = buffer, threads, statements
        super().__init__(message)


class DivergentBarrierError(KernelRuntimeError):
    """Some threads of a GPU block reached a barrier (or a warp shuffle) that others of the same
    block (warp) did not reach, or reached another one: undefined behaviour on a GPU, refused by
    ``target="cuda-sim"``."""


class TesselWarning(UserWarning):
    """Base of tessel's warnings: something works, but not as well as asked (e.g. parallel loops
    that run on one thread because the C compiler has no OpenMP)."""

    def __str__(self) -> str:
        """The message as printable text: a name in it (a stage's, a kernel's) may hold a
        newline or a terminal escape, which must reach the terminal escaped, not obeyed."""
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in super().__str__())


class AnalysisBudgetWarning(TesselWarning):
    """An exact analysis reached its budget and gave the sound interval answer instead (see
    ``tessel.arith.budget``): the kernel is correct, its code may be less tight."""


class NotOfferedError(TesselError, AttributeError):
    """A TVM name (``tvm.relay``, ``tvm.tir.Schedule``, ``tvm.cuda`` ...) that tessel does not
    offer: the message says so and what to use instead. An AttributeError, so ``hasattr`` and
    ``getattr(m, name, default)`` behave as for any missing attribute."""


class NotOfferedModuleError(TesselError, ImportError):
    """``import tvm.relay`` / ``from tvm import relay`` of a TVM module tessel does not offer:
    an ImportError (so ``try: ... except ImportError`` still works) with the same message."""


__all__ = ["AnalysisBudgetWarning", "ArgumentError", "BoundError", "BuildError", "DefinitionError", "DistributedError", "DistributionError", "DivergentBarrierError", "GpuError",
           "IndexOverflowError", "InternalError", "KernelRuntimeError", "LowerError", "NoDeviceError", "NotOfferedError",
           "NotOfferedModuleError", "RaceError", "ScheduleError", "TuneError",
           "TVMError", "TesselError", "TesselWarning", "ViewError"]
