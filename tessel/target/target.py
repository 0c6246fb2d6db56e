"""What a kernel is compiled for, as a value: the target's kind, vector width, features, compiler.

A :class:`Target` is handed to the passes and to the code generators; none of them asks the
machine anything. Fields left ``None`` mean "as the host has it" and are filled in by
:func:`tessel.target.resolve` (the driver does that once per build), so
``Target(vector_bytes=64)`` is the host with 64-byte vectors, which GCC's vector extensions
compile on an AVX2 machine too (as pairs of 32-byte operations).

Strings name targets the way TVM's do: ``"c"``, ``"python"``,
``"c -mcpu=skylake-avx512 -vector-bytes=32"``.

Besides what the code generators read (kind, width, features, compiler), a Target carries
what a *schedule* is derived from: how many vector registers there are (counted in vectors of
the target's width), how many FMA pipes a core has, and the sizes of the data caches
(:mod:`tessel.target.tiles` turns them into register tiles and cache blocks). They are part of
the Target's identity (equality, its string) but not of the key the generated code is
remembered under: no pass reads them, so they change code only through the schedule, whose
lowered IR is in that key already.
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass, replace

from ..errors import BuildError

KINDS = ("c", "python", "cuda", "cuda-sim")  # the kinds with a backend here (tessel.target.backends)
# features the passes and generators consult (others are recorded, for the memo key and for users)
STREAMING_STORES = "streaming_stores"  # non-temporal vector stores after an alignment peel (x86)
_OPTIONS = ("-mcpu", "-vector-bytes", "-vector-registers", "-fma-units", "-caches", "-features", "-cc",
            "-cflags", "-device", "-arch")
CUDA_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")  # -arch= of the cuda target (kept in Target.mcpu)
# what a schedule derived from a target assumes where the target leaves a field open and no
# host fills it in (a target described but not resolved): a common x86-64/AArch64 core
DEFAULT_VECTOR_REGISTERS = 16
DEFAULT_FMA_UNITS = 2
DEFAULT_CACHES = (32 << 10, 512 << 10, 8 << 20)  # L1d and L2 per core, L3 shared
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


@dataclass(frozen=True)
class Target:
    """``kind``: which code generator and runtime ("c" or "python"); ``vector_bytes``: bytes in
    one vector register the vectorize pass plans for; ``features``: ISA and runtime features
    (``avx2``, ``avx512f``, ``fma``, ``openmp``, ``streaming_stores``, ...); ``mcpu``: the CPU
    kernels are compiled for (``-march=``; None: this machine's); ``compiler``: the C compiler
    (None: ``$CC``, else cc/gcc/clang); ``flags``: extra compiler flags; ``device``: where the
    kernel runs. For schedules: ``vector_registers``, architectural vector registers counted in
    vectors of ``vector_bytes`` (16 on AVX2, 32 on AVX-512 and AArch64; 8 for 64-byte vectors
    on AVX2, which GCC splits in pairs); ``fma_units``, vector FMA pipes per core;
    ``caches``, bytes of L1 data cache and L2 per core and of L3, ``(l1d, l2, l3)``."""

    kind: str = "c"
    vector_bytes: int | None = None
    features: frozenset[str] | None = None
    mcpu: str | None = None
    compiler: str | None = None
    flags: tuple[str, ...] = ()
    device: str = "cpu"
    vector_registers: int | None = None
    fma_units: int | None = None
    caches: tuple[int, int, int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.replace("-", "_").isidentifier():
            raise BuildError(f"target kind {self.kind!r} is not a name; valid targets: {', '.join(KINDS)}")
        if self.kind.startswith("cuda") and self.mcpu is not None and self.mcpu not in CUDA_ARCHS:
            # the architecture becomes nvcc's -arch: checked here, whichever way the Target was made
            raise BuildError(f"target {self.kind!r}: architecture {self.mcpu!r} is not supported; use -arch= one "
                             f"of {', '.join(CUDA_ARCHS)}")
        if self.vector_bytes is not None:
            n = self.vector_bytes
            if isinstance(n, bool) or not isinstance(n, int) or n < 8 or n & (n - 1):
                raise BuildError(f"target {self.kind!r}: vector_bytes={n!r} must be a power of two >= 8 "
                                 "(16: SSE/NEON, 32: AVX2, 64: AVX-512)")
        if self.features is not None and not isinstance(self.features, frozenset):
            object.__setattr__(self, "features", frozenset(self.features))
        if not isinstance(self.flags, tuple):
            object.__setattr__(self, "flags", tuple(self.flags))
        for name, low in (("vector_registers", 2), ("fma_units", 1)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < low):
                raise BuildError(f"target {self.kind!r}: {name}={v!r} must be a whole number >= {low}")
        if self.caches is not None:
            c = tuple(self.caches) if isinstance(self.caches, list | tuple) else ()
            if len(c) != 3 or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in c):
                raise BuildError(f"target {self.kind!r}: caches={self.caches!r} must be three positive byte "
                                 "counts (L1d, L2, L3), e.g. (32768, 524288, 33554432)")
            object.__setattr__(self, "caches", c)

    def has(self, feature: str) -> bool:
        return feature in (self.features or ())

    @property
    def streaming_stores(self) -> bool:
        """Whether large outputs may be written past the caches (after an alignment peel)."""
        return self.has(STREAMING_STORES)

    def lanes(self, element_bits: int) -> int:
        """Lanes of one vector register for elements of ``element_bits`` bits (at least 2)."""
        return max((self.vector_bytes or 16) * 8 // element_bits, 2)

    def vector_lanes(self, dtype: str = "float32") -> int:
        """Lanes of one vector register for ``dtype`` (8 float32 on AVX2, 16 on AVX-512): what
        a schedule splits a vectorized axis by, so the vectorize pass leaves no tail inside."""
        from ..ir.dtype import dtype as as_dtype

        return self.lanes(as_dtype(dtype).bits)

    @property
    def registers(self) -> int:
        """Vector registers (of this target's width) a schedule may plan for."""
        return self.vector_registers or DEFAULT_VECTOR_REGISTERS

    @property
    def fma_pipes(self) -> int:
        return self.fma_units or DEFAULT_FMA_UNITS

    @property
    def l1d_bytes(self) -> int:
        return (self.caches or DEFAULT_CACHES)[0]

    @property
    def l2_bytes(self) -> int:
        return (self.caches or DEFAULT_CACHES)[1]

    @property
    def l3_bytes(self) -> int:
        return (self.caches or DEFAULT_CACHES)[2]

    def describe(self) -> str:
        """The target as a canonical string (what the memo of generated code is keyed by)."""
        parts = [self.kind]
        if self.mcpu:
            parts.append(f"-arch={self.mcpu}" if self.kind.startswith("cuda") else f"-mcpu={self.mcpu}")
        if self.vector_bytes is not None:
            parts.append(f"-vector-bytes={self.vector_bytes}")
        if self.vector_registers is not None:
            parts.append(f"-vector-registers={self.vector_registers}")
        if self.fma_units is not None:
            parts.append(f"-fma-units={self.fma_units}")
        if self.caches is not None:
            parts.append(f"-caches={','.join(_size_text(c) for c in self.caches)}")
        if self.features is not None:
            parts.append(f"-features={','.join(sorted(self.features))}")
        if self.compiler:
            parts.append(f"-cc={shlex.quote(self.compiler)}")
        if self.flags:
            parts.append(f"-cflags={shlex.quote(' '.join(self.flags))}")
        if self.device != "cpu":
            parts.append(f"-device={self.device}")
        return " ".join(parts)

    __str__ = describe

    def with_(self, **changes) -> Target:
        return replace(self, **changes)


def _size_text(n: int) -> str:
    for unit, mult in (("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def _int_option(text: str, key: str, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise BuildError(f"target {text!r}: {key} needs {what}, got {value!r}") from None


def _caches_option(text: str, value: str) -> tuple[int, ...]:
    """``32K,512K,32M`` (or plain bytes) as three byte counts."""
    out = []
    for word in value.split(","):
        w = word.strip().lower().removesuffix("ib").removesuffix("b")
        unit = w[-1:] if w[-1:] in _UNITS and not w[-1:].isdigit() else ""
        digits = w[: len(w) - len(unit)]
        if not digits.isdigit():
            raise BuildError(f"target {text!r}: -caches needs three sizes L1d,L2,L3 such as 32K,512K,32M; "
                             f"got {value!r}")
        out.append(int(digits) * _UNITS[unit])
    return tuple(out)


@functools.lru_cache(maxsize=64)  # a build parses its target string every time
def parse(text: str) -> Target:
    """A target from its string form: a kind, then ``-option=value`` words (see :data:`_OPTIONS`)."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise BuildError(f"target string {text!r} does not parse: {e}") from None
    if not words:
        raise BuildError(f"empty target string; valid targets: {', '.join(KINDS)}")
    kind, opts = words[0], {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if key not in _OPTIONS or not eq:
            raise BuildError(f"target {text!r}: unknown option {w!r}; options are "
                             f"{', '.join(o + '=...' for o in _OPTIONS)}")
        opts[key] = value
    fields: dict = {}
    if "-vector-bytes" in opts:
        try:
            fields["vector_bytes"] = int(opts["-vector-bytes"])
        except ValueError:
            raise BuildError(f"target {text!r}: -vector-bytes needs a number of bytes (16, 32, 64)") from None
    if "-vector-registers" in opts:
        fields["vector_registers"] = _int_option(text, "-vector-registers", opts["-vector-registers"],
                                                 "a number of registers (16 on AVX2, 32 on AVX-512)")
    if "-fma-units" in opts:
        fields["fma_units"] = _int_option(text, "-fma-units", opts["-fma-units"], "a number of FMA pipes (1, 2)")
    if "-caches" in opts:
        fields["caches"] = _caches_option(text, opts["-caches"])
    if "-features" in opts:
        fields["features"] = frozenset(f for f in opts["-features"].split(",") if f)
    if "-mcpu" in opts:
        fields["mcpu"] = opts["-mcpu"]
    if "-cc" in opts:
        fields["compiler"] = opts["-cc"]
    if "-cflags" in opts:
        fields["flags"] = tuple(shlex.split(opts["-cflags"]))
    if "-device" in opts:
        fields["device"] = opts["-device"]
    if "-arch" in opts:
        fields["mcpu"] = _arch_option(text, kind, opts["-arch"])
    return Target(kind, **fields)


def _arch_option(text: str, kind: str, value: str) -> str:
    """``-arch=sm_80``: the GPU architecture a cuda target compiles for."""
    if not kind.startswith("cuda"):
        raise BuildError(f"target {text!r}: -arch is an option of the cuda target; a CPU target takes -mcpu")
    if value not in CUDA_ARCHS:
        raise BuildError(f"target {text!r}: -arch={value} is not supported; use one of {', '.join(CUDA_ARCHS)}")
    return value


def as_target(target: str | Target | None) -> Target:
    """What a user may pass as ``target=``: a Target, a target string, or None (the C target)."""
    if target is None:
        return Target()
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return parse(target)
    raise BuildError(f"target must be a string such as 'c' or 'python', or a tessel.target.Target; "
                     f"got {target!r}")
