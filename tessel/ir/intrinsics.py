"""The one table of intrinsics: what ``E.Call(dtype, op, args)`` may name and what it means.

Five tables used to describe the same functions (te's exports, the code generators' checks,
the C and Python spellings, the evaluator) and they drifted apart: ``te.nearbyint`` was
exported while neither backend knew it. Every consumer now reads this table, so an intrinsic
exists everywhere or nowhere, and the test that runs each exported one on both targets
against its NumPy function covers all of them.

Each entry gives:

* ``arity`` (``VARIADIC``: a name, then any arguments) and a dtype ``rule``: ``"float"``
  (float arguments, a result of their dtype), ``"int"`` (an integer argument, a result of its
  dtype; the C template has ``{bits}``),
  ``"any"`` (also on integers, where floor/ceil/round/trunc are the identity and abs is |x|),
  ``"predicate"`` (a float argument, a bool result) or ``"special"`` (handled by name by the
  generators: ``if_then_else`` evaluates only the chosen side, ``tsl_align_gap`` asks for an
  address's distance to the next aligned one);
* ``numpy``: the reference on arrays (what the tests compare against);
* ``scalar``: the value on Python numbers (the evaluator, the simplifier's oracle);
* ``c``: the C spelling, a template over the arguments ``{0}``, ``{1}`` in which ``{f}`` is
  ``f`` for float32 (``expf``, ``1.0f``) and empty for float64;
* ``python``: the name the python target calls (NumPy's or a helper of its namespace);
* ``vectorizable``: whether the vectorize pass may give it vector arguments;
* ``public``: whether ``tessel.te`` exports it; ``domain``: where its values are ordinary
  (the interval random test data is drawn from);
* ``derivative``: the partial derivatives with respect to each argument, as expressions over
  the arguments (what ``te.gradient`` applies by the chain rule); ``None`` where the result is
  not a differentiable value (predicates, the special ones). A function that is piecewise
  constant (floor, round, ...) has zero partials.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from . import expr as E


@dataclass(frozen=True)
class Intrinsic:
    name: str
    arity: int
    rule: str
    numpy: Callable | None
    scalar: Callable | None
    c: str | None
    python: str | None
    vectorizable: bool = True
    public: bool = True
    domain: tuple[float, float] = (-3.0, 3.0)
    derivative: Callable[..., tuple[E.PrimExpr, ...]] | None = None

    @property
    def float_only(self) -> bool:
        """Whether the result (and so the arguments) must be floating point."""
        return self.rule == "float"


def _safe(fn: Callable) -> Callable:
    """``fn`` on Python floats with C's answers where ``math`` raises (inf on overflow, NaN outside the domain)."""
    def call(*args):
        try:
            return fn(*args)
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan

    return call


def _log(fn: Callable) -> Callable:
    return _safe(lambda x: -math.inf if x == 0 else fn(x))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _np_sigmoid(x):
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _np_erf(x):
    return np.array([math.erf(float(v)) for v in np.ravel(x)], dtype=x.dtype).reshape(np.shape(x))


def _np_rsqrt(x):
    return x.dtype.type(1) / np.sqrt(x)


def _np_exp10(x):
    return np.power(x.dtype.type(10), x)


def np_popcount(x):
    """Set bits of the two's-complement pattern (NumPy's bitwise_count counts |x| for signed)."""
    a = np.asarray(x)
    bits = np.bitwise_count(a.view(np.dtype(f"uint{a.dtype.itemsize * 8}")) if a.dtype.kind == "i" else a)
    return bits.astype(a.dtype) if isinstance(x, np.ndarray) else a.dtype.type(bits)


VARIADIC = -1
#: calls of functions outside the kernel: the first argument names the function (a StringImm)
EXTERN_CALLS = ("call_extern", "call_pure_extern", "call_packed")
#: ops whose first argument is the load whose address they take (an address, not a read)
ADDRESS_OPS = ("address_of", "tsl_array")


