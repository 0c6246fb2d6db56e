"""This machine as a Target, and targets completed with what the host knows.

The vector width and ISA features come from the C compiler's predefined macros for the CPU
kernels are compiled for (``-march=native``, or the target's ``-mcpu``): what the compiler
will accept, not what /proc/cpuinfo claims. The answer is remembered on disk with the
compiler's other probes, so a process that finds its kernels cached spawns no compiler.

What schedules are derived from follows: the number of vector registers and of FMA pipes from
the ISA (architectural facts: x86-64 has 16 vector registers, 32 with AVX-512; AArch64 has
32), the cache sizes from sysfs, else ``sysconf``, else common sizes.
"""

from __future__ import annotations

import functools
import os
import shlex
import threading
from pathlib import Path

from ..errors import BuildError
from ..runtime.compiler import DEFAULT_VECTOR_BYTES, find_compiler
from .target import DEFAULT_CACHES, STREAMING_STORES, Target

_LOCK = threading.Lock()
_RESOLVED: dict[tuple, Target] = {}


def _env_vector_bytes() -> int | None:
    """``$TESSEL_VECTOR_BYTES``: overrides the probed width of targets that do not set one."""
    env = os.environ.get("TESSEL_VECTOR_BYTES", "").strip()
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        raise BuildError(f"TESSEL_VECTOR_BYTES={env!r} is not a number of bytes (e.g. 16, 32, 64)") from None
    if n < 8 or n & (n - 1):
        raise BuildError(f"TESSEL_VECTOR_BYTES={env!r} must be a power of two >= 8")
    return n


def host() -> Target:
    """The C target for this machine: its compiler, vector width and features (probed once)."""
    return resolve(Target())


def resolve(target: Target) -> Target:
    """``target`` with every field it leaves open (None) filled in from the host.

    The python target plans vectors like the host's C target (so the reference runs the very
    IR the C backend is checked against) but has no machine features: no streaming stores, no
    alignment to respect."""
    key = (target, os.environ.get("CC"), os.environ.get("TESSEL_NO_MARCH_NATIVE"),
           os.environ.get("TESSEL_VECTOR_BYTES"))
    with _LOCK:
        done = _RESOLVED.get(key)
    if done is not None:
        return done
    if target.kind == "python":
        h = host()
        vb = target.vector_bytes or _env_vector_bytes() or h.vector_bytes
        done = _complete(target.with_(vector_bytes=vb, features=target.features if target.features is not None
                                      else frozenset()), h.features or frozenset(), h.vector_bytes)
    elif target.kind in ("cuda", "cuda-sim"):  # a GPU: 16-byte vectors (float4), the architecture asked for
        done = _complete(target.with_(vector_bytes=target.vector_bytes or 16, mcpu=target.mcpu or "sm_80",
                                      features=target.features if target.features is not None else frozenset()),
                         frozenset(), 16)
    else:
        done = _resolve_c(target)
    with _LOCK:
        _RESOLVED[key] = done
    return done


def _resolve_c(target: Target) -> Target:
    try:
        comp = find_compiler(target.compiler)
    except BuildError:
        if target.compiler:
            raise
        # no compiler: the target can still be described (and lowered for); building will say why not
        vb = target.vector_bytes or _env_vector_bytes() or DEFAULT_VECTOR_BYTES
        return _complete(target.with_(vector_bytes=vb, features=target.features if target.features is not None
                                      else frozenset()), frozenset(), DEFAULT_VECTOR_BYTES)
    isa = comp.isa(target.mcpu)
    features = target.features
    if features is None:
        found = set(isa["features"])
        if comp.supports("openmp"):
            found.add("openmp")
        if "sse2" in found:  # non-temporal stores need x86's movnt; elsewhere they are ordinary stores
            found.add(STREAMING_STORES)
        features = frozenset(found)
    vb = target.vector_bytes or _env_vector_bytes() or int(isa["vector_bytes"])
    done = target.with_(vector_bytes=vb, features=features, compiler=target.compiler or shlex.join(comp.argv))
    return _complete(done, frozenset(isa["features"]), int(isa["vector_bytes"]))


def _complete(target: Target, isa: frozenset[str], native_bytes: int) -> Target:
    """Fill the fields schedules are derived from: ``isa`` is what the CPU the kernels are
    compiled for has (the target's own features may be fewer), ``native_bytes`` its widest vector."""
    regs = target.vector_registers
    if regs is None:
        regs = isa_registers(isa)
        if target.vector_bytes and target.vector_bytes > native_bytes:  # GCC splits wide vectors in pairs
            regs = max(regs * native_bytes // target.vector_bytes, 2)
    return target.with_(vector_registers=regs, fma_units=target.fma_units or isa_fma_units(isa),
                        caches=target.caches or cache_sizes())


def isa_registers(features: frozenset[str] | set[str]) -> int:
    """Architectural vector registers of an ISA: 32 with AVX-512 and on AArch64, 16 on x86-64
    (SSE, AVX), 8 on 32-bit x86, 16 elsewhere (ARMv7 NEON's q registers)."""
    if "avx512f" in features or "aarch64" in features:
        return 32
    if "sse2" in features and "x86_64" not in features:
        return 8
    return 16


def isa_fma_units(features: frozenset[str] | set[str]) -> int:
    """Vector FMA pipes per core: two on the x86 cores with FMA and on AArch64 server and
    desktop cores; one multiply-add path without FMA (a separate multiplier and adder)."""
    return 2 if {"fma", "avx512f", "aarch64"} & set(features) else 1


@functools.cache
def cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, L3) in bytes of the first CPU: sysfs, else ``sysconf``, else common sizes."""
    found = _sysfs_caches() or {}
    names = {1: "SC_LEVEL1_DCACHE_SIZE", 2: "SC_LEVEL2_CACHE_SIZE", 3: "SC_LEVEL3_CACHE_SIZE"}
    out = []
    for level in (1, 2, 3):
        size = found.get(level, 0)
        if size <= 0 and names[level] in getattr(os, "sysconf_names", {}):
            try:
                size = int(os.sysconf(names[level]))
            except (OSError, ValueError):
                size = 0
        out.append(size if size > 0 else DEFAULT_CACHES[level - 1])
    return out[0], out[1], out[2]


def _sysfs_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[int, int]:
    """Level -> bytes of the data (or unified) caches sysfs lists for one CPU."""
    out: dict[int, int] = {}
    try:
        entries = sorted(Path(root).glob("index*"))
    except OSError:
        return out
    for d in entries:
        try:
            level = int((d / "level").read_text())
            kind = (d / "type").read_text().strip()
            text = (d / "size").read_text().strip().upper()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not text:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            out[level] = int(digits) * mult
    return out


def clear() -> None:
    """Forget resolved targets (a test that changes the compiler or the environment)."""
    with _LOCK:
        _RESOLVED.clear()
