"""C spelled out for the c target: the scalar types, and the source of every helper the kernel
may call (emitted on demand, next to it).

The helpers are where the C has to be told what the IR means: integer division and remainder
by zero give 0 and never trap, ``MIN / -1`` wraps, floordiv/floormod round toward minus
infinity (on floats as NumPy's ``floor_divide``/``remainder``), min/max of a NaN is NaN.
Keeping their text apart from the printers means one reads what a kernel links against in
one place.
"""

from __future__ import annotations

from ..errors import BuildError
from ..ir.dtype import DType

CTYPE = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "_Float16", "float32": "float", "float64": "double", "handle": "void*",
}
SUFFIX = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32",
          "float64": "f64", "handle": "h"}


def ctype(dt: DType) -> str:
    if dt.lanes != 1:
        raise BuildError(f"the c target has no type for vector dtype {dt} yet")
    return CTYPE[str(dt)]


def _math_fn(name: str, dt: DType) -> str:
    return name if dt.bits == 64 else name + "f"


def helper_source(kind: str, name: str, dt: DType) -> str:
    """The definition of helper ``name``: ``kind`` (min, max, abs, div, mod, fmod, floordiv,
    floormod) on ``dt``."""
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
    return _int_division_source(kind, sig, dt)


def _int_division_source(kind: str, sig: str, dt: DType) -> str:
    """Integers: x / 0 and x % 0 give 0; MIN / -1 wraps instead of trapping."""
    t = ctype(dt)
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


# TVM's packed calling convention, without its return-value slots: values, their type codes
# (0 int, 2 float, 3 pointer, 7 DLTensor), and how many; a nonzero return reports an error
PACKED = """\
typedef union { int64_t v_int64; double v_float64; void* v_handle; } tsl_value;
typedef int32_t (*tsl_packed_fn)(const tsl_value* args, const int32_t* type_codes, int32_t num_args);"""

# DLPack's DLTensor, field for field: a C function written against dlpack.h reads it as is
DLTENSOR = """\
typedef struct { int32_t device_type, device_id; } tsl_dldevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } tsl_dldtype;
typedef struct {
  void* data; tsl_dldevice device; int32_t ndim; tsl_dldtype dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
} tsl_dltensor;"""

#: DLPack's type codes (kDLInt, kDLUInt, kDLFloat, kDLBool) by dtype code
DL_CODE = {"int": 0, "uint": 1, "float": 2, "bool": 6}

ALIGN_GAP = (
    "static inline int64_t tsl_align_gap(const void* p, int64_t nbytes, int64_t elem) {\n"
    "  const uintptr_t a = (uintptr_t)p;\n"
    "  if (a % (uintptr_t)elem) return 0;  /* never aligned: no point peeling */\n"
    "  return (int64_t)(((uintptr_t)nbytes - a % (uintptr_t)nbytes) % (uintptr_t)nbytes) / elem;\n"
    "}")

THREADS = """\
#ifdef _OPENMP
#include <omp.h>
#define TSL_MAX_THREADS() omp_get_max_threads()
#else
#define TSL_MAX_THREADS() 1
#endif"""

# the fence and the stores are one instruction each, written as inline assembly: <immintrin.h>
# is tens of thousands of lines, and parsing it was most of a cold build of a small kernel
STREAM = """\
#if defined(__x86_64__) || defined(__i386__)
#define tsl_sfence() __asm__ volatile("sfence" ::: "memory")
#if defined(__AVX__)
#define TSL_MOVNT "vmovntps"
#else
#define TSL_MOVNT "movntps"
#endif
#else
#define tsl_sfence() __sync_synchronize()
#endif"""

ALLOC = """\
static void* tsl_alloc(int64_t nbytes) {
  /* a negative size comes from a temporary hoisted out of a branch not taken (its loops are
     empty): it is never touched, so a minimal block serves */
  if (nbytes < 0) nbytes = 0;
  size_t n = ((size_t)nbytes + 63) & ~(size_t)63;
  void* p = NULL;
  return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
}"""
