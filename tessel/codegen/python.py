"""The python target: the reference the C backend is checked against.

The lowered PrimFunc becomes a plain Python function with one ``for`` per loop, run on flat
views of the NumPy arrays. Every value is a NumPy scalar of the IR's dtype, so arithmetic
rounds and wraps exactly as the IR says (float32 math in float32, int8 wraps at 8 bits,
truncating division toward zero), and buffers are wrapped so that an out-of-bounds access is
an error here instead of silent corruption in C. It is slow on purpose: clarity over speed.

Vector expressions (what the vectorize pass makes of a ``vectorized`` loop) are NumPy arrays
of one element per lane, so ``ramp(b, 1, 16) * 2.0f`` is ``(b + arange(16)) * float32(2)``
and a load at a vector index reads those elements, bounds-checked like a scalar load.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import BuildError, KernelRuntimeError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import array_parts
from ..ir.checked_array import CheckedArray
from ..ir.intrinsics import EXTERN_CALLS, INTRINSICS, np_popcount
from ..ir.names import comment, python_string
from ..ir.stmt import AttrKey, LoopKind
from . import Generated
from .common import ExprWriter, ExternSig, NameTable, check_func, extern_sig, written_buffers

_DTYPES = ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")

_PREC = {E.Or: 1, E.And: 2, E.EQ: 4, E.NE: 4, E.LT: 4, E.LE: 4, E.GT: 4, E.GE: 4,
         E.Add: 5, E.Sub: 5, E.Mul: 6, E.Div: 6, E.FloorDiv: 6, E.FloorMod: 6}
_SYM = {E.Or: "or", E.And: "and", E.FloorDiv: "//", E.FloorMod: "%"}
_ATOM = 9
_SPLIT = 64  # levels of one expression printed inline; deeper parts become local functions


class _Buf(CheckedArray):
    """The python target's arrays: out-of-bounds indices refused with the kernel named."""

    __slots__ = ("kernel",)

    def __init__(self, a: np.ndarray, name: str, kernel: str):
        super().__init__(a, name)
        self.kernel = kernel

    def _oob(self, what: str, i) -> KernelRuntimeError:
        return KernelRuntimeError(
            f"kernel {self.kernel!r} {what} {self.name}[{int(i)}], outside its {self.n} elements "
            "(caught by the python target; the C target would corrupt memory here)"
        )


def _loop(t, lo, ext):
    lo = int(lo)
    return map(t, range(lo, lo + int(ext)))


def _alloc(n, t, name: str, kernel: str) -> _Buf:
    try:
        return _Buf(np.empty(max(int(n), 0), dtype=t), name, kernel)
    except (MemoryError, ValueError):
        raise KernelRuntimeError(
            f"kernel {kernel!r} could not allocate the temporary {name} of {int(n)} elements"
        ) from None


def _tdiv(a, b):
    return (a - np.fmod(a, b)) // b  # exact: a - fmod(a, b) is a multiple of b


def _min(a, b):
    return a if (a < b or a != a) else b  # a NaN operand gives NaN, as np.minimum and the C target


def _max(a, b):
    return a if (a > b or a != a) else b


def _ramp(base, stride, lanes: int):
    """``[base, base+stride, ...]`` in the dtype of ``base``, wrapping as the scalar loop would."""
    t = np.asarray(base).dtype
    if t.kind == "f":
        return base + stride * np.arange(lanes, dtype=t)
    steps = np.arange(lanes, dtype=np.int64) * int(stride) + int(base)
    return steps.astype(t)


def _bc(x, lanes: int):
    return np.full(lanes, x, dtype=np.asarray(x).dtype)


def _rsqrt(x):
    return x.dtype.type(1) / np.sqrt(x)


