"""``tvm.transform``: ``PassContext``, through which TVM scripts add their own lowering passes.

``with tvm.transform.PassContext(config={"tir.add_lower_pass": [(phase, pass), ...]}):`` runs
each ``pass`` (a ``tvm.tir.transform.prim_func_pass``) inside every ``tvm.lower``/``tvm.build``
of the block, on tessel's lowered function: passes of phase 0 and 1 after the loop nest is laid
out over flat buffers (the end of ``pipeline.FRONT_PASSES``), later phases after the fast passes
(before the index types are fixed), in phase order. tessel's pipeline is data, so a user's pass
is one more named step of it (``lower(..., trace=True)`` shows it); code made by a pipeline
with such steps is never remembered on disk. ``opt_level`` and other config keys are accepted
and ignored (tessel's passes have no levels).
"""

from __future__ import annotations

from typing import Any

from .. import pipeline
from ..errors import ArgumentError
from ..ir import stmt as S
from ..passes.base import Pass

#: the config key TVM reads user passes from
ADD_LOWER_PASS = "tir.add_lower_pass"


class PassContext:
    """``tvm.transform.PassContext(opt_level=3, config={...})`` as a ``with`` block."""

    _stack: list[PassContext] = []

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None, instruments=None,
                 config: dict | None = None, trace=None):
        self.opt_level = opt_level
        self.config = dict(config or {})
        passes = self.config.get(ADD_LOWER_PASS, [])
        self.passes: list[tuple[int, Any]] = []
        for item in passes:
            if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], int)):
                raise ArgumentError(f"PassContext: {ADD_LOWER_PASS} takes (phase, pass) pairs, got {item!r:.80}")
            self.passes.append((item[0], item[1]))
        self._saved: tuple | None = None

    @staticmethod
    def current() -> PassContext:
        return PassContext._stack[-1] if PassContext._stack else PassContext()

    def __enter__(self) -> PassContext:
        self._saved = (pipeline.FRONT_PASSES, pipeline.FAST_PASSES)
        early = tuple(_step(p) for phase, p in sorted(self.passes, key=lambda x: x[0]) if phase <= 1)
        late = tuple(_step(p) for phase, p in sorted(self.passes, key=lambda x: x[0]) if phase > 1)
        if early:
            pipeline.FRONT_PASSES = (*pipeline.FRONT_PASSES, *early)
        if late:  # before index_dtype, the fast passes' last step
            pipeline.FAST_PASSES = (*pipeline.FAST_PASSES[:-1], *late, pipeline.FAST_PASSES[-1])
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        PassContext._stack.remove(self)
        if self._saved is not None:
            pipeline.FRONT_PASSES, pipeline.FAST_PASSES = self._saved


def _step(user: Any) -> Pass:
    """A user's ``prim_func_pass`` as a step of tessel's pipeline: it is handed the function being
    lowered (its parameters, sizes and body so far) and returns it, rewritten or not."""
    fn = getattr(user, "pass_func", None)
    if fn is None:
        raise ArgumentError(f"PassContext: {ADD_LOWER_PASS} takes passes made by tvm.tir.transform.prim_func_pass, "
                            f"got {type(user).__name__}")
    name = getattr(user, "name", "user_pass")

    def run(stmt: S.Stmt, ctx) -> S.Stmt:
        if ctx.bounded is not None:
            b = ctx.bounded
            func = S.PrimFunc(b.name, b.params, b.sizes, stmt)
        else:
            func = ctx.front.with_body(stmt)
        out = fn(func, None, PassContext.current())
        if out is None:
            return stmt
        if not isinstance(out, S.PrimFunc):
            raise ArgumentError(f"lowering pass {name!r} returned {type(out).__name__}; a prim_func_pass returns the "
                                "function it was given, or one made with f.with_body(...)")
        return out.body

    return Pass(f"user:{name}", run, (fn,))


__all__ = ["ADD_LOWER_PASS", "PassContext"]
