"""Scalar expressions in C, one ``visit_<Node>`` method per kind of node.

Each method returns the text and its precedence, so that the parent adds parentheses only
where C needs them. A vector expression (what the vectorize pass makes of ``vectorized``
loops) goes to :class:`tessel.codegen.c_vector.VectorC`.

The C must compute what the python reference computes, so a few IR rules are spelled out
rather than left to C: arithmetic on 8/16-bit integers, bool and float16 is cast back to its
dtype after every operation (C would silently widen to int or float); signed 32/64-bit
arithmetic on data (an expression that reads a buffer) wraps, computed in the unsigned type;
division, remainder, min and max go through the helpers of :mod:`tessel.codegen.c_helpers`;
``round`` is round-half-to-even (``rint``, as NumPy's).

Index arithmetic (loop variables, sizes and constants only) is left as plain C on purpose:
there an overflow is already an out-of-bounds access, and ``-fwrapv`` or unsigned casts would
stop the C compiler from vectorizing address computations.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BuildError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import array_parts
from ..ir.dtype import DType
from ..ir.intrinsics import EXTERN_CALLS, INTRINSICS, PREDICATES, c_spelling
from .c_helpers import ALIGN_GAP, DL_CODE, SUFFIX, ctype, helper_source
from .c_vector import VectorC
from .common import ExprWriter, ExternSig, NameTable, extern_sig, unsupported_vector

_C_KEYWORDS = set("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while bool true false asm typeof main NULL NAN INFINITY errno free malloc calloc realloc
aligned_alloc posix_memalign abort exit memcpy memset size_t ptrdiff_t uintptr_t HUGE_VAL INT64_C
UINT64_C
""".split())
_LIBM = set("""
exp exp2 exp10 expm1 log log2 log10 log1p sqrt cbrt sin cos tan asin acos atan sinh cosh tanh asinh
acosh atanh erf erfc pow fmod atan2 hypot copysign fabs floor ceil round rint nearbyint trunc isnan
isinf isfinite abs labs llabs fmin fmax fma lgamma tgamma remainder signbit ldexp frexp modf
""".split())
_LIBM_F = {n + "f" for n in _LIBM}
LIBM_NAMES = frozenset(_LIBM | _LIBM_F)  # what a kernel may call from <math.h> (c.py includes it then)
_INT_TYPES = {f"{s}int{b}_t" for s in ("", "u") for b in (8, 16, 32, 64)} | {f"INT{b}_MIN" for b in (8, 16, 32, 64)}
RESERVED = _C_KEYWORDS | _LIBM | _LIBM_F | _INT_TYPES

# precedence, loosest first: ?: 1, || 2, && 3, ==/!= 4, relational 5, +- 6, */% 7, unary 8
_PREC = {E.Or: 2, E.And: 3, E.EQ: 4, E.NE: 4, E.LT: 5, E.LE: 5, E.GT: 5, E.GE: 5,
         E.Add: 6, E.Sub: 6, E.Mul: 7, E.Div: 7, E.Mod: 7}
ATOM = 9


def _narrow(dt: DType) -> bool:
    """Types C would compute in a wider type: the result must be cast back after each operation."""
    return dt.is_bool or dt.bits < 32


