"""The c target: readable C (GNU C11: vector extensions, OpenMP pragmas) from a lowered PrimFunc.

The exported function is ``int32_t <name>(T* restrict buf, ..., int64_t size, ...)``: buffers in
parameter order (``const`` when the kernel never writes them), then the size vars, then, for a
kernel with parallel loops, ``int32_t tsl_num_threads`` (0: OpenMP's default). It returns 0, or
nonzero when a heap temporary could not be allocated, so that failure becomes a Python
exception instead of a crash.

Vector expressions (what the vectorize pass makes of ``vectorized`` loops) are written by
:mod:`tessel.codegen.c_vector`. Temporaries: a small local one touched only at constant
offsets becomes plain variables (registers); others are 64-byte aligned arrays, on the stack
up to :data:`STACK_LIMIT_BYTES`, else on the heap, allocated once per call (or once per thread
inside a parallel loop) rather than once per iteration of the loops around them.

The C must compute what the python reference computes, so a few IR rules are spelled out
rather than left to C: arithmetic on 8/16-bit integers, bool and float16 is cast back to its
dtype after every operation (C would silently widen to int or float); signed 32/64-bit
arithmetic on data (an expression that reads a buffer) wraps, computed in the unsigned type;
integer division and remainder by zero give 0 and never trap; floordiv/floormod round toward
minus infinity through small helpers (on floats as NumPy's floor_divide/remainder); min/max
of a NaN is NaN (NumPy's minimum/maximum); ``round`` is round-half-to-even (``rint``, as NumPy's).

Index arithmetic (loop variables, sizes and constants only) is left as plain C on purpose:
there an overflow is already an out-of-bounds access, and ``-fwrapv`` or unsigned casts would
stop the C compiler from vectorizing address computations.
"""

from __future__ import annotations

import math

import numpy as np

from ..arith import Analyzer
from ..errors import BuildError
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.dtype import DType
from ..ir.functor import Visitor, collect, free_vars
from ..ir.intrinsics import PREDICATES, c_spelling
from ..ir.names import comment
from . import Generated
from .c_vector import VectorC
from .common import ExprWriter, NameTable, check_func, unsupported_vector, written_buffers

CTYPE = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "_Float16", "float32": "float", "float64": "double",
}
_SUFFIX = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
           "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32",
           "float64": "f64"}
STACK_LIMIT_BYTES = 32 * 1024  # larger (or symbolic) temporaries go to the heap
MAX_PROMOTED_ELEMENTS = 1024  # a local temporary this small, touched only at constant offsets,
MAX_PROMOTED_VARIABLES = 64   # becomes at most this many variables (vector registers)
MAX_PRAGMA_UNROLL = 64  # `#pragma GCC unroll` asks for at most this many copies (GCC's time grows fast)

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
_INT_TYPES = {f"{s}int{b}_t" for s in ("", "u") for b in (8, 16, 32, 64)} | {f"INT{b}_MIN" for b in (8, 16, 32, 64)}
_RESERVED = _C_KEYWORDS | _LIBM | _LIBM_F | _INT_TYPES

# precedence, loosest first: ?: 1, || 2, && 3, ==/!= 4, relational 5, +- 6, */% 7, unary 8
_PREC = {E.Or: 2, E.And: 3, E.EQ: 4, E.NE: 4, E.LT: 5, E.LE: 5, E.GT: 5, E.GE: 5,
         E.Add: 6, E.Sub: 6, E.Mul: 7, E.Div: 7, E.Mod: 7}
_ATOM = 9


def ctype(dt: DType) -> str:
    if dt.lanes != 1:
        raise BuildError(f"the c target has no type for vector dtype {dt} yet")
    return CTYPE[str(dt)]


def _narrow(dt: DType) -> bool:
    """Types C would compute in a wider type: the result must be cast back after each operation."""
    return dt.is_bool or dt.bits < 32


def _math_fn(name: str, dt: DType) -> str:
    return name if dt.bits == 64 else name + "f"


