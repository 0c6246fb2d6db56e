"""``tvm.lower`` and ``tvm.build``: tessel's driver under TVM's signatures.

``tvm.lower(s, args)`` returns an :class:`IRModule` holding the kernel as lowered then (later
changes to the schedule do not reach it, as in TVM); ``tvm.build`` takes that module, or a
schedule and its arguments as ``tessel.build`` does, and a TVM target (``"llvm"``,
``Target(...)``) or a tessel one. A module whose schedule has taken no step since is built
from the schedule for the target asked (its vector width, its CPU); otherwise the kernel as
lowered then (for this machine) is compiled for it.
"""

from __future__ import annotations

from .. import driver
from ..errors import DefinitionError
from ..ir import stmt as S
from ..ir.functor import Mutator
from ..schedule.schedule import Schedule
from ._names import RefusesMissing
from .runtime import Module
from .target import Target

DEFAULT_NAME = "default_function"  # what TVM names a kernel built without name=


class IRModule(RefusesMissing):
    """The lowered kernel(s) by name; ``print(mod)`` shows tessel's loop IR."""

    _tvm_name = "tvm.IRModule"

    def __init__(self, functions: dict[str, S.PrimFunc] | None = None, simple_mode: bool = False,
                 source: tuple | None = None):
        self.functions = dict(functions or {})
        self._simple = simple_mode
        self._source = source  # (schedule, args, name, its step count then), for build

    def _unchanged_source(self) -> tuple | None:
        """The schedule and arguments it was lowered from, if the schedule has taken no step since."""
        if self._source is None:
            return None
        sch, args, name, steps = self._source
        return (sch, args, name) if sch.history is not None and len(sch.history) == steps else None

    def __getitem__(self, name: str) -> S.PrimFunc:
        if name not in self.functions:
            raise KeyError(f"the module has no function {name!r}; it has {sorted(self.functions)}")
        return self.functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def script(self, *args, **kwargs) -> str:
        parts = [str(f.body if self._simple else f) for f in self.functions.values()]
        return "\n".join(parts)

    astext = script

    def show(self, *args, **kwargs) -> None:
        print(self.script())

    def __str__(self) -> str:
        return self.script()

    __repr__ = __str__


def lower(inp, args=None, name: str = "main", binds=None, simple_mode: bool = False) -> IRModule:
    """``tvm.lower(s, [A, B, C], simple_mode=True)``: the kernel as tessel's loop IR."""
    if binds:
        raise DefinitionError("tvm.lower(binds=...): tessel lays every argument out as a dense row-major buffer; "
                              "binds are not taken")
    if isinstance(inp, IRModule):
        return inp
    args = _args(args, "lower")
    func = driver.lower(inp, args, name=name)
    func = func.with_body(without_produce_marks(func.body))
    steps = len(inp.history) if inp.history is not None else -1
    return IRModule({name: func}, simple_mode, source=(inp, args, name, steps))


def build(inputs, args=None, target=None, target_host=None, runtime=None, name: str | None = None,
          binds=None) -> Module:
    """``tvm.build(s, [A, B, C], "llvm", name="f")`` or ``tvm.build(tvm.lower(s, args), target)``."""
    if binds:
        raise DefinitionError("tvm.build(binds=...): tessel lays every argument out as a dense row-major buffer; "
                              "binds are not taken")
    if isinstance(args, str | Target) and target is None:  # tvm.build(mod, "llvm")
        args, target = None, args
    tgt = _target(target)
    if isinstance(inputs, IRModule):
        if len(inputs.functions) != 1:
            raise DefinitionError(f"tvm.build: the module holds {len(inputs.functions)} functions; tessel builds "
                                  "one kernel per module")
        source = inputs._unchanged_source()
        if source is not None:
            sch, args, name_then = source
            return Module(driver.build(sch, args, target=tgt, name=name_then), tgt)
        return Module(driver.build_func(next(iter(inputs.functions.values())), tgt), tgt)
    if isinstance(inputs, S.PrimFunc):
        return Module(driver.build_func(inputs, tgt), tgt)
    if not isinstance(inputs, Schedule):
        raise DefinitionError(f"tvm.build: expected a schedule (te.create_schedule) or the module tvm.lower "
                              f"returned, got {type(inputs).__name__}")
    kernel = driver.build(inputs, _args(args, "build"), target=tgt, name=name or DEFAULT_NAME)
    return Module(kernel, tgt)


class _Unmarked(Mutator):
    def visit_AttrStmt(self, s: S.AttrStmt):
        return self.visit(s.body) if s.key == S.AttrKey.PRODUCE else self.generic_visit(s)


def without_produce_marks(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` without tessel's ``produce X`` marks (comments in the code it generates, which
    TVM's IR does not have): the statement TVM code navigates (``func.body.body``)."""
    return _Unmarked().visit(stmt)


def _args(args, what: str) -> list:
    if args is None:
        raise DefinitionError(f"tvm.{what}(s, args): pass the tensors the kernel reads and writes, e.g. [A, B, C]")
    return list(args)


def _target(target):
    """A tessel target from what TVM code passes (None: ``Target.current()`` or this machine)."""
    if target is None:
        current = Target.current()
        return current.tessel if current is not None else None
    if isinstance(target, dict):
        raise DefinitionError("tvm.build: a dict of targets is for heterogeneous builds, which tessel does not "
                              "offer; pass one target such as 'llvm'")
    return (target if isinstance(target, Target) else Target(target)).tessel
