"""``tvm.tir.transform``: a user's pass over tessel's lowered function (``prim_func_pass``).

A pass is a Python function ``f(func, mod, ctx) -> func`` over a ``PrimFunc`` (``func.body`` is
tessel's loop IR; ``func.with_body(stmt)`` makes the result); it runs where a
``tvm.transform.PassContext`` puts it (``tir.add_lower_pass``), or on a module when called.
tessel's own passes are not offered one by one: they run inside ``tvm.lower``/``tvm.build``.
"""

from __future__ import annotations

from collections.abc import Callable

from .._names import missing_names


class PrimFuncPass:
    """A named pass over each function of a module."""

    def __init__(self, pass_func: Callable, opt_level: int = 0, name: str | None = None):
        self.pass_func, self.opt_level = pass_func, opt_level
        self.name = name or getattr(pass_func, "__name__", "user_pass")

    def __call__(self, mod):
        """``pass(mod)``: a module with each function rewritten (TVM's ``Pass.__call__``)."""
        from .._driver import IRModule
        from ..transform import PassContext

        funcs = {k: self.pass_func(f, mod, PassContext.current()) or f for k, f in mod.functions.items()}
        return IRModule(funcs)


def prim_func_pass(pass_func: Callable | None = None, opt_level: int = 0, name: str | None = None,
                   required=None, traceable: bool = False):
    """``@tvm.tir.transform.prim_func_pass(opt_level=0)`` over ``def f(func, mod, ctx)``."""
    if pass_func is None:
        return lambda fn: PrimFuncPass(fn, opt_level, name)
    return PrimFuncPass(pass_func, opt_level, name)


__all__ = ["PrimFuncPass", "prim_func_pass"]

__getattr__ = missing_names(__name__)
