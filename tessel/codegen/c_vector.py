"""Vector expressions in C, through the GCC/Clang vector extensions.

The vectorize pass leaves ``Ramp``/``Broadcast`` nodes and loads/stores with vector indices;
here each vector dtype becomes a ``vector_size`` typedef (``tsl_f32x16``: 16 floats, one
AVX-512 register). Plain arithmetic on such types is already element-wise in both compilers,
so only what C does not define for vectors goes through small ``static inline`` helpers,
emitted on demand next to the kernel:

* loads and stores through ``__builtin_memcpy``, so that an unaligned address is never
  undefined behaviour and the compiler still emits one ``vmovups``;
* gathers/scatters (a stride other than 1) lane by lane;
* ``select``, ``min`` and ``max`` as bit blends on comparison masks (C has no vector ``?:``);
* signed integer arithmetic in the unsigned type, as the scalar code does, so overflow wraps;
* ``exp`` on float32 as a polynomial (the C library has no vector ``expf`` without
  ``-ffast-math``), within 1 ulp of the correctly rounded exp; other intrinsics and integer division lane by lane, through the very same
  scalar code the c target uses, so both give the same answers.

A boolean vector is a *mask*: an integer vector whose lanes are all ones (true) or zero,
which is what vector comparisons produce. Its lane width follows the values it selects
between, converted with ``__builtin_convertvector`` where widths differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BuildError
from ..ir import expr as E
from ..ir.dtype import DType
from ..ir.functor import Functor
from .c_operands import keep_macro

if TYPE_CHECKING:
    from .c_expr import CExprWriter

_SFX = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
        "uint32": "u32", "uint64": "u64", "float32": "f32", "float64": "f64"}
_CT = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t",
       "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "float32": "float", "float64": "double"}
_ATOM = 9


def _elem(dt: DType) -> str:
    return str(dt.element)


# AVX-512's vscalefps computes p * 2^k, rounded once, subnormal results and overflow to inf
# included: the same value as the two exact-then-rounding products below, in one instruction
# instead of eight (the exponent split, two shifts, two adds and two multiplications).
_SCALEF = {16: "__builtin_ia32_scalefps512_mask(p, kf, p, (unsigned short)-1, 4)"}


def _scalef(dt: DType) -> tuple[str, str]:
    """The AVX-512 branch of the vector exp's scaling by 2^k for ``dt`` (and the ``#else`` of
    the portable one after it), or nothing where no such instruction fits the vector."""
    call = _SCALEF.get(dt.lanes) if dt.element == "float32" else None
    if call is None:
        return "", ""
    return f"#if defined(__AVX512F__)\n  return {call};\n#else\n", "#endif\n"


class VectorC(Functor):
    """The vector half of the C generator (owns the typedefs and helpers it asks for)."""

    def __init__(self, gen: CExprWriter):
        self.gen = gen
        self.types: dict[str, str] = {}    # typedef name -> declaration
        self.helpers: dict[str, str] = {}  # helper name -> definition
        self.uid = 0
        self.reuse: dict[str, str] = {}    # a load's C -> the variable holding it (c_operands)

    # ---- types -------------------------------------------------------------------------------------
    def vtype(self, dt: DType) -> str:
        """The typedef of a (non-bool) vector dtype."""
        el = _elem(dt)
        if el not in _SFX:
            raise BuildError(f"kernel {self.gen.func.name!r}: the c target has no vector type for {dt}")
        name = f"tsl_{_SFX[el]}x{dt.lanes}"
        if name not in self.types:
            nbytes = dt.lanes * dt.element.bits // 8
            self.types[name] = f"typedef {_CT[el]} {name} __attribute__((vector_size({nbytes})));"
        return name

    def mtype(self, bits: int, lanes: int) -> str:
        """A mask type: signed integers of ``bits``, one per lane."""
        return self.vtype(DType(f"int{bits}x{lanes}"))

    def _def(self, name: str, text: str) -> str:
        if name not in self.helpers:
            self.helpers[name] = text
        return name

    def declarations(self) -> list[str]:
        return [*self.types.values(), *self.helpers.values()]

    # ---- helpers -----------------------------------------------------------------------------------
    def broadcast_fn(self, dt: DType) -> str:
        t, el = self.vtype(dt), _CT[_elem(dt)]
        name = f"tsl_bc_{t[4:]}"
        lanes = ", ".join(["x"] * dt.lanes)
        return self._def(name, f"static inline {t} {name}({el} x) {{ return ({t}){{{lanes}}}; }}")

    def load_fn(self, dt: DType) -> str:
        t, el = self.vtype(dt), _CT[_elem(dt)]
        name = f"tsl_ld_{t[4:]}"
        return self._def(name, f"static inline {t} {name}(const {el}* p) {{ {t} v; "
                               f"__builtin_memcpy(&v, p, sizeof v); return v; }}")

    def keep_fn(self, dt: DType) -> str:
        """``tsl_keep_f32x8(v)``: ``v`` pinned to a vector register (see c_operands)."""
        name = f"tsl_keep_{self.vtype(dt)[4:]}"
        return self._def(name, keep_macro(name, dt.lanes * dt.element.bits // 8))

    def store_fn(self, dt: DType) -> str:
        t, el = self.vtype(dt), _CT[_elem(dt)]
        name = f"tsl_st_{t[4:]}"
        return self._def(name, f"static inline void {name}({el}* p, {t} v) {{ __builtin_memcpy(p, &v, sizeof v); }}")

    def ramp_fn(self, dt: DType) -> str:
        t, el = self.vtype(dt), _CT[_elem(dt)]
        name = f"tsl_ramp_{t[4:]}"
        iota = ", ".join(str(k) for k in range(dt.lanes))
        bc = self.broadcast_fn(dt)
        if dt.is_int:  # lanes past the type's range wrap, as the scalar loop would
            u = self.vtype(DType(f"uint{dt.bits}x{dt.lanes}"))
            body = f"return ({t})(({u}){{{iota}}} * ({u}){bc}(s) + ({u}){bc}(b));"
        else:
            body = f"return ({t}){{{iota}}} * {bc}(s) + {bc}(b);"
        return self._def(name, f"static inline {t} {name}({el} b, {el} s) {{ {body} }}")

    def gather_fn(self, dt: DType, it: DType) -> str:
        t, el, ti = self.vtype(dt), _CT[_elem(dt)], self.vtype(it)
        name = f"tsl_gather_{t[4:]}_{ti[4:]}"
        return self._def(name, f"static inline {t} {name}(const {el}* p, {ti} ix) {{ {t} r; "
                               f"for (int l = 0; l < {dt.lanes}; ++l) r[l] = p[ix[l]]; return r; }}")

    def stream_fn(self, dt: DType) -> str:
        """A streaming (non-temporal) store where the address allows it, else an ordinary one."""
        t, el = self.vtype(dt), _CT[_elem(dt)]
        nbytes = dt.lanes * dt.element.bits // 8
        name = f"tsl_stream_{t[4:]}"
        # the condition under which a non-temporal store of the vector's bits exists, and the
        # register constraint of its operand (an AVX-512 register for 64 bytes); inline assembly,
        # not <immintrin.h>, whose parsing was most of a small kernel's cold build
        isa = {64: ("defined(__AVX512F__)", "v"), 32: ("defined(__AVX__)", "x"),
               16: ("defined(__SSE2__)", "x")}.get(nbytes)
        self.gen.uses_stream = True
        if isa is None:
            return self.store_fn(dt)
        cond, reg = isa
        # VEX-encoded under AVX: legacy SSE beside AVX code would cost a state transition
        store = (f'__asm__ volatile(TSL_MOVNT " %1, %0" : "=m"(*({t}*)p) : "{reg}"(v));')
        return self._def(name, f"""static inline void {name}({el}* p, {t} v) {{
#if ({cond}) && (defined(__x86_64__) || defined(__i386__))
  if (((uintptr_t)p & {nbytes - 1}) == 0) {{ {store} return; }}
#endif
  __builtin_memcpy(p, &v, sizeof v);
}}""")

    def scatter_fn(self, dt: DType, it: DType) -> str:
        t, el, ti = self.vtype(dt), _CT[_elem(dt)], self.vtype(it)
        name = f"tsl_scatter_{t[4:]}_{ti[4:]}"
        return self._def(name, f"static inline void {name}({el}* p, {ti} ix, {t} v) {{ "
                               f"for (int l = 0; l < {dt.lanes}; ++l) p[ix[l]] = v[l]; }}")

    def select_fn(self, dt: DType) -> str:
        t = self.vtype(dt)
        m = self.mtype(dt.element.bits, dt.lanes)
        name = f"tsl_sel_{t[4:]}"
        return self._def(name, f"static inline {t} {name}({m} c, {t} a, {t} b) {{ "
                               f"return ({t})((c & ({m})a) | (~c & ({m})b)); }}")

    def minmax_fn(self, dt: DType, kind: str) -> str:
        t = self.vtype(dt)
        sel = self.select_fn(dt)
        m = self.mtype(dt.element.bits, dt.lanes)
        op = "<" if kind == "min" else ">"
        # the scalar helpers' semantics, NaN included: (a OP b || a != a) ? a : b; a blend on
        # two compares, so a max reduction stays in vector registers
        nan = " | (a != a)" if dt.element.is_float else ""
        name = f"tsl_v{kind}_{t[4:]}"
        return self._def(name, f"static inline {t} {name}({t} a, {t} b) {{ return {sel}(({m})((a {op} b){nan}), a, b); }}")

    def exp_fn(self, dt: DType) -> str:
        t = self.vtype(dt)
        name = f"tsl_vexp_{t[4:]}"
        if name in self.helpers:
            return name
        bc = self.broadcast_fn(dt)
        it = self.vtype(DType(f"int32x{dt.lanes}"))
        bci = self.broadcast_fn(DType(f"int32x{dt.lanes}"))
        sel = self.select_fn(dt)
        m = self.mtype(32, dt.lanes)
        # exp(x) = 2^k * exp(r), k = round(x / ln 2), r = x - k ln 2 (ln 2 in two parts, so r is
        # exact); exp(r) on |r| <= ln(2)/2 by its Taylor series to degree 7 (remainder below
        # 6e-9, a twentieth of an ulp); 2^k applied in two halves so that results down to the
        # smallest subnormal and up to overflow come out as the C library's do, or on AVX-512
        # by vscalefps, the same value in one instruction (see _SCALEF). Inputs are clamped to
        # [-104, 89], beyond which the result is 0 or inf anyway; NaN passes through. Within 1
        # ulp of the correctly rounded exp over the whole float32 range (tests/e2e/test_fast_kernels).
        scalef, endif = _scalef(dt)
        text = f"""static inline {t} {name}({t} x) {{
  x = {sel}(({m})(x > {bc}(89.0f)), {bc}(89.0f), x);
  x = {sel}(({m})(x < {bc}(-104.0f)), {bc}(-104.0f), x);
  const {t} shifter = {bc}(12582912.0f);  /* 1.5 * 2^23: adding it rounds to an integer */
  {t} kf = (x * {bc}(1.44269504088896341f) + shifter) - shifter;
  {t} r = x - kf * {bc}(0.693359375f);
  r = r - kf * {bc}(-2.12194440e-4f);
  {t} p = {bc}(1.0f / 5040.0f);
  p = p * r + {bc}(1.0f / 720.0f);
  p = p * r + {bc}(1.0f / 120.0f);
  p = p * r + {bc}(1.0f / 24.0f);
  p = p * r + {bc}(1.0f / 6.0f);
  p = p * r + {bc}(0.5f);
  p = p * r + {bc}(1.0f);
  p = p * r + {bc}(1.0f);
{scalef}  {it} k = __builtin_convertvector(kf, {it});
  {it} k1 = k >> {bci}(1);
  {it} k2 = k - k1;
  {t} s1, s2;
  {it} e1 = (k1 + {bci}(127)) << {bci}(23), e2 = (k2 + {bci}(127)) << {bci}(23);
  __builtin_memcpy(&s1, &e1, sizeof s1);
  __builtin_memcpy(&s2, &e2, sizeof s2);
  return p * s1 * s2;
{endif}}}"""
        return self._def(name, text)

    def lanewise_fn(self, key: str, dt: DType, args: list[DType], scalar_text: str, params: list[str]) -> str:
        """``r[l] = <scalar code over a[l], b[l], ...>`` for each lane (what C has no vector form of)."""
        t = self.vtype(dt)
        name = f"tsl_lw_{key}_{t[4:]}"
        if name in self.helpers:
            return name
        vts = [self.vtype(a) for a in args]
        sig = ", ".join(f"{vt} v{k}" for k, vt in enumerate(vts))
        loads = " ".join(f"const {_CT[_elem(a)]} {p} = v{k}[l];" for k, (a, p) in enumerate(zip(args, params)))
        body = (f"static inline {t} {name}({sig}) {{ {t} r; for (int l = 0; l < {dt.lanes}; ++l) {{ "
                f"{loads} r[l] = {scalar_text}; }} return r; }}")
        return self._def(name, body)

    # ---- expressions ------------------------------------------------------------------------------
    def visit(self, node: E.PrimExpr) -> tuple[str, int]:
        """A boolean vector as a mask; the rest by node type."""
        if node.dtype.is_bool:
            return self.mask(node, 32), _ATOM
        return self.handler(type(node))(self, node)

    def visit_PrimExpr(self, e: E.PrimExpr) -> tuple[str, int]:
        raise BuildError(f"kernel {self.gen.func.name!r}: the c target cannot generate the vector expression `{e}`")

    def visit_Var(self, e: E.Var) -> tuple[str, int]:
        return self.gen.var(e), _ATOM

    def visit_Ramp(self, e: E.Ramp) -> tuple[str, int]:
        return f"{self.ramp_fn(e.dtype)}({self.gen.expr(e.base)}, {self.gen.expr(e.stride)})", _ATOM

    def visit_Broadcast(self, e: E.Broadcast) -> tuple[str, int]:
        return f"{self.broadcast_fn(e.dtype)}({self.gen.expr(e.value)})", _ATOM

    def visit_BufferLoad(self, e: E.BufferLoad) -> tuple[str, int]:
        return self.load(e), _ATOM

    def visit_Min(self, e: E.Min | E.Max) -> tuple[str, int]:
        fn = self.minmax_fn(e.dtype, "min" if isinstance(e, E.Min) else "max")
        return f"{fn}({self.gen.expr(e.a)}, {self.gen.expr(e.b)})", _ATOM

    visit_Max = visit_Min

    def visit_BinaryOp(self, e: E.BinaryOp) -> tuple[str, int]:
        """Integer division, float floordiv/mod: lane by lane."""
        return self.lanewise(type(e).__name__.lower(), e, [e.a, e.b]), _ATOM

    def visit_Div(self, e: E.Div) -> tuple[str, int]:
        return self.arith(e) if e.dtype.is_float else self.visit_BinaryOp(e)

    def visit_Select(self, e: E.Select) -> tuple[str, int]:
        return self.select(e.condition, e.true_value, e.false_value), _ATOM

    def visit_Cast(self, e: E.Cast) -> tuple[str, int]:
        return self.cast(e), _ATOM

    def visit_Call(self, e: E.Call) -> tuple[str, int]:
        return self.call(e), _ATOM

    def arith(self, e: E.BinaryOp) -> tuple[str, int]:
        """``+ - *`` and float ``/``: C's own vector operators (integers wrap, as scalars do)."""
        g, dt = self.gen, e.dtype
        prec = 7 if isinstance(e, E.Mul | E.Div) else 6
        if dt.is_int:  # wraps, as the scalar code does: computed on the unsigned type
            t, u = self.vtype(dt), self.vtype(DType(f"uint{dt.bits}x{dt.lanes}"))
            return f"({t})(({u}){g.expr(e.a, 8)} {e.symbol} ({u}){g.expr(e.b, 8)})", 8
        return f"{g.expr(e.a, prec)} {e.symbol} {g.expr(e.b, prec + 1)}", prec

    visit_Add = visit_Sub = visit_Mul = arith

    def load(self, e: E.BufferLoad) -> str:
        g = self.gen
        buf = g.names.get(e.buffer, e.buffer.name)
        idx = e.indices[0]
        promoted = g.promoted_access(e.buffer, idx)
        if promoted is not None:
            return promoted
        if isinstance(idx, E.Ramp) and E.is_const_int(idx.stride, 1):
            text = f"{self.load_fn(e.dtype)}({buf} + {g.expr(idx.base, 6)})"
            return self.reuse.get(text, text)
        return f"{self.gather_fn(e.dtype, idx.dtype)}({buf}, {g.expr(idx)})"

    def store(self, buf_obj, idx: E.PrimExpr, value: E.PrimExpr) -> str:
        g = self.gen
        promoted = g.promoted_access(buf_obj, idx)
        vtext = g.expr(value)
        if promoted is not None:
            return f"{promoted} = {vtext};"
        buf = g.names.get(buf_obj, buf_obj.name)
        if isinstance(idx, E.Ramp) and E.is_const_int(idx.stride, 1):
            fn = self.stream_fn(value.dtype) if id(buf_obj) in g.streaming else self.store_fn(value.dtype)
            return f"{fn}({buf} + {g.expr(idx.base, 6)}, {vtext});"
        return f"{self.scatter_fn(value.dtype, idx.dtype)}({buf}, {g.expr(idx)}, {vtext});"

    def select(self, cond: E.PrimExpr, t: E.PrimExpr, f: E.PrimExpr) -> str:
        g = self.gen
        if cond.dtype.lanes == 1:
            return f"({g.expr(cond, 2)} ? {g.expr(t, 1)} : {g.expr(f, 1)})"
        return f"{self.select_fn(t.dtype)}({self.mask(cond, t.dtype.element.bits)}, {g.expr(t)}, {g.expr(f)})"

    def cast(self, e: E.Cast) -> str:
        g = self.gen
        t = self.vtype(e.dtype)
        v = e.value
        if v.dtype.is_bool:  # a mask is -1 for true: negate to get 1
            m = self.mask(v, 32)
            return f"__builtin_convertvector(-{m}, {t})"
        return f"__builtin_convertvector({g.expr(v)}, {t})"

    def call(self, e: E.Call) -> str:
        g = self.gen
        if e.op == "if_then_else":
            return self.select(*e.args)
        if e.op == "exp" and e.dtype.element == "float32":
            return f"{self.exp_fn(e.dtype)}({g.expr(e.args[0])})"
        return self.lanewise(e.op, e, list(e.args))

    def lanewise(self, key: str, e: E.PrimExpr, args: list[E.PrimExpr]) -> str:
        """Apply the scalar form of ``e`` lane by lane (same code, so the same rounding)."""
        g = self.gen
        params = [E.Var(f"tsl_a{k}", a.dtype.element) for k, a in enumerate(args)]
        if isinstance(e, E.Call):
            scalar = E.Call(e.dtype.element, e.op, params)
        else:
            scalar = type(e)(*params)
        names = []
        for p in params:
            g.bound.add(id(p))
            names.append(g.names.get(p, p.name))
        try:
            text = g.expr(scalar)
        finally:
            for p in params:
                g.bound.discard(id(p))
        key = f"{key}_{'_'.join(_SFX[_elem(a.dtype)] for a in args)}" if any(
            a.dtype.element != e.dtype.element for a in args) else key
        fn = self.lanewise_fn(key, e.dtype, [a.dtype for a in args], text, names)
        return f"{fn}({', '.join(g.expr(a) for a in args)})"

    # ---- masks ------------------------------------------------------------------------------------------
    def mask(self, e: E.PrimExpr, bits: int) -> str:
        """A boolean vector as a mask with lanes of ``bits`` bits."""
        g = self.gen
        lanes = e.dtype.lanes
        mt = self.mtype(bits, lanes)
        if isinstance(e, E.CmpOp) and not e.a.dtype.is_bool:
            own = e.a.dtype.element.bits
            text = f"({g.expr(e.a, 6)} {e.symbol} {g.expr(e.b, 6)})"
            return text if own == bits else f"__builtin_convertvector({text}, {mt})"
        if isinstance(e, E.And | E.Or):
            op = "&" if isinstance(e, E.And) else "|"
            return f"({self.mask(e.a, bits)} {op} {self.mask(e.b, bits)})"
        if isinstance(e, E.Not):
            return f"(~{self.mask(e.a, bits)})"
        if isinstance(e, E.Broadcast):
            return f"{self.broadcast_fn(DType(f'int{bits}x{lanes}'))}({g.expr(e.value, 2)} ? -1 : 0)"
        raise BuildError(f"kernel {g.func.name!r}: the c target cannot generate the boolean vector `{e}`")


__all__ = ["VectorC"]