class CExprWriter(ExprWriter):
    """The expression half of the C generator (and the state expressions need)."""

    def __init__(self, func: S.PrimFunc):
        self.func = func
        self.names = NameTable("c", RESERVED, ("tsl_", "omp_"))
        self.symbol = self.names.get(func, func.name)
        self.helpers: dict[str, str] = {}
        self.bound: set[int] = set()
        self.uses_float16 = False
        self.uses_stream = False
        self.streaming: set[int] = set()  # buffers stored to with streaming stores, here
        self._data_memo: dict[int, tuple[bool, E.PrimExpr]] = {}
        self.vec = VectorC(self)
        self.promoted: dict[int, dict[int, tuple[str, int]]] = {}  # buffer id -> first element -> (variable, lanes)
        self.externs: list[ExternSig] = []  # the kernel's table of outside functions, by slot
        self.uses_arrays = False

    def helper(self, kind: str, dt: DType) -> str:
        """The name of helper ``kind`` on ``dt``, its source added to the kernel's on first use."""
        name = f"tsl_{kind}_{SUFFIX[str(dt)]}"
        if dt == "float16" and kind in ("floordiv", "floormod"):
            self.helper(kind, DType("float32"))  # computed in float, as NumPy's half loops do
        if name not in self.helpers:
            self.helpers[name] = helper_source(kind, name, dt)
        return name

    def visit(self, node):
        """Vector expressions to the vector printer; the rest by node type."""
        if isinstance(node, E.PrimExpr):
            if node.dtype.lanes != 1 or isinstance(node, E.Ramp | E.Broadcast):
                if node.dtype == "float16" or node.dtype.element == "float16":
                    raise unsupported_vector(self.func, node, "c")
                return self.vec.visit(node)
            if node.dtype == "float16":
                self.uses_float16 = True
        return self.handler(type(node))(self, node)

    def visit_PrimExpr(self, e: E.PrimExpr) -> tuple[str, int]:
        raise BuildError(f"kernel {self.func.name!r}: the c target cannot generate `{e}` ({type(e).__name__})")

    def visit_Var(self, e: E.Var) -> tuple[str, int]:
        return self.var(e), ATOM

    def visit_IntImm(self, e: E.IntImm) -> tuple[str, int]:
        return _int_literal(e.value, e.dtype)

    def visit_FloatImm(self, e: E.FloatImm) -> tuple[str, int]:
        return _float_literal(e.value, e.dtype)

    def visit_Min(self, e: E.Min | E.Max) -> tuple[str, int]:
        fn = self.helper("min" if isinstance(e, E.Min) else "max", e.dtype)
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", ATOM

    visit_Max = visit_Min

    def visit_CmpOp(self, e: E.CmpOp) -> tuple[str, int]:
        return f"{self.expr(e.a, 6)} {e.symbol} {self.expr(e.b, 6)}", _PREC[type(e)]

    def visit_Not(self, e: E.Not) -> tuple[str, int]:
        return f"!{self.expr(e.a, 8)}", 8

    def visit_Select(self, e: E.Select) -> tuple[str, int]:
        return self._ternary(e.condition, e.true_value, e.false_value)

    def visit_Cast(self, e: E.Cast) -> tuple[str, int]:
        return f"({ctype(e.dtype)}){self.expr(e.value, 8)}", 8

    def visit_Let(self, e: E.Let) -> tuple[str, int]:
        name, value, body = self.let_parts(e)
        return f"({{ const {ctype(e.var.dtype)} {name} = {value}; {body}; }})", ATOM

    def visit_BufferLoad(self, e: E.BufferLoad) -> tuple[str, int]:
        promoted = self.promoted_access(e.buffer, e.indices[0])
        if promoted is not None:
            return promoted, ATOM
        return f"{self.names.get(e.buffer, e.buffer.name)}[{self.expr(e.indices[0])}]", ATOM

    def promoted_access(self, buf: S.Buffer, idx: E.PrimExpr) -> str | None:
        """The variable (or vector lane) standing for ``buf[idx]`` when ``buf`` lives in registers."""
        entry = self.promoted.get(id(buf))
        if entry is None:
            return None
        if isinstance(idx, E.Ramp):
            return entry[idx.base.value][0]
        k = idx.value
        if k in entry and entry[k][1] == 1:
            return entry[k][0]
        base = max(b for b in entry if b <= k)  # the vector holding it (passes.memory.promotion_cells)
        return f"{entry[base][0]}[{k - base}]"

    # ---- arithmetic ------------------------------------------------------------------------
    def visit_BinaryOp(self, e: E.BinaryOp) -> tuple[str, int]:
        """``+ - * && ||``: signed data arithmetic wraps, narrow results are cast back."""
        p, dt = _PREC[type(e)], e.dtype
        if isinstance(e, E.Add | E.Sub | E.Mul):
            if self._wraps(e):
                return f"({ctype(dt)})({self._unsigned(e, top=True)})", 8
            if dt == "uint16" and isinstance(e, E.Mul):  # both would be promoted to int: overflow
                return f"(uint16_t)((uint32_t){self.expr(e.a, 8)} * {self.expr(e.b, 8)})", 8
        return self._wrap(f"{self.expr(e.a, p)} {e.symbol} {self.expr(e.b, p + 1)}", p, dt)

    def _wraps(self, e) -> bool:
        return (isinstance(e, E.Add | E.Sub | E.Mul) and e.dtype.is_int and e.dtype.bits >= 32
                and self._reads_data(e))

    def _unsigned(self, e, top: bool = False) -> str:
        """``e`` computed in the unsigned type of its width, where overflow is defined to wrap."""
        if self._wraps(e):
            p = _PREC[type(e)]
            a = self._unsigned(e.a) if self._wraps(e.a) else f"(uint{e.dtype.bits}_t){self.expr(e.a, 8)}"
            b = self._unsigned(e.b) if self._wraps(e.b) else f"(uint{e.dtype.bits}_t){self.expr(e.b, 8)}"
            if self._wraps(e.b) and _PREC[type(e.b)] <= p:
                b = f"({b})"
            if self._wraps(e.a) and _PREC[type(e.a)] < p:
                a = f"({a})"
            return f"{a} {e.symbol} {b}"
        return f"(uint{e.dtype.bits}_t){self.expr(e, 8)}"

    def _reads_data(self, e) -> bool:
        """Whether ``e`` depends on buffer contents (memoized: asked for every arithmetic node)."""
        key = id(e)
        if key not in self._data_memo:
            if isinstance(e, E.BufferLoad):
                found = True
            else:
                found = any(self._reads_data(x) for x in e.fields() if isinstance(x, E.PrimExpr)) or any(
                    self._reads_data(y) for x in e.fields() if isinstance(x, tuple)
                    for y in x if isinstance(y, E.PrimExpr))
            self._data_memo[key] = (found, e)
        return self._data_memo[key][0]

    def _wrap(self, text: str, prec: int, dt: DType) -> tuple[str, int]:
        if _narrow(dt) or dt == "float16":
            return f"({ctype(dt)})({text})", 8
        return text, prec

    def _ternary(self, c, t, f) -> tuple[str, int]:
        return f"{self.expr(c, 2)} ? {self.expr(t, 1)} : {self.expr(f, 1)}", 1

    def visit_Div(self, e) -> tuple[str, int]:
        """``/ % // %`` (Div, Mod, FloorDiv, FloorMod): plain C only where C means the same."""
        dt = e.dtype
        if dt.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            if isinstance(e, E.Div):
                return self._wrap(f"{self.expr(e.a, 7)} / {self.expr(e.b, 8)}", 7, dt)
            kind = {E.Mod: "fmod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}[type(e)]
            return f"{self.helper(kind, dt)}({a}, {b})", ATOM
        trunc = isinstance(e, E.Div | E.Mod)
        b_const = e.b.value if isinstance(e.b, E.IntImm) else None
        if trunc and b_const not in (None, 0, -1):  # safe divisor: plain C, which truncates
            sym = "/" if isinstance(e, E.Div) else "%"
            return self._wrap(f"{self.expr(e.a, 7)} {sym} {self.expr(e.b, 8)}", 7, dt)
        kind = {E.Div: "div", E.Mod: "mod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}[type(e)]
        return f"{self.helper(kind, dt)}({self.expr(e.a)}, {self.expr(e.b)})", ATOM

    visit_Mod = visit_FloorDiv = visit_FloorMod = visit_Div

    # ---- calls through the intrinsic table ----------------------------------------------------
    def visit_Call(self, e: E.Call) -> tuple[str, int]:
        op, dt = e.op, e.dtype
        if op == "if_then_else":
            return self._ternary(*e.args)
        if op == "tsl_align_gap":
            return self._align_gap(e)
        if op in _OUTSIDE:
            return _OUTSIDE[op](self, e), ATOM
        if INTRINSICS[op].rule == "int":  # popcount: of the pattern at the argument's width
            text = INTRINSICS[op].c.format(self.expr(e.args[0]), bits=e.args[0].dtype.bits)
            return f"({ctype(dt)}){text}", 8
        if op in PREDICATES:
            arg = self.expr(e.args[0])
            if e.args[0].dtype == "float16":
                arg = f"(float){self.expr(e.args[0], 8)}"
            return f"(bool){c_spelling(op, 64, [arg])}", 8
        if not dt.is_float:  # integer abs/floor/ceil/round/trunc
            if op in ("abs", "fabs") and not (dt.is_uint or dt.is_bool):
                return f"{self.helper('abs', dt)}({self.expr(e.args[0])})", ATOM
            return self._cast_to(e.args[0], dt), ATOM
        args = [self._cast_to(a, dt) for a in e.args]
        if dt == "float16":  # compute in float, round once, as NumPy does for float16
            args = [f"(float){a}" for a in args]
            inner = c_spelling(op, 32, args)
            return f"(_Float16)({inner})", 8
        return c_spelling(op, dt.bits, args), ATOM

    def _align_gap(self, e: E.Call) -> tuple[str, int]:
        ld, nbytes = e.args
        if not isinstance(ld, E.BufferLoad) or not isinstance(nbytes, E.IntImm):
            raise BuildError(f"kernel {self.func.name!r}: tsl_align_gap takes a load and a constant, got `{e}`")
        self.helpers.setdefault("tsl_align_gap", ALIGN_GAP)
        buf = self.names.get(ld.buffer, ld.buffer.name)
        elem = max(ld.buffer.dtype.bits // 8, 1)
        text = f"tsl_align_gap({buf} + {self.expr(ld.indices[0], 6)}, {nbytes.value}, {elem})"
        return f"({ctype(e.dtype)}){text}", 8

    # ---- addresses and calls of outside functions --------------------------------------------
    def address(self, load: E.BufferLoad) -> str:
        """The address of a load's element (its buffer may be const: the callee's mask says)."""
        return f"(void*)({self.names.get(load.buffer, load.buffer.name)} + {self.expr(load.indices[0], 6)})"

    def _address_of(self, e: E.Call) -> str:
        return self.address(e.args[0])

    def _array(self, e: E.Call) -> str:
        """A DLTensor for the view (a compound literal, alive until the end of the block)."""
        first, _, shape, strides = array_parts(e)
        self.uses_arrays = True
        dt = first.buffer.dtype
        bits = 8 if dt.is_bool else dt.bits

        def ints(xs) -> str:
            return f"(int64_t[]){{{', '.join(self.expr(x) for x in xs)}}}" if xs else "NULL"

        return (f"&(tsl_dltensor){{{self.address(first)}, {{1, 0}}, {len(shape)}, {{{DL_CODE[dt.code]}, {bits}, 1}}, "
                f"{ints(shape)}, {ints(strides)}, 0}}")

    def slot(self, call: E.Call) -> int:
        sig = extern_sig(call)
        if sig not in self.externs:
            self.externs.append(sig)
        return self.externs.index(sig)

    def _extern(self, e: E.Call) -> str:
        """``((ret (*)(args))tsl_funcs[k])(...)``: through the table, never by the user's name."""
        sig = self.externs[self.slot(e)] if e.op != "call_packed" else None
        if sig is None:
            return self._packed(e)
        ptype = f"{ctype(e.dtype)} (*)({', '.join(ctype(a.dtype) for a in e.args[1:]) or 'void'})"
        return f"(({ptype})tsl_funcs[{self.slot(e)}])({', '.join(self.expr(a) for a in e.args[1:])})"

    def _packed(self, e: E.Call) -> str:
        vals, codes = [], []
        for a in e.args[1:]:
            if isinstance(a, E.Call) and a.op == "tsl_array":
                vals.append(f"{{.v_handle = {self.expr(a)}}}")
                codes.append("7")
            elif a.dtype.is_handle:
                vals.append(f"{{.v_handle = {self.expr(a)}}}")
                codes.append("3")
            elif a.dtype.is_float:
                vals.append(f"{{.v_float64 = (double){self.expr(a, 8)}}}")
                codes.append("2")
            else:
                vals.append(f"{{.v_int64 = (int64_t){self.expr(a, 8)}}}")
                codes.append("0")
        fn = f"((tsl_packed_fn)tsl_funcs[{self.slot(e)}])"
        if not vals:
            return f"{fn}(NULL, NULL, 0)"
        return f"{fn}((tsl_value[]){{{', '.join(vals)}}}, (int32_t[]){{{', '.join(codes)}}}, {len(vals)})"

    def _prefetch(self, e: E.Call) -> str:
        return INTRINSICS["prefetch"].c.format(self.expr(e.args[0]))

    def _cast_to(self, a: E.PrimExpr, dt: DType) -> str:
        if a.dtype == dt:
            return self.expr(a, ATOM)
        return f"(({ctype(dt)}){self.expr(a, 8)})"


_OUTSIDE = {"address_of": CExprWriter._address_of, "tsl_array": CExprWriter._array, "prefetch": CExprWriter._prefetch,
            **{op: CExprWriter._extern for op in EXTERN_CALLS}}


def _int_literal(v: int, dt: DType) -> tuple[str, int]:
    if dt.is_bool:
        return ("true" if v else "false"), ATOM
    if dt == "int32":
        if v == -(2**31):
            return "(-2147483647 - 1)", ATOM
        return str(v), (ATOM if v >= 0 else 8)
    if dt == "int64":
        if v == -(2**63):
            return "INT64_MIN", ATOM
        return (f"INT64_C({v})", ATOM) if v >= 0 else (f"-INT64_C({-v})", 8)
    if dt == "uint32":
        return f"{v}u", ATOM
    if dt == "uint64":
        return f"UINT64_C({v})", ATOM
    return f"({ctype(dt)}){v}", 8


def _float_literal(v: float, dt: DType) -> tuple[str, int]:
    if math.isnan(v):
        text = "NAN" if dt != "float64" else "(double)NAN"
    elif math.isinf(v):
        text = ("" if v > 0 else "-") + ("INFINITY" if dt != "float64" else "HUGE_VAL")
    elif dt == "float64":
        text = repr(v)
    else:  # round to the dtype first, so C and NumPy start from the very same value
        # float32: NumPy's shortest repr parses back to the same float32; float16: the exact value
        text = (str(np.float32(v)) if dt == "float32" else repr(float(np.float16(v)))) + "f"
    if dt == "float16":
        return f"(_Float16){text}", 8
    return text, (8 if text.startswith("-") else ATOM)