def _entries() -> list[Intrinsic]:
    u, b = 1, 2
    pos, unit = (0.05, 8.0), (-0.95, 0.95)
    return [
        Intrinsic("exp", u, "float", np.exp, _safe(math.exp), "exp{f}({0})", "np.exp"),
        Intrinsic("exp2", u, "float", np.exp2, _safe(math.exp2), "exp2{f}({0})", "np.exp2"),
        Intrinsic("exp10", u, "float", _np_exp10, _safe(lambda x: 10.0 ** x), "pow{f}(10.0{f}, {0})", "_exp10"),
        Intrinsic("expm1", u, "float", np.expm1, _safe(math.expm1), "expm1{f}({0})", "np.expm1"),
        Intrinsic("log", u, "float", np.log, _log(math.log), "log{f}({0})", "np.log", domain=pos),
        Intrinsic("log2", u, "float", np.log2, _log(math.log2), "log2{f}({0})", "np.log2", domain=pos),
        Intrinsic("log10", u, "float", np.log10, _log(math.log10), "log10{f}({0})", "np.log10", domain=pos),
        Intrinsic("log1p", u, "float", np.log1p, _safe(math.log1p), "log1p{f}({0})", "np.log1p", domain=pos),
        Intrinsic("sqrt", u, "float", np.sqrt, _safe(math.sqrt), "sqrt{f}({0})", "np.sqrt", domain=pos),
        Intrinsic("rsqrt", u, "float", _np_rsqrt, _safe(lambda x: 1.0 / math.sqrt(x)),
                  "(1.0{f} / sqrt{f}({0}))", "_rsqrt", domain=pos),
        Intrinsic("cbrt", u, "float", np.cbrt, math.cbrt,
                  "cbrt{f}({0})", "np.cbrt"),
        Intrinsic("sin", u, "float", np.sin, _safe(math.sin), "sin{f}({0})", "np.sin"),
        Intrinsic("cos", u, "float", np.cos, _safe(math.cos), "cos{f}({0})", "np.cos"),
        Intrinsic("tan", u, "float", np.tan, _safe(math.tan), "tan{f}({0})", "np.tan", domain=(-1.2, 1.2)),
        Intrinsic("asin", u, "float", np.arcsin, _safe(math.asin), "asin{f}({0})", "np.arcsin", domain=unit),
        Intrinsic("acos", u, "float", np.arccos, _safe(math.acos), "acos{f}({0})", "np.arccos", domain=unit),
        Intrinsic("atan", u, "float", np.arctan, math.atan, "atan{f}({0})", "np.arctan"),
        Intrinsic("sinh", u, "float", np.sinh, _safe(math.sinh), "sinh{f}({0})", "np.sinh"),
        Intrinsic("cosh", u, "float", np.cosh, _safe(math.cosh), "cosh{f}({0})", "np.cosh"),
        Intrinsic("tanh", u, "float", np.tanh, math.tanh, "tanh{f}({0})", "np.tanh"),
        Intrinsic("asinh", u, "float", np.arcsinh, math.asinh, "asinh{f}({0})", "np.arcsinh"),
        Intrinsic("acosh", u, "float", np.arccosh, _safe(math.acosh), "acosh{f}({0})", "np.arccosh",
                  domain=(1.05, 8.0)),
        Intrinsic("atanh", u, "float", np.arctanh, _safe(math.atanh), "atanh{f}({0})", "np.arctanh", domain=unit),
        Intrinsic("sigmoid", u, "float", _np_sigmoid, _sigmoid, "(1.0{f} / (1.0{f} + exp{f}(-{0})))", "_sigmoid"),
        Intrinsic("erf", u, "float", _np_erf, math.erf, "erf{f}({0})", "_erf"),
        Intrinsic("pow", b, "float", np.power, _safe(math.pow), "pow{f}({0}, {1})", "np.power", domain=pos),
        Intrinsic("fmod", b, "float", np.fmod, _safe(math.fmod), "fmod{f}({0}, {1})", "np.fmod", domain=pos),
        Intrinsic("atan2", b, "float", np.arctan2, math.atan2, "atan2{f}({0}, {1})", "np.arctan2"),
        Intrinsic("hypot", b, "float", np.hypot, math.hypot, "hypot{f}({0}, {1})", "np.hypot"),
        Intrinsic("copysign", b, "float", np.copysign, math.copysign, "copysign{f}({0}, {1})", "np.copysign"),
        Intrinsic("fabs", u, "any", np.abs, abs, "fabs{f}({0})", "np.abs"),
        Intrinsic("abs", u, "any", np.abs, abs, "fabs{f}({0})", "np.abs", public=False),  # te.abs builds fabs
        Intrinsic("floor", u, "any", np.floor, math.floor, "floor{f}({0})", "np.floor"),
        Intrinsic("ceil", u, "any", np.ceil, math.ceil, "ceil{f}({0})", "np.ceil"),
        # round half to even, as NumPy's (and Python's) round: C's rint in the default rounding mode
        Intrinsic("round", u, "any", np.rint, round, "rint{f}({0})", "np.rint"),
        Intrinsic("nearbyint", u, "any", np.rint, round, "nearbyint{f}({0})", "np.rint"),
        Intrinsic("trunc", u, "any", np.trunc, math.trunc, "trunc{f}({0})", "np.trunc"),
        Intrinsic("isnan", u, "predicate", np.isnan, math.isnan, "isnan({0})", "np.isnan", vectorizable=False),
        Intrinsic("isinf", u, "predicate", np.isinf, math.isinf, "isinf({0})", "np.isinf", vectorizable=False),
        Intrinsic("isfinite", u, "predicate", np.isfinite, math.isfinite, "isfinite({0})", "np.isfinite",
                  vectorizable=False),
        *_special_entries(),
    ]


