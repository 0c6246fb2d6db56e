"""This machine as a Target, and targets completed with what the host knows.

The vector width and ISA features come from the C compiler's predefined macros for the CPU
kernels are compiled for (``-march=native``, or the target's ``-mcpu``): what the compiler
will accept, not what /proc/cpuinfo claims. The answer is remembered on disk with the
compiler's other probes, so a process that finds its kernels cached spawns no compiler.
"""

from __future__ import annotations

import os
import shlex
import threading

from ..errors import BuildError
from ..runtime.compiler import DEFAULT_VECTOR_BYTES, find_compiler
from .target import STREAMING_STORES, Target

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
        vb = target.vector_bytes or _env_vector_bytes() or host().vector_bytes
        done = target.with_(vector_bytes=vb, features=target.features if target.features is not None else frozenset())
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
        return target.with_(vector_bytes=target.vector_bytes or _env_vector_bytes() or DEFAULT_VECTOR_BYTES,
                            features=target.features if target.features is not None else frozenset())
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
    return target.with_(vector_bytes=vb, features=features, compiler=target.compiler or shlex.join(comp.argv))


def clear() -> None:
    """Forget resolved targets (a test that changes the compiler or the environment)."""
    with _LOCK:
        _RESOLVED.clear()
