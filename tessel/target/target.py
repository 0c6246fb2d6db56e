"""What a kernel is compiled for, as a value: the target's kind, vector width, features, compiler.

A :class:`Target` is handed to the passes and to the code generators; none of them asks the
machine anything. Fields left ``None`` mean "as the host has it" and are filled in by
:func:`tessel.target.resolve` (the driver does that once per build), so
``Target(vector_bytes=64)`` is the host with 64-byte vectors, which GCC's vector extensions
compile on an AVX2 machine too (as pairs of 32-byte operations).

Strings name targets the way TVM's do: ``"c"``, ``"python"``,
``"c -mcpu=skylake-avx512 -vector-bytes=32"``.
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass, replace

from ..errors import BuildError

KINDS = ("c", "python")  # the kinds with a backend here (tessel.target.backends)
# features the passes and generators consult (others are recorded, for the memo key and for users)
STREAMING_STORES = "streaming_stores"  # non-temporal vector stores after an alignment peel (x86)
_OPTIONS = ("-mcpu", "-vector-bytes", "-features", "-cc", "-cflags", "-device")


@dataclass(frozen=True)
class Target:
    """``kind``: which code generator and runtime ("c" or "python"); ``vector_bytes``: bytes in
    one vector register the vectorize pass plans for; ``features``: ISA and runtime features
    (``avx2``, ``avx512f``, ``fma``, ``openmp``, ``streaming_stores``, ...); ``mcpu``: the CPU
    kernels are compiled for (``-march=``; None: this machine's); ``compiler``: the C compiler
    (None: ``$CC``, else cc/gcc/clang); ``flags``: extra compiler flags; ``device``: where the
    kernel runs."""

    kind: str = "c"
    vector_bytes: int | None = None
    features: frozenset[str] | None = None
    mcpu: str | None = None
    compiler: str | None = None
    flags: tuple[str, ...] = ()
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.isidentifier():
            raise BuildError(f"target kind {self.kind!r} is not a name; valid targets: {', '.join(KINDS)}")
        if self.vector_bytes is not None:
            n = self.vector_bytes
            if isinstance(n, bool) or not isinstance(n, int) or n < 8 or n & (n - 1):
                raise BuildError(f"target {self.kind!r}: vector_bytes={n!r} must be a power of two >= 8 "
                                 "(16: SSE/NEON, 32: AVX2, 64: AVX-512)")
        if self.features is not None and not isinstance(self.features, frozenset):
            object.__setattr__(self, "features", frozenset(self.features))
        if not isinstance(self.flags, tuple):
            object.__setattr__(self, "flags", tuple(self.flags))

    def has(self, feature: str) -> bool:
        return feature in (self.features or ())

    @property
    def streaming_stores(self) -> bool:
        """Whether large outputs may be written past the caches (after an alignment peel)."""
        return self.has(STREAMING_STORES)

    def lanes(self, element_bits: int) -> int:
        """Lanes of one vector register for elements of ``element_bits`` bits (at least 2)."""
        return max((self.vector_bytes or 16) * 8 // element_bits, 2)

    def describe(self) -> str:
        """The target as a canonical string (what the memo of generated code is keyed by)."""
        parts = [self.kind]
        if self.mcpu:
            parts.append(f"-mcpu={self.mcpu}")
        if self.vector_bytes is not None:
            parts.append(f"-vector-bytes={self.vector_bytes}")
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
    return Target(kind, **fields)


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