def _special_entries() -> list[Intrinsic]:
    """Calls with no NumPy counterpart: control, hints, addresses and outside calls."""
    u, b = 1, 2
    return [
        Intrinsic("if_then_else", 3, "special", None, None, None, None, public=False),
        Intrinsic("popcount", u, "int", np_popcount, None, "__builtin_popcountll((uint64_t)(uint{bits}_t)({0}))",
                  "_popcount", vectorizable=False, public=False),  # te.popcount: integers
        # a hint: fetch the line holding an address into the caches (no effect on values)
        Intrinsic("prefetch", u, "special", None, None, "__builtin_prefetch({0})", None, vectorizable=False,
                  public=False),
        # the address of a (never executed) load, with its access mask "r", "w" or "rw"
        Intrinsic("address_of", b, "special", None, None, None, None, vectorizable=False, public=False),
        # a whole view for a packed call: first element, mask, shape..., strides... (a DLTensor)
        Intrinsic("tsl_array", VARIADIC, "special", None, None, None, None, vectorizable=False, public=False),
        *(Intrinsic(n, VARIADIC, "special", None, None, None, None, vectorizable=False, public=False)
          for n in EXTERN_CALLS),
        # elements from the address of its (load) argument to the next multiple of its second
        # argument in bytes: where streaming stores can start (0 on targets without alignment)
        Intrinsic("tsl_align_gap", b, "special", None, None, None, None, vectorizable=False, public=False),
        *_gpu_entries(),
    ]


def _gpu_entries() -> list[Intrinsic]:
    """GPU kernels' own calls (TVM's spellings), which only the GPU targets give a meaning:
    a barrier of the block (its argument the scope synchronised, "shared"), the warp shuffles
    (mask, value, lane or delta, width, warp size) and the mask of the lanes taking part."""
    return [
        Intrinsic("tvm_storage_sync", 1, "special", None, None, None, None, vectorizable=False, public=False),
        *(Intrinsic(n, 5, "special", None, None, None, None, vectorizable=False, public=False)
          for n in ("tvm_warp_shuffle", "tvm_warp_shuffle_down", "tvm_warp_shuffle_up")),
        Intrinsic("tvm_warp_activemask", 0, "special", None, None, None, None, vectorizable=False, public=False),
    ]


# ---- derivatives: d f(x, ...) / d x_k, one expression per argument, built from the arguments ----
def _call(name: str, *args: E.PrimExpr) -> E.PrimExpr:
    return E.Call(args[0].dtype, name, args)


def _c(x: E.PrimExpr, v: float) -> E.PrimExpr:
    return E.FloatImm(v, x.dtype)


def _recip(x: E.PrimExpr) -> E.PrimExpr:
    return E.true_div(_c(x, 1.0), x)


def _sq(x: E.PrimExpr) -> E.PrimExpr:
    return E.mul(x, x)


def _zero(*args: E.PrimExpr) -> tuple[E.PrimExpr, ...]:
    return tuple(_c(a, 0.0) for a in args)


def _sign(x: E.PrimExpr) -> E.PrimExpr:
    # copysign(1, x): the slope of |x| away from 0 (either one-sided slope at 0 itself)
    return _call("copysign", _c(x, 1.0), x)


