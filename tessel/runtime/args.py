"""Checking the arrays handed to a kernel, before native code touches their memory.

A C kernel trusts its pointers completely: a wrong dtype, a short array or an output that
overlaps an input silently corrupts results or memory. So every call goes through one
:class:`ArgSpec`, built once per kernel, which checks count, type, dtype, rank, shape (binding
each symbolic size from its first occurrence), contiguity, alignment, writability and
aliasing, and says in each error which parameter is wrong and what was expected. The python
target runs the very same checks, so both targets accept and reject exactly the same calls.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, BuildError
from ..ir import expr as E
from ..ir import stmt as S
from .guards import SizeGuards


@dataclass(frozen=True)
class _Dim:
    """One dimension of one parameter: a constant, a size var to bind or check, or an expression."""

    index: int
    const: int | None = None
    var: int | None = None          # position in ArgSpec.vars
    binds: bool = False             # first occurrence of ``var``: this dimension defines it
    expr: E.PrimExpr | None = None  # anything else: evaluated once all vars are bound


@dataclass(frozen=True)
class _Param:
    position: int
    name: str
    dtype: np.dtype
    dims: tuple[_Dim, ...]
    output: bool

    @property
    def label(self) -> str:
        return f"argument {self.position} ({self.name!r})"

    @property
    def shape_text(self) -> str:
        parts = []
        for d in self.dims:
            parts.append(str(d.const) if d.const is not None else str(d.expr))
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


class ArgSpec:
    """The calling contract of one kernel, precomputed so that a call costs little."""

    def __init__(self, func: S.PrimFunc, outputs: set[S.Buffer]):
        self.kernel = func.name
        self.vars: list[E.Var] = []
        var_pos: dict[int, int] = {}
        for v in func.size_vars:
            var_pos[id(v)] = len(self.vars)
            self.vars.append(v)
        bound: set[int] = set()
        params: list[_Param] = []
        for pos, buf in enumerate(func.params):
            dims = []
            for k, ext in enumerate(buf.shape):
                if isinstance(ext, E.IntImm):
                    if ext.value < 0:
                        raise BuildError(f"kernel {func.name!r}: {buf.name} has negative extent {ext.value}")
                    dims.append(_Dim(k, const=ext.value, expr=ext))
                elif isinstance(ext, E.Var):
                    if id(ext) not in var_pos:  # a size used only in shapes: still checked
                        var_pos[id(ext)] = len(self.vars)
                        self.vars.append(ext)
                    vi = var_pos[id(ext)]
                    dims.append(_Dim(k, var=vi, binds=vi not in bound, expr=ext))
                    bound.add(vi)
                else:
                    dims.append(_Dim(k, expr=ext))
            params.append(_Param(pos, buf.name, buf.dtype.numpy, tuple(dims), buf in outputs))
        for i, v in enumerate(self.vars):
            if i not in bound:
                raise BuildError(
                    f"kernel {func.name!r}: size var {v.name!r} is not a dimension of any parameter, "
                    "so its value cannot be taken from the arrays"
                )
        self.params = tuple(params)
        self.n_sizes = len(func.size_vars)
        self.has_exprs = any(d.const is None and d.var is None for p in params for d in p.dims)
        self.outputs = tuple(p.position for p in params if p.output)
        self.signature = ", ".join(f"{p.name}: {p.dtype}{p.shape_text}" for p in params)
        self._limits = [(v.dtype.min_value(), v.dtype.max_value()) for v in self.vars]
        guards = getattr(func, "guards", ())  # hand-built PrimFuncs may predate them
        self.guards = SizeGuards(guards, self.vars, func.name) if guards else None
        self.assumptions = tuple(getattr(func, "assumptions", ()))
        # the common call -- constant shapes, fresh C-contiguous arrays -- checked in one pass of
        # identity and tuple comparisons; anything unusual goes through the full checks below,
        # which also give the error messages
        self._fast = None
        if not self.vars and not self.has_exprs and self.guards is None:
            self._fast = tuple((p.dtype, tuple(d.const for d in p.dims), _c_strides(p), p.dtype.itemsize)
                               for p in params)
            self._fast_nbytes = tuple(p.dtype.itemsize * math.prod(d.const for d in p.dims) for p in params)

    def check(self, args: tuple) -> tuple[list[int], list[int]]:
        """Return the data pointers and the size-var values (in ``func.size_vars`` order), or raise."""
        if self._fast is not None and len(args) == len(self._fast):
            ptrs = self._check_fast(args)
            if ptrs is not None:
                return ptrs, []
        if len(args) != len(self.params):
            raise ArgumentError(
                f"kernel {self.kernel!r} takes {len(self.params)} arrays ({self.signature}), got {len(args)}"
            )
        values: list[int | None] = [None] * len(self.vars)
        ptrs = [self._check_array(p, a, values) for p, a in zip(self.params, args)]
        if self.has_exprs:
            self._check_exprs(args, values)
        if self.guards is not None:
            self.guards.check(values)
        if self.assumptions:
            self._check_assumptions(values)
        if self.outputs:
            self._check_aliasing(args, ptrs)
        return ptrs, values[: self.n_sizes]  # type: ignore[return-value]

    def _check_assumptions(self, values: list) -> None:
        """Refuse sizes that break an assumption the schedule was built under (``s.assume``)."""
        from ..ir.evaluate import evaluate

        env = dict(zip(self.vars, values))
        for text, cond in self.assumptions:
            if not evaluate(cond, env):
                sizes = ", ".join(f"{v.name}={x}" for v, x in zip(self.vars, values))
                raise ArgumentError(
                    f"kernel {self.kernel!r}: the call has {sizes}, which breaks the assumption {text!r} the "
                    f"kernel was built under (s.assume); call it with sizes that satisfy it, or build a kernel "
                    f"without that assumption"
                )

    def _check_fast(self, args: tuple) -> list[int] | None:
        """The pointers if every array is exactly as expected, else None (then: the full checks).

        Taking a writable buffer is the writability check (a read-only array fails it and goes
        the long way, where an input may be read-only and an output is refused)."""
        ptrs = []
        for a, (dt, shape, strides, size) in zip(args, self._fast):
            if type(a) is not np.ndarray or a.dtype is not dt or a.shape != shape or a.strides != strides:
                return None
            try:
                ptr = ctypes.addressof(ctypes.c_char.from_buffer(a))
            except (TypeError, ValueError):
                return None
            if ptr % size:
                return None
            ptrs.append(ptr)
        nbytes = self._fast_nbytes
        for i in self.outputs:  # any overlap: the full checks say which arguments share memory
            lo, hi = ptrs[i], ptrs[i] + nbytes[i]
            for j, lo2 in enumerate(ptrs):
                if j != i and lo2 < hi and lo < lo2 + nbytes[j] and lo < hi and nbytes[j]:
                    return None
        return ptrs

    def _check_array(self, p: _Param, a, values: list) -> int:
        if not isinstance(a, np.ndarray):
            raise ArgumentError(
                f"kernel {self.kernel!r}, {p.label}: expected a NumPy array of dtype {p.dtype}, "
                f"got {type(a).__name__}"
            )
        if a.dtype is not p.dtype and a.dtype != p.dtype:
            raise ArgumentError(f"kernel {self.kernel!r}, {p.label}: expected dtype {p.dtype}, got {a.dtype}")
        if a.ndim != len(p.dims):
            raise ArgumentError(
                f"kernel {self.kernel!r}, {p.label}: expected {len(p.dims)} dimension(s) with shape "
                f"{p.shape_text}, got {a.ndim} with shape {a.shape}"
            )
        shape = a.shape
        for d in p.dims:
            got = shape[d.index]
            if d.const is not None:
                if got != d.const:
                    raise ArgumentError(
                        f"kernel {self.kernel!r}, {p.label}: expected shape {p.shape_text}, got {shape} "
                        f"(dimension {d.index} must be {d.const}, not {got})"
                    )
            elif d.var is not None:
                if d.binds:
                    lo, hi = self._limits[d.var]
                    if not lo <= got <= hi:
                        v = self.vars[d.var]
                        raise ArgumentError(
                            f"kernel {self.kernel!r}, {p.label}: dimension {d.index} is {got}, which does "
                            f"not fit size var {v.name!r} of dtype {v.dtype}"
                        )
                    values[d.var] = got
                elif got != values[d.var]:
                    v = self.vars[d.var]
                    raise ArgumentError(
                        f"kernel {self.kernel!r}, {p.label}: expected shape {p.shape_text}, got {shape}; "
                        f"dimension {d.index} is {v.name!r}, which an earlier argument set to "
                        f"{values[d.var]}, but here it is {got}"
                    )
        flags = a.flags
        if not flags.c_contiguous:
            raise ArgumentError(
                f"kernel {self.kernel!r}, {p.label}: expected a C-contiguous array, got strides "
                f"{a.strides}; pass np.ascontiguousarray(...) (and copy results back for an output)"
            )
        if p.output and not flags.writeable:
            raise ArgumentError(f"kernel {self.kernel!r}, {p.label}: is an output but the array is read-only")
        ptr = data_pointer(a)
        if ptr % a.itemsize and a.size:
            raise ArgumentError(
                f"kernel {self.kernel!r}, {p.label}: data pointer {ptr:#x} is not aligned to "
                f"the {a.itemsize}-byte element size of {p.dtype}; pass a copy (np.array(x)) instead"
            )
        return ptr

    def _check_exprs(self, args: tuple, values: list) -> None:
        env = {id(v): values[i] for i, v in enumerate(self.vars)}
        for p, a in zip(self.params, args):
            for d in p.dims:
                if d.const is None and d.var is None:
                    want = eval_int(d.expr, env, self.kernel)
                    if a.shape[d.index] != want:
                        raise ArgumentError(
                            f"kernel {self.kernel!r}, {p.label}: expected shape {p.shape_text}, got "
                            f"{a.shape}; dimension {d.index} = {d.expr} must be {want}"
                        )

    def _check_aliasing(self, args: tuple, ptrs: list[int]) -> None:
        # every array is C-contiguous by now, so its bytes are one interval and the test is exact
        spans = [(lo, lo + a.nbytes) for lo, a in zip(ptrs, args)]
        for i in self.outputs:
            lo, hi = spans[i]
            if lo == hi:
                continue
            for j, (lo2, hi2) in enumerate(spans):
                if j != i and lo2 != hi2 and lo < hi2 and lo2 < hi:
                    p, q = self.params[i], self.params[j]
                    raise ArgumentError(
                        f"kernel {self.kernel!r}, {p.label}: the output shares memory with "
                        f"{q.label}; pass a separate array for {p.name!r}"
                    )


def _c_strides(p: _Param) -> tuple[int, ...]:
    """The strides of a fresh C-contiguous array of ``p``'s constant shape."""
    out, step = [], p.dtype.itemsize
    for d in reversed(p.dims):
        out.append(step)
        step *= d.const
    return tuple(reversed(out))


def data_pointer(a: np.ndarray) -> int:
    """The address of ``a``'s first element; the buffer-protocol path is ~2x faster than .ctypes."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):  # read-only or empty buffers
        return a.ctypes.data


_EVAL = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b,
    E.Min: min, E.Max: max,
    E.Div: lambda a, b: abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1),
    E.Mod: lambda a, b: a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)),
}


def eval_int(e: E.PrimExpr, env: dict[int, int], kernel: str) -> int:
    """The value of a shape expression over size vars (exact, in Python integers)."""
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        if id(e) not in env:
            raise BuildError(f"kernel {kernel!r}: shape uses {e.name!r}, which is not a size var")
        return env[id(e)]
    if isinstance(e, E.Cast):
        return eval_int(e.value, env, kernel)
    fn = _EVAL.get(type(e))
    if fn is None:
        raise BuildError(f"kernel {kernel!r}: cannot evaluate the shape expression `{e}`")
    a, b = eval_int(e.a, env, kernel), eval_int(e.b, env, kernel)  # type: ignore[attr-defined]
    if b == 0 and type(e) in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
        raise ArgumentError(f"kernel {kernel!r}: shape expression `{e}` divides by zero")
    return fn(a, b)