def _sigmoid(x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _exp10(x):
    return np.power(x.dtype.type(10), x)


def _erf(x):
    if isinstance(x, np.ndarray):
        return np.array([math.erf(float(v)) for v in x], dtype=x.dtype)
    return type(x)(math.erf(float(x)))


class _Ptr:
    """An address in the python target: element ``i`` of flat buffer ``buf`` (what a C function
    called through ctypes receives as a pointer)."""

    __slots__ = ("buf", "i")

    def __init__(self, buf: _Buf, i):
        self.buf, self.i = buf, int(i)

    @property
    def address(self) -> int:
        a = self.buf.a
        return a.ctypes.data + self.i * a.itemsize


def _array(buf: _Buf, first, shape, strides):
    """The view of ``buf`` a packed call receives: ``shape`` and ``strides`` (elements) from ``first``."""
    first, shape, strides = int(first), [int(n) for n in shape], [int(s) for s in strides]
    if all(n > 0 for n in shape):
        lo = first + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        hi = first + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
        if lo < 0 or hi >= buf.n:
            raise buf._oob("passes a view past the end of", hi if hi >= buf.n else lo)
    size = buf.a.itemsize
    return np.lib.stride_tricks.as_strided(buf.a[first:], shape, [s * size for s in strides])


def _namespace() -> dict:
    ns = {name: getattr(np, name) for name in _DTYPES}
    ns.update(np=np, inf=math.inf, nan=math.nan, True_=np.True_, False_=np.False_,
              _Buf=_Buf, _loop=_loop, _alloc=_alloc, _tdiv=_tdiv, _tmod=np.fmod, _min=_min,
              _max=_max, _rsqrt=_rsqrt, _sigmoid=_sigmoid, _exp10=_exp10,
              _erf=_erf, _vmin=np.minimum, _vmax=np.maximum, _ramp=_ramp, _bc=_bc,
              _Ptr=_Ptr, _array=_array, _popcount=np_popcount)
    return ns


_RESERVED = set(_namespace()) | set(dir(builtins)) | {"_ext"}


def _np_name(dt) -> str:
    """The NumPy scalar type of ``dt`` (of one lane, for a vector dtype)."""
    return "bool_" if dt.is_bool else str(dt.element)


class _PyGen(ExprWriter):
    def __init__(self, func: S.PrimFunc):
        self.func = func
        self.names = NameTable("python", _RESERVED)
        self.bound: set[int] = set()
        self.lines: list[str] = []
        self.externs: list[ExternSig] = []
        self.height = 0  # levels below the expression being printed (see ``expr``)
        self.pinned = False  # it holds a ``yield``: it must stay in the function that yields
        self.at = 1  # indentation of the statement being printed

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: E.PrimExpr, parent: int = 0) -> str:
        """As ExprWriter's, but no printed expression is nested more than :data:`_SPLIT`
        levels: a deeper part becomes a local function, defined just before the statement and
        called where the part was. CPython's compiler checks nesting against the process-wide
        recursion limit (which a deep worker may not raise without letting other threads'
        C recursion overflow their stacks), so a 10,000-term sum must reach it shallow. A
        function, not a temporary: the part may sit in a branch of a choice or in the scope of a
        ``Let``, and runs exactly when and where it did."""
        height, pinned = self.height, self.pinned
        self.height, self.pinned = 0, False
        text, prec = self.visit(e)
        if self.height + 1 >= _SPLIT and not self.pinned:
            name = self.names.get(object(), "part")
            self.emit(self.at, f"def {name}():")
            self.emit(self.at + 1, f"return {text}")
            text, prec, self.height = f"{name}()", _ATOM, 0
        self.height, self.pinned = max(height, self.height + 1), pinned or self.pinned
        return f"({text})" if prec < parent else text

    # ---- expression nodes ---------------------------------------------------------------------
    def visit_PrimExpr(self, e: E.PrimExpr) -> tuple[str, int]:
        raise BuildError(f"kernel {self.func.name!r}: the python target cannot generate `{e}` ({type(e).__name__})")

    def visit_Ramp(self, e: E.Ramp) -> tuple[str, int]:
        return f"_ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM

    def visit_Broadcast(self, e: E.Broadcast) -> tuple[str, int]:
        return f"_bc({self.expr(e.value)}, {e.lanes})", _ATOM

    def visit_Min(self, e: E.Min | E.Max) -> tuple[str, int]:
        if e.dtype.lanes != 1:
            fn = "_vmin" if isinstance(e, E.Min) else "_vmax"
        else:
            fn = "_min" if isinstance(e, E.Min) else "_max"
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    visit_Max = visit_Min

    def visit_Var(self, e: E.Var) -> tuple[str, int]:
        return self.var(e), _ATOM

    def visit_IntImm(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype.is_bool:
            return ("True_" if e.value else "False_"), _ATOM
        return f"{e.dtype}({e.value})", _ATOM

    def visit_FloatImm(self, e: E.FloatImm) -> tuple[str, int]:
        v = e.value
        text = repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
        return f"{e.dtype}({text})", _ATOM

    def visit_BinaryOp(self, e: E.BinaryOp) -> tuple[str, int]:
        p = _PREC[type(e)]
        sym = _SYM.get(type(e), e.symbol)
        # comparisons chain in Python: a nested comparison must keep its parentheses
        right = p + 1
        left = p + 1 if p == 4 else p
        return f"{self.expr(e.a, left)} {sym} {self.expr(e.b, right)}", p

    def visit_And(self, e: E.And | E.Or) -> tuple[str, int]:
        if e.dtype.lanes == 1:
            return self.visit_BinaryOp(e)
        fn = "np.logical_and" if isinstance(e, E.And) else "np.logical_or"
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    visit_Or = visit_And

    def visit_Not(self, e: E.Not) -> tuple[str, int]:
        return f"np.logical_not({self.expr(e.a)})", _ATOM

    def visit_Select(self, e: E.Select) -> tuple[str, int]:
        if e.dtype.lanes != 1:
            return self._where(e.condition, e.true_value, e.false_value)
        return self._ternary(e.condition, e.true_value, e.false_value)

    def visit_Cast(self, e: E.Cast) -> tuple[str, int]:
        return f"{self.expr(e.value, _ATOM)}.astype({_np_name(e.dtype)})", _ATOM

    def visit_Let(self, e: E.Let) -> tuple[str, int]:
        name, value, body = self.let_parts(e)
        return f"(({name} := {value}), {body})[1]", _ATOM

    def visit_BufferLoad(self, e: E.BufferLoad) -> tuple[str, int]:
        buf = self.names.get(e.buffer, e.buffer.name)
        if e.indices[0].dtype.lanes > 1:
            return f"{buf}.vget({self.expr(e.indices[0])})", _ATOM
        return f"{buf}[{self.expr(e.indices[0])}]", _ATOM

    def _ternary(self, c, t, f) -> tuple[str, int]:
        return f"{self.expr(t, 1)} if {self.expr(c, 1)} else {self.expr(f, 0)}", 0

    def _where(self, c, t, f) -> tuple[str, int]:
        if c.dtype.lanes == 1:  # one choice for the whole vector
            return self._ternary(c, t, f)
        return f"np.where({self.expr(c)}, {self.expr(t)}, {self.expr(f)})", _ATOM

    def visit_Div(self, e) -> tuple[str, int]:
        """Div, Mod, FloorDiv, FloorMod: NumPy's own where it means what the IR means."""
        a, b = self.expr(e.a, 6), self.expr(e.b, 7)
        if e.dtype.is_float:
            if isinstance(e, E.Div):
                return f"{a} / {b}", 6
            if isinstance(e, E.Mod):
                return f"np.fmod({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
            fn = "np.floor_divide" if isinstance(e, E.FloorDiv) else "np.remainder"  # NumPy's own
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.FloorDiv | E.FloorMod):  # NumPy integers follow Python: floor semantics
            return f"{a} {_SYM[type(e)]} {b}", 6
        fn = "_tdiv" if isinstance(e, E.Div) else "_tmod"
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    visit_Mod = visit_FloorDiv = visit_FloorMod = visit_Div

    def visit_Call(self, e: E.Call) -> tuple[str, int]:
        op, dt = e.op, e.dtype
        if op == "if_then_else":
            return self._where(*e.args) if dt.lanes != 1 else self._ternary(*e.args)
        if op == "tsl_align_gap":  # NumPy has no alignment to respect: no iterations to peel
            return f"{_np_name(dt)}(0)", _ATOM
        if op in EXTERN_CALLS:  # through the table the runtime fills (_ext), never by name
            sig = extern_sig(e)
            if sig not in self.externs:
                self.externs.append(sig)
            args = ", ".join(self.expr(a) for a in e.args[1:])
            return f"_ext[{self.externs.index(sig)}]({args})", _ATOM
        if op == "address_of":
            ld = e.args[0]
            return f"_Ptr({self.names.get(ld.buffer, ld.buffer.name)}, {self.expr(ld.indices[0])})", _ATOM
        if op == "tsl_array":
            first, _, shape, strides = array_parts(e)
            parts = [self.names.get(first.buffer, first.buffer.name), self.expr(first.indices[0]),
                     "(" + "".join(f"{self.expr(x)}, " for x in shape) + ")",
                     "(" + "".join(f"{self.expr(x)}, " for x in strides) + ")"]
            return f"_array({', '.join(parts)})", _ATOM
        if op == "prefetch":  # a hint for the caches: nothing to do here
            return "None", _ATOM
        spec = INTRINSICS[op]
        if spec.rule == "int":
            return f"{spec.python}({self.expr(e.args[0])})", _ATOM
        exact = spec.rule == "any"  # |x| and rounding: exact in every dtype, the identity on integers
        if not dt.is_float and exact and op not in ("abs", "fabs"):
            return self.visit(e.args[0])
        predicate = spec.rule == "predicate"
        # float16 math runs in float32 and rounds once, exactly like the C target
        via = "float32" if dt == "float16" and not exact else None
        args = []
        for a in e.args:
            want = via or (None if predicate else _np_name(dt))
            args.append(self.expr(a) if want is None or a.dtype == want else f"{self.expr(a, _ATOM)}.astype({want})")
        text = f"{spec.python}({', '.join(args)})"
        return (f"{text}.astype(float16)" if via else text), _ATOM

    # ---- statements ----------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, s: S.Stmt, depth: int) -> None:
        n = len(self.lines)
        self.stmt(s, depth)
        if all(line.lstrip().startswith("#") for line in self.lines[n:]):
            self.emit(depth, "pass")

    def stmt(self, s, depth: int) -> None:
        if not isinstance(s, S.Stmt):
            raise BuildError(f"kernel {self.func.name!r}: the python target cannot generate {type(s).__name__}")
        at, self.at = self.at, depth
        self.visit(s, depth)
        self.at = at

    def visit_Stmt(self, s: S.Stmt, depth: int) -> None:
        raise BuildError(f"kernel {self.func.name!r}: the python target cannot generate {type(s).__name__}")

    def visit_SeqStmt(self, s: S.SeqStmt, depth: int) -> None:
        for x in s.seq:
            self.stmt(x, depth)

    def visit_For(self, s: S.For, depth: int) -> None:
        lo, ext = self._loop_bound(s.min), self._loop_bound(s.extent)
        self.bound.add(id(s.loop_var))
        name = self.names.get(s.loop_var, s.loop_var.name)
        note = "" if s.kind == LoopKind.SERIAL else "  # " + comment(f"{s.kind} {s.thread_tag}".rstrip())
        self.emit(depth, f"for {name} in _loop({_np_name(s.loop_var.dtype)}, {lo}, {ext}):{note}")
        self.block(s.body, depth + 1)
        self.bound.discard(id(s.loop_var))

    def visit_IfThenElse(self, s: S.IfThenElse, depth: int) -> None:
        self.emit(depth, f"if {self.expr(s.condition)}:")
        self.block(s.then_case, depth + 1)
        if s.else_case is not None:
            self.emit(depth, "else:")
            self.block(s.else_case, depth + 1)

    def visit_LetStmt(self, s: S.LetStmt, depth: int) -> None:
        value = self.expr(s.value)
        self.bound.add(id(s.var))
        self.emit(depth, f"{self.names.get(s.var, s.var.name)} = {value}")
        self.stmt(s.body, depth)
        self.bound.discard(id(s.var))

    def visit_AttrStmt(self, s: S.AttrStmt, depth: int) -> None:
        if s.key == AttrKey.PRODUCE:
            self.emit(depth, f"# produce {comment(getattr(s.node, 'name', s.node))}")
        elif s.key == AttrKey.NOT_VECTORIZED:
            self.emit(depth, "# not vectorized: " + comment(str(s.value).replace("\n", " ")))
        else:
            self.emit(depth, "# " + comment(f"attr {s.key} = {s.value!s}".replace("\n", " ")))
        self.stmt(s.body, depth)

    def visit_Evaluate(self, s: S.Evaluate, depth: int) -> None:
        if not isinstance(s.value, E.IntImm | E.FloatImm):
            self.emit(depth, self.expr(s.value))

    def visit_BufferStore(self, s: S.BufferStore, depth: int) -> None:
        buf = self.names.get(s.buffer, s.buffer.name)
        if s.indices[0].dtype.lanes > 1:
            self.emit(depth, f"{buf}.vset({self.expr(s.indices[0])}, {self.expr(s.value)})")
        else:
            self.emit(depth, f"{buf}[{self.expr(s.indices[0])}] = {self.expr(s.value)}")

    def visit_Allocate(self, s: S.Allocate, depth: int) -> None:
        b = s.buffer
        size = " * ".join(f"int({self.expr(x)})" for x in b.shape) or "1"
        name = self.names.get(b, b.name)
        self.emit(depth, f"{name} = _alloc({size}, {_np_name(b.dtype)}, {python_string(b.name)}, "
                         f"{python_string(self.func.name)})")
        self.stmt(s.body, depth)

    def _loop_bound(self, e: E.PrimExpr) -> str:
        return str(e.value) if isinstance(e, E.IntImm) else self.expr(e)

    def begin(self, target: str, first: tuple[str, ...] = ()) -> list[str]:
        """The generated function's first lines, for ``target``'s generator (this one or one
        built on it), with ``first`` before the buffers and sizes; returns the buffers' names."""
        f = self.func
        params = [self.names.get(b, b.name) for b in f.params]
        for v in f.size_vars:
            self.bound.add(id(v))
        sizes = [self.names.get(v, v.name) for v in f.size_vars]
        fname = self.names.get(f, f.name)
        # no name on the first two lines, where Python would look for a coding declaration
        self.lines = [f"# generated by tessel ({target} target)", "#",
                      f"# from PrimFunc {comment(f.name)}", f"def {fname}({', '.join([*first, *params, *sizes])}):"]
        return params

    def function(self) -> str:
        f = self.func
        params = self.begin("python")
        for b, p in zip(f.params, params):
            self.emit(1, f"{p} = _Buf({p}, {python_string(b.name)}, {python_string(f.name)})")
        self.block(f.body, 1)
        return "\n".join(self.lines) + "\n"


def python_source(func: S.PrimFunc) -> str:
    """The Python source of ``func`` (what ``Kernel.source`` shows for the python target)."""
    check_func(func)
    return _PyGen(func).function()


def generate_python(func: S.PrimFunc, target=None) -> Generated:
    """The Python source of ``func`` and the globals it runs with (the runtime execs it)."""
    check_func(func)
    gen = _PyGen(func)
    source = gen.function()
    written = written_buffers(func) | set(func.outputs)
    outputs = tuple(k for k, b in enumerate(func.params) if b in written)
    return Generated("python", func.name, gen.names.get(func, func.name), source, outputs,
                     externs=tuple(gen.externs), namespace=_namespace())