class _CGen(ExprWriter):
    def __init__(self, func: S.PrimFunc):
        self.func = func
        self.names = NameTable("c", _RESERVED, ("tsl_", "omp_"))
        self.symbol = self.names.get(func, func.name)
        self.helpers: dict[str, str] = {}
        self.bound: set[int] = set()
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[set[str]] = [set()]
        self.has_parallel = False
        self.uses_heap = False
        self.uses_float16 = False
        self._data_memo: dict[int, tuple[bool, E.PrimExpr]] = {}
        self.vec = VectorC(self)
        self.streaming: set[int] = set()  # buffers stored to with streaming stores, here
        self.uses_stream = False
        self.promoted: dict[int, tuple[list[str], int]] = {}  # buffer id -> (variables, lanes per variable)
        self.promoted_names: dict[int, list[str]] = {}

    # ---- helpers emitted on demand -------------------------------------------------------
    def helper(self, kind: str, dt: DType) -> str:
        name = f"tsl_{kind}_{_SUFFIX[str(dt)]}"
        if dt == "float16" and kind in ("floordiv", "floormod"):
            self.helper(kind, DType("float32"))  # computed in float, as NumPy's half loops do
        if name not in self.helpers:
            self.helpers[name] = _helper_source(kind, name, dt)
        return name

    # ---- expressions ---------------------------------------------------------------------
    def _expr(self, e) -> tuple[str, int]:
        if e.dtype.lanes != 1 or isinstance(e, E.Ramp | E.Broadcast):
            if e.dtype == "float16" or e.dtype.element == "float16":
                raise unsupported_vector(self.func, e, "c")
            return self.vec.expr(e)
        if e.dtype == "float16":
            self.uses_float16 = True
        if isinstance(e, E.Var):
            return self.var(e), _ATOM
        if isinstance(e, E.IntImm):
            return _int_literal(e.value, e.dtype)
        if isinstance(e, E.FloatImm):
            return _float_literal(e.value, e.dtype)
        if isinstance(e, E.Min | E.Max):
            fn = self.helper("min" if isinstance(e, E.Min) else "max", e.dtype)
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.Div | E.Mod | E.FloorDiv | E.FloorMod):
            return self._division(e)
        if isinstance(e, E.CmpOp):
            p = _PREC[type(e)]
            return f"{self.expr(e.a, 6)} {e.symbol} {self.expr(e.b, 6)}", p
        if isinstance(e, E.BinaryOp):
            return self._arith(e)
        if isinstance(e, E.Not):
            return f"!{self.expr(e.a, 8)}", 8
        if isinstance(e, E.Select):
            return self._ternary(e.condition, e.true_value, e.false_value)
        if isinstance(e, E.Cast):
            return f"({ctype(e.dtype)}){self.expr(e.value, 8)}", 8
        if isinstance(e, E.Call):
            return self._call(e)
        if isinstance(e, E.Let):
            value = self.expr(e.value)
            self.bound.add(id(e.var))
            name = self.names.get(e.var, e.var.name)
            body = self.expr(e.body)
            self.bound.discard(id(e.var))
            return f"({{ const {ctype(e.var.dtype)} {name} = {value}; {body}; }})", _ATOM
        if isinstance(e, E.BufferLoad):
            promoted = self.promoted_access(e.buffer, e.indices[0])
            if promoted is not None:
                return promoted, _ATOM
            return f"{self.names.get(e.buffer, e.buffer.name)}[{self.expr(e.indices[0])}]", _ATOM
        raise BuildError(f"kernel {self.func.name!r}: the c target cannot generate `{e}` ({type(e).__name__})")

    def promoted_access(self, buf: S.Buffer, idx: E.PrimExpr) -> str | None:
        """The variable (or vector lane) standing for ``buf[idx]`` when ``buf`` lives in registers."""
        entry = self.promoted.get(id(buf))
        if entry is None:
            return None
        cells, lanes = entry
        if isinstance(idx, E.Ramp):
            return cells[idx.base.value // lanes]
        k = idx.value
        return cells[k] if lanes == 1 else f"{cells[k // lanes]}[{k % lanes}]"

    def _arith(self, e: E.BinaryOp) -> tuple[str, int]:
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

    def _division(self, e) -> tuple[str, int]:
        dt = e.dtype
        if dt.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            if isinstance(e, E.Div):
                return self._wrap(f"{self.expr(e.a, 7)} / {self.expr(e.b, 8)}", 7, dt)
            kind = {E.Mod: "fmod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}[type(e)]
            return f"{self.helper(kind, dt)}({a}, {b})", _ATOM
        trunc = isinstance(e, E.Div | E.Mod)
        b_const = e.b.value if isinstance(e.b, E.IntImm) else None
        if trunc and b_const not in (None, 0, -1):  # safe divisor: plain C, which truncates
            sym = "/" if isinstance(e, E.Div) else "%"
            return self._wrap(f"{self.expr(e.a, 7)} {sym} {self.expr(e.b, 8)}", 7, dt)
        kind = {E.Div: "div", E.Mod: "mod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}[type(e)]
        return f"{self.helper(kind, dt)}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM

    def _call(self, e: E.Call) -> tuple[str, int]:
        op, dt = e.op, e.dtype
        if op == "if_then_else":
            return self._ternary(*e.args)
        if op == "tsl_align_gap":
            return self._align_gap(e)
        if op in PREDICATES:
            arg = self.expr(e.args[0])
            if e.args[0].dtype == "float16":
                arg = f"(float){self.expr(e.args[0], 8)}"
            return f"(bool){c_spelling(op, 64, [arg])}", 8
        if not dt.is_float:  # integer abs/floor/ceil/round/trunc
            if op in ("abs", "fabs") and not (dt.is_uint or dt.is_bool):
                return f"{self.helper('abs', dt)}({self.expr(e.args[0])})", _ATOM
            return self._cast_to(e.args[0], dt), _ATOM
        args = [self._cast_to(a, dt) for a in e.args]
        if dt == "float16":  # compute in float, round once, as NumPy does for float16
            args = [f"(float){a}" for a in args]
            inner = c_spelling(op, 32, args)
            return f"(_Float16)({inner})", 8
        return c_spelling(op, dt.bits, args), _ATOM

    def _align_gap(self, e: E.Call) -> tuple[str, int]:
        ld, nbytes = e.args
        if not isinstance(ld, E.BufferLoad) or not isinstance(nbytes, E.IntImm):
            raise BuildError(f"kernel {self.func.name!r}: tsl_align_gap takes a load and a constant, got `{e}`")
        if "tsl_align_gap" not in self.helpers:
            self.helpers["tsl_align_gap"] = (
                "static inline int64_t tsl_align_gap(const void* p, int64_t nbytes, int64_t elem) {\n"
                "  const uintptr_t a = (uintptr_t)p;\n"
                "  if (a % (uintptr_t)elem) return 0;  /* never aligned: no point peeling */\n"
                "  return (int64_t)(((uintptr_t)nbytes - a % (uintptr_t)nbytes) % (uintptr_t)nbytes) / elem;\n"
                "}")
        buf = self.names.get(ld.buffer, ld.buffer.name)
        elem = max(ld.buffer.dtype.bits // 8, 1)
        text = f"tsl_align_gap({buf} + {self.expr(ld.indices[0], 6)}, {nbytes.value}, {elem})"
        return f"({ctype(e.dtype)}){text}", 8

    def _cast_to(self, a: E.PrimExpr, dt: DType) -> str:
        if a.dtype == dt:
            return self.expr(a, _ATOM)
        return f"(({ctype(dt)}){self.expr(a, 8)})"

    # ---- statements ----------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def open(self, head: str) -> None:
        self.emit(f"{head} {{" if head else "{")
        self.depth += 1
        self.scopes.append(set())

    def close(self, tail: str = "}") -> None:
        self.depth -= 1
        self.scopes.pop()
        self.emit(tail)

    def stmt(self, s) -> None:
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, S.For):
            self._for(s)
        elif isinstance(s, S.IfThenElse):
            self.open(f"if ({self.expr(s.condition)})")
            self.stmt(s.then_case)
            if s.else_case is not None:
                self.depth -= 1
                self.scopes.pop()
                self.open("} else")
                self.stmt(s.else_case)
            self.close()
        elif isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            self.bound.add(id(s.var))
            name = self.names.get(s.var, s.var.name)
            # the same variable bound twice in one block, or temporaries allocated in its body
            fresh_scope = name in self.scopes[-1] or id(s) in self.hoist_into
            if fresh_scope:
                self.open("")
            self.scopes[-1].add(name)
            t = self.vec.vtype(s.var.dtype) if s.var.dtype.lanes > 1 else ctype(s.var.dtype)
            self.emit(f"const {t} {name} = {value};")
            self._body_with_hoisted(s, s.body)
            if fresh_scope:
                self.close()
            self.bound.discard(id(s.var))
        elif isinstance(s, S.AttrStmt):
            if s.key == "produce":
                self.emit(f"// produce {comment(getattr(s.node, 'name', s.node))}")
            elif s.key == "small_sizes":
                self.emit(f"// {comment(s.node)} < {comment(s.value)}: the loop nest as scheduled, unspecialised")
            elif s.key == "not_vectorized":
                self.emit("// not vectorized: " + comment(str(s.value).replace("\n", " ")))
            elif s.key == "stream_store":  # vectors aligned by the peeled loop before this one
                self.emit(f"// streaming stores to {comment(s.node.name)} (past the caches)")
                self.uses_stream = True
                self.streaming.add(id(s.node))
                self.stmt(s.body)
                self.streaming.discard(id(s.node))
                return
            else:
                self.emit("// " + comment(f"attr {s.key} = {s.value!s}".replace("\n", " ")))
            self.stmt(s.body)
        elif isinstance(s, S.Evaluate):
            if not isinstance(s.value, E.IntImm | E.FloatImm):
                self.emit(f"(void)({self.expr(s.value)});")
        elif isinstance(s, S.BufferStore):
            idx = s.indices[0]
            if idx.dtype.lanes > 1:
                self.emit(self.vec.store(s.buffer, idx, s.value))
            else:
                buf = self.promoted_access(s.buffer, idx) or f"{self.names.get(s.buffer, s.buffer.name)}[{self.expr(idx)}]"
                self.emit(f"{buf} = {self.expr(s.value)};")
        elif isinstance(s, S.Allocate):
            self._allocate(s)
        else:
            raise BuildError(f"kernel {self.func.name!r}: the c target cannot generate {type(s).__name__}")

    def _loop_end(self, s: S.For) -> str:
        """``min + extent``, simplified when that is shorter: a tail loop's bounds are written
        as what came before it plus what remains, and the two halves usually cancel."""
        plain = f"{self.expr(s.min, 6)} + {self.expr(s.extent, 6)}"
        folded = self.expr(Analyzer().simplify(O.add(s.min, s.extent)), 6)
        return folded if len(folded) < len(plain) else plain

    def _for(self, s: S.For) -> None:
        v = s.loop_var
        lo = self.expr(s.min)
        ext = self.expr(s.extent, 6)
        self.bound.add(id(v))
        name = self.names.get(v, v.name)
        end = ext if _is_zero(s.min) else self._loop_end(s)
        private: list[str] = []
        region = False
        streams = s.kind == "parallel" and bool(
            collect(s.body, lambda n: isinstance(n, S.AttrStmt) and n.key == "stream_store"))
        if s.kind == "parallel":
            self.has_parallel = True
            if self.hoist_to.get(id(s)) or streams:  # a parallel region: per-thread setup and teardown
                region = True
                self.emit("#pragma omp parallel num_threads(tsl_nt)")
                self.open("")
                private = self._open_hoisted(id(s))
                if private:  # each thread allocates its temporaries once
                    ok = " && ".join(f"{n} != NULL" for n in private)
                    self.open(f"if (!({ok}))")
                    self.emit("#pragma omp atomic write")
                    self.emit("tsl_status = 1;")
                    self.close()
                self.emit("#pragma omp for schedule(static)")
            else:
                self.emit("#pragma omp parallel for num_threads(tsl_nt) schedule(static)")
        elif s.kind == "unrolled" and isinstance(s.extent, E.IntImm) and s.extent.value > 0:
            self.emit(f"#pragma GCC unroll {min(s.extent.value, MAX_PRAGMA_UNROLL)}")
        elif s.kind == "vectorized":  # the vectorize pass turns these into vector code; left only in hand-built IR
            self.emit("#pragma GCC ivdep")
        elif s.kind == "thread_binding":  # iterations are independent: a CPU runs them in turn
            self.emit(f"// bound to {comment(s.thread_tag or 'a thread axis')}: runs serially on the CPU")
        self.open(f"for ({ctype(v.dtype)} {name} = {lo}; {name} < {end}; ++{name})")
        if private:
            self.open(f"if ({' && '.join(f'{n} != NULL' for n in private)})")
            self._body_with_hoisted(s, s.body)
            self.close()
        else:
            self._body_with_hoisted(s, s.body)
        self.close()
        self.bound.discard(id(v))
        if region:
            if streams:  # streaming stores are weakly ordered: drain them before the threads join
                self.emit("tsl_sfence();")
            for n in private:
                self.emit(f"free({n});")
            self.close()

    def _allocate(self, s: S.Allocate) -> None:
        b = s.buffer
        t = ctype(b.dtype)
        if b.dtype == "float16":
            self.uses_float16 = True
        name = self.names.get(b, b.name)
        dims = list(b.shape)
        const = all(isinstance(x, E.IntImm) for x in dims)
        count = math.prod(x.value for x in dims) if const else None
        if id(s) in self.hoisted:  # allocated once, further out (see _plan_hoisting)
            self.stmt(s.body)
            return
        if count is not None and self._promote(s, count):
            return
        self.open("")
        if not _on_heap(b):
            self.emit(f"{t} {name}[{max(count, 1)}] __attribute__((aligned(64)));  "
                      f"// {comment(b.name)}, scope {comment(b.scope)}")
            self.stmt(s.body)
        else:
            self.uses_heap = True
            size = str(count) if count is not None else " * ".join(f"(int64_t){self.expr(x, 8)}" for x in dims)
            self.emit(f"{t}* restrict {name} = ({t}*)tsl_alloc(({size}) * (int64_t)sizeof({t}));  // {comment(b.name)}")
            self.open(f"if ({name} == NULL)")
            self.emit("tsl_status = 1;")
            self.depth -= 1
            self.scopes.pop()
            self.open("} else")
            self.stmt(s.body)
            self.emit(f"free({name});")
            self.close()
        self.close()

    # ---- heap temporaries: once per call (or per thread), not once per loop iteration ---------------
    def _plan_hoisting(self, body: S.Stmt) -> None:
        """Move each heap temporary out of the loops around it, up to the function (allocated
        once per call) or to the parallel loop around it (once per thread: the threads must not
        share it), but never past a loop or let whose variable its size uses.

        A malloc per iteration of a compute_at'd stage costs a system call and fresh page faults
        per strip for large temporaries; hoisted, the pages are touched once and stay warm.
        """
        self.hoisted: set[int] = set()
        self.hoist_to: dict[int, list[S.Allocate]] = {}  # id(parallel For) or id(func) -> allocations
        # id(For or LetStmt) -> allocations made once per iteration, at the top of its body
        self.hoist_into: dict[int, list[S.Allocate]] = {}

        def walk(n, outer: list) -> None:
            if isinstance(n, S.Allocate) and _on_heap(n.buffer) and outer:
                used = set().union(*(free_vars(x) for x in n.buffer.shape))
                target, plan = None, self.hoist_to
                for node in reversed(outer):
                    bound = node.loop_var if isinstance(node, S.For) else node.var
                    if bound in used:
                        # the size changes with this loop (a compute_at region that varies with
                        # it): allocate at the top of its body, out of the loops inside it only
                        if target is not None:
                            target, plan = node, self.hoist_into
                        break
                    target = node
                    if isinstance(node, S.For) and node.kind == "parallel":
                        break
                else:
                    target = self.func
                if target is not None:
                    self.hoisted.add(id(n))
                    plan.setdefault(id(target), []).append(n)
            if isinstance(n, S.For | S.LetStmt):
                outer = [*outer, n]
            for f in n.fields():
                for x in (f if isinstance(f, tuple) else (f,)):
                    if isinstance(x, S.Stmt):
                        walk(x, outer)

        walk(body, [])

    def _body_with_hoisted(self, node, body: S.Stmt) -> None:
        """``body`` of loop or let ``node``, after the temporaries hoisted into it are allocated
        (and freed after it)."""
        names = self._open_hoisted(id(node), self.hoist_into)
        if not names:
            self.stmt(body)
            return
        self.open(f"if (!({' && '.join(f'{n} != NULL' for n in names)}))")
        self.emit("tsl_status = 1;")
        self.depth -= 1
        self.scopes.pop()
        self.open("} else")
        self.stmt(body)
        self.close()
        for n in names:
            self.emit(f"free({n});")

    def _open_hoisted(self, key: int, plan: dict | None = None) -> list[str]:
        """Declare the temporaries hoisted to ``key``; their names, to free at the end."""
        names: list[str] = []
        seen: set[int] = set()
        for a in (self.hoist_to if plan is None else plan).get(key, []):
            b = a.buffer
            if id(b) in seen:  # one buffer allocated in several places (a partitioned loop's copies)
                continue
            seen.add(id(b))
            self.uses_heap = True
            t, name = ctype(b.dtype), self.names.get(b, b.name)
            size = " * ".join(f"(int64_t){self.expr(x, 8)}" for x in b.shape) or "1"
            self.emit(f"{t}* restrict {name} = ({t}*)tsl_alloc(({size}) * (int64_t)sizeof({t}));  // {comment(b.name)}")
            names.append(name)
        return names

    def _promote(self, s: S.Allocate, count: int) -> bool:
        """Keep a small temporary in variables (registers) instead of an array, when every access
        is at a constant offset: what a register tile's accumulators look like after unrolling.

        GCC's scalar replacement gives up on arrays accessed as whole vectors through memcpy, so
        this is done here, where it is certain; an array touched at any variable index stays one.
        """
        b = s.buffer
        if b.scope not in ("local", "warp") or count > MAX_PROMOTED_ELEMENTS or b.dtype == "float16":
            return False
        lanes = 0
        for n in collect(s.body, lambda x: isinstance(x, E.BufferLoad | S.BufferStore) and x.buffer is b):
            idx = n.indices[0]
            if isinstance(idx, E.Ramp):
                if not (isinstance(idx.base, E.IntImm) and E.is_const_int(idx.stride, 1)):
                    return False
                if lanes not in (0, idx.lanes) or idx.base.value % idx.lanes:
                    return False
                lanes = idx.lanes
            elif not isinstance(idx, E.IntImm) or not 0 <= idx.value < count:
                return False
        lanes = max(lanes, 1)
        if count % lanes or count // lanes > MAX_PROMOTED_VARIABLES:
            return False
        prefix = self.names.get(b, b.name)
        t = self.vec.vtype(b.dtype.with_lanes(lanes)) if lanes > 1 else ctype(b.dtype)
        self.open("")
        # each variable is an identifier of the table, so it cannot clash with a user's name
        cells = self.promoted_names.setdefault(
            id(b), [self.names.get(object(), f"{prefix}_{k}") for k in range(count // lanes)])
        self.emit(f"{t} {', '.join(cells)};  // {comment(b.name)}, scope {comment(b.scope)}: kept in registers")
        self.promoted[id(b)] = (cells, lanes)
        self.stmt(s.body)
        del self.promoted[id(b)]
        self.close()
        return True

    # ---- the whole translation unit --------------------------------------------------------
    def function(self) -> str:
        f = self.func
        written = written_buffers(f) | set(f.outputs)
        params, prologue = [], []
        for b in f.params:
            if b.dtype == "float16":
                self.uses_float16 = True
            const = "" if b in written else "const "
            params.append(f"{const}{ctype(b.dtype)}* restrict {self.names.get(b, b.name)}")
        for v in f.size_vars:
            self.bound.add(id(v))
            name = self.names.get(v, v.name)
            if v.dtype == "int64":
                params.append(f"int64_t {name}")
            else:
                arg = self.names.get(object(), f"{name}_arg")
                params.append(f"int64_t {arg}")
                prologue.append(f"const {ctype(v.dtype)} {name} = ({ctype(v.dtype)}){arg};")
        for line in prologue:
            self.emit(line)
        self._plan_hoisting(f.body)
        top = self._open_hoisted(id(f))
        if top:
            self.open(f"if (!({' && '.join(f'{n} != NULL' for n in top)}))")
            self.emit("tsl_status = 1;")
            self.depth -= 1
            self.scopes.pop()
            self.open("} else")
            self.stmt(f.body)
            self.close()
            for n in top:
                self.emit(f"free({n});")
        else:
            self.stmt(f.body)
        body = self.lines
        if self.has_parallel:  # threads: the call's request, else OpenMP's default (all cores, or $OMP_NUM_THREADS)
            params.append("int32_t tsl_num_threads")
            body.insert(0, "  const int tsl_nt = tsl_num_threads > 0 ? tsl_num_threads : TSL_MAX_THREADS();")
        head = [f"// generated by tessel (c target) from PrimFunc {comment(f.name)}"]
        for b in f.params:
            shape = ", ".join(str(x) for x in b.shape)
            role = "output" if b in written else "input"
            head.append(f"//   {comment(b.name)}: {b.dtype}[{shape}] ({role})")
        if f.size_vars:
            head.append("//   sizes: " + ", ".join(f"{comment(v.name)} ({v.dtype})" for v in f.size_vars))
        head += ["#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>",
                 "#include <stdlib.h>", "#include <math.h>", ""]
        head += _undefine(self.names.taken)
        if self.has_parallel:
            head += [_THREADS, ""]
        if self.uses_stream:
            head += [_STREAM, ""]
        if self.uses_heap:
            head += [_ALLOC, ""]
        for text in self.helpers.values():
            head += [text, ""]
        for text in self.vec.declarations():
            head += [text, ""]
        sig = f"int32_t {self.symbol}({', '.join(params) or 'void'})"
        out = [*head, sig + " {"]
        if self.uses_heap:
            out.append("  int32_t tsl_status = 0;")
        out += body
        if self.uses_stream:
            out.append("  tsl_sfence();  // streaming stores visible before the caller reads the result")
        out.append("  return tsl_status;" if self.uses_heap else "  return 0;")
        out.append("}")
        return "\n".join(out) + "\n"


def _undefine(idents: set[str]) -> list[str]:
    """``#undef`` for every identifier made from a user's name: the compiler predefines some
    lower-case names (``linux``, ``unix``) and the headers many more (``M_PI``, ``INT32_MAX``,
    function-like ``signbit``); whatever the compiler and its headers define, such a macro
    must not rewrite the kernel (the names tessel's own code uses are kept off the table)."""
    if not idents:
        return []
    return ["// the names below come from the program: no macro of the compiler or a header may rewrite them",
            *(f"#undef {n}" for n in sorted(idents)), ""]


def _on_heap(b: S.Buffer) -> bool:
    """Whether a temporary is too large (or of unknown size) for the stack."""
    if not all(isinstance(x, E.IntImm) for x in b.shape):
        return True
    return math.prod(x.value for x in b.shape) * max(b.dtype.bits // 8, 1) > STACK_LIMIT_BYTES


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


_THREADS = """\
#ifdef _OPENMP
#include <omp.h>
#define TSL_MAX_THREADS() omp_get_max_threads()
#else
#define TSL_MAX_THREADS() 1
#endif"""

_STREAM = """\
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define tsl_sfence() _mm_sfence()
#else
#define tsl_sfence() __sync_synchronize()
#endif"""

_ALLOC = """\
static void* tsl_alloc(int64_t nbytes) {
  /* a negative size comes from a temporary hoisted out of a branch not taken (its loops are
     empty): it is never touched, so a minimal block serves */
  if (nbytes < 0) nbytes = 0;
  size_t n = ((size_t)nbytes + 63) & ~(size_t)63;
  void* p = NULL;
  return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
}"""


def _int_literal(v: int, dt: DType) -> tuple[str, int]:
    if dt.is_bool:
        return ("true" if v else "false"), _ATOM
    if dt == "int32":
        if v == -(2**31):
            return "(-2147483647 - 1)", _ATOM
        return str(v), (_ATOM if v >= 0 else 8)
    if dt == "int64":
        if v == -(2**63):
            return "INT64_MIN", _ATOM
        return (f"INT64_C({v})", _ATOM) if v >= 0 else (f"-INT64_C({-v})", 8)
    if dt == "uint32":
        return f"{v}u", _ATOM
    if dt == "uint64":
        return f"UINT64_C({v})", _ATOM
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
    return text, (8 if text.startswith("-") else _ATOM)


def _helper_source(kind: str, name: str, dt: DType) -> str:
    t = ctype(dt)
    sig = f"static inline {t} {name}({t} a, {t} b) {{"
    if kind in ("min", "max"):  # floats: a NaN operand gives NaN, as NumPy's minimum/maximum
        op = "<" if kind == "min" else ">"
        nan = " || a != a" if dt.is_float else ""
        return f"{sig} return (a {op} b{nan}) ? a : b; }}"
    if kind == "abs":
        u = f"uint{max(dt.bits, 32)}_t"
        return f"static inline {t} {name}({t} a) {{ return a < 0 ? ({t})(0u - ({u})a) : a; }}"
    if dt == "float16":  # through float, rounded to half at the end, as NumPy does
        body = {"fmod": "return (_Float16)fmodf((float)a, (float)b);",
                "floordiv": "return (_Float16)tsl_floordiv_f32((float)a, (float)b);",
                "floormod": "return (_Float16)tsl_floormod_f32((float)a, (float)b);"}[kind]
        return f"{sig} {body} }}"
    if dt.is_float:
        if kind == "fmod":
            return f"{sig} return {_math_fn('fmod', dt)}(a, b); }}"
        return _float_floor_source(kind, name, dt)
    # integers: x / 0 and x % 0 give 0; MIN / -1 wraps instead of trapping
    lines = [sig, "  if (b == 0) return 0;"]
    if dt.is_int:
        wneg = f"({t})(0u - (uint{max(dt.bits, 32)}_t)a)"  # MIN / -1 wraps to MIN, without UB
        neg = {"div": wneg, "floordiv": wneg, "mod": "0", "floormod": "0"}[kind]
        lines.append(f"  if (b == -1) return {neg};")
    if kind == "div":
        lines.append(f"  return ({t})(a / b);")
    elif kind == "mod":
        lines.append(f"  return ({t})(a % b);")
    elif dt.is_uint or dt.is_bool:
        lines.append(f"  return ({t})(a {'/' if kind == 'floordiv' else '%'} b);")
    elif kind == "floordiv":
        lines += [f"  {t} q = ({t})(a / b), r = ({t})(a % b);", "  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;"]
    else:
        lines += [f"  {t} r = ({t})(a % b);", f"  return (r != 0 && ((r < 0) != (b < 0))) ? ({t})(r + b) : r;"]
    lines.append("}")
    return "\n".join(lines)


def _float_floor_source(kind: str, name: str, dt: DType) -> str:
    """Float ``//`` and ``%`` as NumPy's ``floor_divide``/``remainder`` (and Python's): from the
    exact ``fmod``, not ``floor(a / b)``, whose rounded quotient gives ``1 // 0.1 == 10`` and
    ``-5 % inf == nan``; ``ir.evaluate`` and the python target compute the same."""
    t, f = ctype(dt), ("" if dt.bits == 64 else "f")
    if kind == "floormod":
        return (f"static inline {t} {name}({t} a, {t} b) {{\n  {t} m = fmod{f}(a, b);\n  if (b == 0) return m;\n"
                f"  if (m != 0) return ((b < 0) != (m < 0)) ? m + b : m;\n  return copysign{f}(0, b);\n}}")
    return (f"static inline {t} {name}({t} a, {t} b) {{\n  if (b == 0) return a / b;\n"
            f"  {t} m = fmod{f}(a, b), d = (a - m) / b;\n  if (m != 0 && (b < 0) != (m < 0)) d -= 1;\n"
            f"  if (d == 0) return copysign{f}(0, a / b);\n  {t} q = floor{f}(d);\n  return (d - q > 0.5{f}) ? q + 1 : q;\n}}")


def has_guarded_loads(body: S.Stmt) -> bool:
    """Whether the C of ``body`` reads memory only when a condition holds: a load in a branch
    of an ``if``, of a ternary (select / if_then_else) or in the right operand of ``&&``/``||``
    (see ``runtime.compiler.NO_IF_CONVERT`` for why the compiler must know)."""
    return _Guarded().run(body)


class _Guarded(Visitor):
    def run(self, body) -> bool:
        self.depth, self.found = 0, False
        self.visit(body)
        return self.found

    def _guarded(self, *parts) -> None:
        self.depth += 1
        for p in parts:
            if p is not None:
                self.visit(p)
        self.depth -= 1

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        self.found = self.found or self.depth > 0
        self.generic_visit(e)

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        self.visit(s.condition)
        self._guarded(s.then_case, s.else_case)

    def visit_Select(self, e: E.Select) -> None:
        self.visit(e.condition)
        self._guarded(e.true_value, e.false_value)

    def visit_Call(self, e: E.Call) -> None:
        if e.op != "if_then_else":
            return self.generic_visit(e)
        self.visit(e.args[0])
        self._guarded(*e.args[1:])

    def visit_And(self, e: E.And) -> None:
        self.visit(e.a)
        self._guarded(e.b)

    visit_Or = visit_And


def c_source(func: S.PrimFunc) -> str:
    """The C source of ``func`` (what ``Kernel.source`` shows for the c target)."""
    check_func(func)
    return _CGen(func).function()


def generate_c(func: S.PrimFunc, target=None) -> Generated:
    """The C source of ``func`` and how to compile and call it (the runtime does both)."""
    check_func(func)
    outputs = written_buffers(func) | set(func.outputs)
    gen = _CGen(func)
    source = gen.function()
    return Generated("c", func.name, gen.symbol, source, tuple(k for k, b in enumerate(func.params) if b in outputs),
                     openmp=gen.has_parallel, guarded_loads=has_guarded_loads(func.body), float16=gen.uses_float16)