def _derivatives() -> dict[str, Callable[..., tuple[E.PrimExpr, ...]]]:
    ln2, ln10 = math.log(2.0), math.log(10.0)

    def one_minus_sq(x):
        return E.sub(_c(x, 1.0), _sq(x))

    def pow_(x, y):
        return (E.mul(y, _call("pow", x, E.sub(y, _c(y, 1.0)))), E.mul(_call("pow", x, y), _call("log", x)))

    def atan2(y, x):
        r = E.add(_sq(x), _sq(y))
        return E.true_div(x, r), E.true_div(E.neg(y), r)

    def hypot(a, b):
        h = _call("hypot", a, b)
        return E.true_div(a, h), E.true_div(b, h)

    def sigmoid(x):
        s = _call("sigmoid", x)
        return (E.mul(s, E.sub(_c(x, 1.0), s)),)

    return {
        "exp": lambda x: (_call("exp", x),),
        "exp2": lambda x: (E.mul(_call("exp2", x), _c(x, ln2)),),
        "exp10": lambda x: (E.mul(_call("exp10", x), _c(x, ln10)),),
        "expm1": lambda x: (_call("exp", x),),
        "log": lambda x: (_recip(x),),
        "log2": lambda x: (_recip(E.mul(x, _c(x, ln2))),),
        "log10": lambda x: (_recip(E.mul(x, _c(x, ln10))),),
        "log1p": lambda x: (_recip(E.add(x, _c(x, 1.0))),),
        "sqrt": lambda x: (E.true_div(_c(x, 0.5), _call("sqrt", x)),),
        "rsqrt": lambda x: (E.true_div(E.mul(_c(x, -0.5), _call("rsqrt", x)), x),),
        "cbrt": lambda x: (_recip(E.mul(_c(x, 3.0), _sq(_call("cbrt", x)))),),
        "sin": lambda x: (_call("cos", x),),
        "cos": lambda x: (E.neg(_call("sin", x)),),
        "tan": lambda x: (_recip(_sq(_call("cos", x))),),
        "asin": lambda x: (_call("rsqrt", one_minus_sq(x)),),
        "acos": lambda x: (E.neg(_call("rsqrt", one_minus_sq(x))),),
        "atan": lambda x: (_recip(E.add(_c(x, 1.0), _sq(x))),),
        "sinh": lambda x: (_call("cosh", x),),
        "cosh": lambda x: (_call("sinh", x),),
        "tanh": lambda x: (one_minus_sq(_call("tanh", x)),),
        "asinh": lambda x: (_call("rsqrt", E.add(_sq(x), _c(x, 1.0))),),
        "acosh": lambda x: (_call("rsqrt", E.sub(_sq(x), _c(x, 1.0))),),
        "atanh": lambda x: (_recip(one_minus_sq(x)),),
        "sigmoid": sigmoid,
        "erf": lambda x: (E.mul(_c(x, 2.0 / math.sqrt(math.pi)), _call("exp", E.neg(_sq(x)))),),
        "pow": pow_,
        "fmod": lambda a, b: (_c(a, 1.0), E.neg(_call("trunc", E.true_div(a, b)))),
        "atan2": atan2,
        "hypot": hypot,
        "copysign": lambda a, b: (E.mul(_sign(a), _sign(b)), _c(b, 0.0)),
        "fabs": lambda x: (_sign(x),),
        "abs": lambda x: (_sign(x),),
        **{n: _zero for n in ("floor", "ceil", "round", "nearbyint", "trunc")},
    }


def _table() -> dict[str, Intrinsic]:
    deriv = _derivatives()
    return {i.name: replace(i, derivative=deriv.get(i.name)) for i in _entries()}


INTRINSICS: dict[str, Intrinsic] = _table()
PREDICATES = tuple(n for n, i in INTRINSICS.items() if i.rule == "predicate")


def lookup(name: str) -> Intrinsic | None:
    """The entry for ``name`` (TVM's ``tir.`` prefix accepted), or None."""
    return INTRINSICS.get(name.removeprefix("tir."))


def c_spelling(name: str, dtype_bits: int, args: list[str]) -> str:
    """The C text of a float intrinsic over already printed arguments (float32 unless 64 bits)."""
    return INTRINSICS[name].c.format(*args, f="" if dtype_bits == 64 else "f")


__all__ = ["ADDRESS_OPS", "EXTERN_CALLS", "INTRINSICS", "PREDICATES", "VARIADIC", "Intrinsic", "c_spelling", "lookup", "np_popcount"]
