"""Finding and driving the system C compiler.

What the compiler can do (``-march=native``, OpenMP, ``_Float16``) is probed once per
compiler binary and remembered on disk next to the kernel cache, keyed by the binary's path,
size and modification time: a new process that finds its kernels cached must not pay for
spawning the compiler just to ask it questions. Every failure becomes a
:class:`~tessel.errors.BuildError` that shows the compiler's own message and the lines of
generated source it points at.

``$TESSEL_SANITIZE`` (``address``, ``undefined`` or both, comma-separated) builds every kernel
with those sanitizers (see :func:`sanitize_flags`): the fuzzer's mode that catches a kernel
writing outside a temporary or computing with undefined behaviour even where the values come
out right. The sanitizer's runtime must be loaded first: run Python under
``LD_PRELOAD=$(cc -print-file-name=libasan.so)`` (:func:`sanitizer_preload` gives it).

Every run of the compiler is bounded by ``$TESSEL_CC_TIMEOUT`` seconds (default 300). The
compiler starts in a session of its own, so a timeout ends it and everything it started
(``cc1``, ``as``). A compiler that timed out is not asked again by this process while the same
time passes (one hang costs one timeout, not one per probe), and nothing it failed to answer is
remembered: a later build asks again.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BuildError, TesselWarning
from .files import (
    DEFAULT_CC_TIMEOUT_S,
    cache_dir,
    cc_timeout,
    encode_text,
    read_json,
    scratch_dir,
    write_atomic,
)

# no -fwrapv: it stops GCC vectorizing int32 index arithmetic; the generator makes data wrap instead.
# A function called without a declaration is an error, not an ``int`` guessed by the compiler: the
# generator includes <math.h> and <stdlib.h> only where the kernel's text names them (codegen/c.py).
# -fno-math-errno: no kernel reads errno, and with it set a math call is not a pure function to
# GCC: exp(-alpha) of a scalar argument was recomputed for every element (PolyBench's deriche,
# 10x slower than its C) and sqrt kept a call to libm beside its instruction. Values are the same.
BASE_FLAGS = ("-std=gnu11", "-fno-math-errno", "-fPIC", "-shared", "-Wno-unknown-pragmas",
              "-Werror=implicit-function-declaration")

# The optimisation level. A kernel whose C holds tessel's own vector code was vectorized by its
# schedule: its hot loops are vector statements already, and what GCC's loop vectorizer adds at
# -O3 is vector copies (with versioning for aliasing and masked epilogues) of the short scalar
# loops tessel left scalar on purpose (an alignment peel, a row's tail, the last combine of a
# reduction): a sixth to a third of the C compiler's time on a small kernel (softmax 162 -> 117
# ms of CPU, layernorm 179 -> 121, add 117 -> 97). Such a kernel is compiled at -O3 without it.
# Plain -O2 compiled faster still but ran layernorm 1.13-1.18x slower at one thread (the hot
# loops' code the same; -O3's other passes matter there), so it is not used. A kernel without
# vector code keeps the whole of -O3: GCC's vectorizer is then the only one it has.
# $TESSEL_CFLAGS comes last, so ``TESSEL_CFLAGS=-ftree-loop-vectorize`` gives it back.
OPT_VECTORIZED = ("-O3", "-fno-tree-loop-vectorize")
OPT_SCALAR = ("-O3",)

_PROBES = {
    # feature -> (source, extra flags, whether the result must also load into this process)
    "march_native": ("int tsl_probe(void) { return 0; }\n", ("-march=native",), False),
    "openmp": ("#include <omp.h>\nint tsl_probe(void) { return omp_get_max_threads(); }\n",
               ("-fopenmp",), True),
    "float16": ("_Float16 tsl_probe(_Float16 a, _Float16 b) { return a * b + (_Float16)1.0f; }\n",
                (), False),
    # GCC's switch for loop if-conversion (see NO_IF_CONVERT); -Werror: a compiler that only
    # warns about an optimisation flag it does not know (clang) does not have it
    "no_if_convert": ("int tsl_probe(void) { return 0; }\n", ("-fno-tree-loop-if-convert", "-Werror"), False),
}

# GCC 12 (at least) miscompiles the masked loads its loop if-conversion makes of guarded reads:
# ``for i { for j < 3 { L[j] = (i >= 2 && i < 7) ? A[3*i + j - 6] : c; } ... }`` comes out at
# -O3 with a mask of the wrong vector on one of the three grouped vector loads, so in-range
# elements read as 0 (found by tests/e2e/test_schedule_fuzz.py; -O2 and -fno-tree-loop-if-convert
# are correct). A kernel that reads under a condition (padding, guards of non-divisible splits)
# is compiled without that transformation; tessel's own vectorize pass already leaves such
# loads scalar, so only GCC's speculative vectorization of those loops is given up.
NO_IF_CONVERT = "-fno-tree-loop-if-convert"

# predefined macro -> bytes in one vector register; the first the compiler defines wins
_VECTOR_MACROS = (("__AVX512F__", 64), ("__AVX__", 32), ("__SSE2__", 16), ("__ARM_NEON", 16),
                  ("__ALTIVEC__", 16), ("__riscv_vector", 16))
DEFAULT_VECTOR_BYTES = 16


class CompilerTimeout(BuildError):
    """The C compiler did not finish within ``$TESSEL_CC_TIMEOUT`` seconds (it was stopped)."""


class NoOpenMPWarning(TesselWarning):
    """A kernel with parallel loops runs on one thread: its C compiler has no OpenMP."""


def _split(var: str, text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as e:
        raise BuildError(f"${var}={text!r} is not a valid command line ({e}); fix its quoting "
                         f"(e.g. {var}='gcc -m64') or unset it") from None


@dataclass
class Compiler:
    """One C compiler: how to call it, what it is, and what it supports."""

    argv: tuple[str, ...]
    path: str
    version: str
    features: dict[str, bool | int | dict] = field(default_factory=dict)

    def identity(self) -> str:
        return f"{self.path}\n{self.version}"

    def supports(self, feature: str) -> bool:
        if feature not in self.features:
            answer = _probe(self, feature)
            if answer is None:  # it timed out: no answer, so nothing to remember
                return False
            self.features[feature] = answer
            _save_probes(self)
        return bool(self.features[feature])

    def isa(self, march: str | None = None) -> dict:
        """What kernels compiled with ``-march=<march>`` may use (None: this machine's, when the
        compiler takes ``-march=native`` and ``$TESSEL_NO_MARCH_NATIVE`` is unset): bytes per
        vector register and ISA features, as ``{"vector_bytes": n, "features": [...]}``.

        Read from the compiler's predefined macros, so it is what the compiler will accept for
        the target, not what /proc/cpuinfo claims; remembered with the other probes.
        """
        if march is None:
            native = os.environ.get("TESSEL_NO_MARCH_NATIVE") is None and self.supports("march_native")
            march = "native" if native else ""
        key = f"isa:{march}"
        if not isinstance(self.features.get(key), dict):
            found = _probe_isa(self, march)
            if found is None:  # it timed out: answer for now, nothing remembered, ask again later
                return {"vector_bytes": DEFAULT_VECTOR_BYTES, "features": []}
            self.features[key] = found
            _save_probes(self)
        return self.features[key]

    def flags(self, *, openmp: bool = False, guarded_loads: bool = False, march: str | None = None,
              vectorized: bool = False) -> list[str]:
        """Flags for one kernel: OpenMP only when it has parallel loops (it costs a thread pool);
        no loop if-conversion when it reads memory under a condition (see NO_IF_CONVERT);
        ``-march=<march>`` when a target names its CPU, else this machine's; no loop vectorizer
        where its C holds tessel's own vector code (see OPT_VECTORIZED)."""
        out = [*BASE_FLAGS, *(OPT_VECTORIZED if vectorized else OPT_SCALAR)]
        if march:
            out.append(f"-march={march}")
        elif os.environ.get("TESSEL_NO_MARCH_NATIVE") is None and self.supports("march_native"):
            out.append("-march=native")
        if openmp and self.supports("openmp"):
            out.append("-fopenmp")
        if guarded_loads and self.supports("no_if_convert"):
            out.append(NO_IF_CONVERT)
        out += sanitize_flags()
        out += _split("TESSEL_CFLAGS", os.environ.get("TESSEL_CFLAGS", ""))
        return out

    def serial_note(self, name: str) -> str | None:
        """Why a kernel with parallel loops runs serially (None: it does not); warns once per build."""
        if self.supports("openmp"):
            return None
        note = f"runs serially: the C compiler {self.path} has no OpenMP"
        warnings.warn(NoOpenMPWarning(
            f"kernel {name!r} has parallel loops but {note} (-fopenmp failed); set CC to a compiler "
            "with OpenMP (gcc, or clang with libomp installed) to run them on several threads"), stacklevel=4)
        return note


SANITIZERS = ("address", "undefined")


def sanitizers() -> list[str]:
    """The sanitizers ``$TESSEL_SANITIZE`` names (empty: none)."""
    names = [x.strip() for x in os.environ.get("TESSEL_SANITIZE", "").split(",") if x.strip()]
    bad = [x for x in names if x not in SANITIZERS]
    if bad:
        raise BuildError(f"$TESSEL_SANITIZE names {', '.join(bad)}; it takes {' and '.join(SANITIZERS)} "
                         "(comma-separated), or unset it")
    return names


def sanitize_flags() -> list[str]:
    """Flags of ``$TESSEL_SANITIZE``'s sanitizers: every report stops the process (so a fuzzer
    sees it as the case that caused it), with frames to read the report by.

    A kernel built with AddressSanitizer loads only into a process that has its runtime: one
    started with it preloaded (:func:`sanitizer_preload`); otherwise the runtime would end the
    process on loading, so this refuses first, saying how to start it."""
    names = sanitizers()
    if not names:
        return []
    if "address" in names and not hasattr(ctypes.CDLL(None), "__asan_init"):
        raise BuildError("$TESSEL_SANITIZE=address: this process has no AddressSanitizer runtime, so a kernel built "
                         "with it cannot be loaded; start Python with LD_PRELOAD=$(cc -print-file-name=libasan.so) "
                         "and ASAN_OPTIONS=detect_leaks=0 (python -m tessel.testing.fuzz --sanitize does), or unset it")
    return [f"-fsanitize={','.join(names)}", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]


def sanitizer_preload(comp: Compiler) -> str:
    """``LD_PRELOAD`` for kernels built with AddressSanitizer: ``comp``'s ASan runtime, then its
    C++ library (empty: no ASan runtime found). Without the C++ library preloaded too, ASan's
    interceptor of ``__cxa_throw`` has nothing to forward to, and the first C++ exception in the
    process (islpy raises its errors so) stops it with a CHECK failure."""
    libs = []
    for name in ("libasan.so", "libstdc++.so"):
        res = run_tool([*comp.argv, f"-print-file-name={name}"], what=f"asking the C compiler for {name}")
        path = res.stdout.strip()
        if res.returncode == 0 and os.path.isabs(path) and os.path.exists(path):
            libs.append(path)
        elif name == "libasan.so":
            return ""
    return " ".join(libs)


_LOCK = threading.Lock()
_FOUND: dict[str, Compiler] = {}


def find_compiler(cc: str | None = None) -> Compiler:
    """The compiler ``cc`` (a target's), else the one named by ``$CC``, else the first of cc,
    gcc, clang on PATH."""
    cc_env = (cc if cc else os.environ.get("CC", "")).strip()
    with _LOCK:
        if cc_env in _FOUND:
            return _FOUND[cc_env]
        comp = _locate(cc_env)
        _FOUND[cc_env] = comp
        return comp


def _locate(cc_env: str) -> Compiler:
    if cc_env:
        argv = _split("CC", cc_env)
        path = shutil.which(argv[0]) if argv[0] else None
        if path is None:
            raise BuildError(
                f"the C compiler {argv[0]!r} named by $CC was not found; set CC to a C compiler "
                "(cc, gcc, clang) or build with target='python'"
            )
    else:
        for name in ("cc", "gcc", "clang"):
            path = shutil.which(name)
            if path:
                argv = [name]
                break
        else:
            raise BuildError(
                "no C compiler found (tried $CC, cc, gcc, clang on PATH); install one or build "
                "with target='python'"
            )
    argv = [path, *argv[1:]]
    stat = os.stat(path)
    stamp = f"{' '.join(argv)}|{stat.st_size}|{stat.st_mtime_ns}"
    saved = _saved(stamp)
    if saved:
        return Compiler(tuple(argv), path, *saved)
    version = run_tool([*argv, "--version"], what="asking the C compiler for its version").stdout.strip()
    comp = Compiler(tuple(argv), path, version)
    _save_probes(comp)
    return comp


_HUNG: dict[str, tuple[float, str]] = {}  # compiler -> (until when it is not asked again, what timed out)


def run_tool(cmd: list[str], *, what: str, cwd: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the compiler in a session of its own; on timeout stop the whole session."""
    timeout = cc_timeout()
    hung = _HUNG.get(cmd[0])
    if hung and time.monotonic() < hung[0]:
        raise CompilerTimeout(f"{what}: not run, because {cmd[0]!r} did not finish within {timeout:g} s "
                              f"a moment ago ({hung[1]}); {_TIMEOUT_ADVICE}")
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, text=True,
                                encoding="utf-8", errors="replace", start_new_session=True)
    except OSError as e:
        raise BuildError(f"{what}: cannot run {cmd[0]!r} ({e.strerror or e})") from None
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        _HUNG[cmd[0]] = (time.monotonic() + timeout, what)
        raise CompilerTimeout(f"{what}: {cmd[0]!r} did not finish within {timeout:g} s, so it was stopped "
                              f"with every process it started; {_TIMEOUT_ADVICE}") from None
    except BaseException:  # KeyboardInterrupt: no compiler left running behind the user's back
        _stop(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


_TIMEOUT_ADVICE = ("if the compiler is merely slow (a large unrolled kernel), raise $TESSEL_CC_TIMEOUT "
                   f"(seconds, default {DEFAULT_CC_TIMEOUT_S:g}); otherwise check $CC")


def _stop(proc: subprocess.Popen) -> None:
    """Kill the compiler's whole session (cc1 and as too), then collect it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):  # already gone, or no process groups (not POSIX)
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a descendant left the session and holds the pipes open
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.wait()


def _probe(comp: Compiler, feature: str) -> bool | None:
    """Whether the compiler has ``feature``; None if it could not tell in time (ask again later)."""
    source, flags, load = _PROBES[feature]
    with scratch_dir("tessel-probe-") as tmp:
        src = Path(tmp, "probe.c")
        src.write_text(source)
        out = Path(tmp, "probe.so")
        cmd = [*comp.argv, "-fPIC", "-shared", *flags, str(src), "-o", str(out)]
        try:
            res = run_tool(cmd, what=f"probing the C compiler for {feature}")
        except CompilerTimeout:
            return None
        except BuildError:
            return False
        if res.returncode != 0 or not out.exists():
            return False
        if load:
            try:
                ctypes.CDLL(str(out))
            except OSError:
                return False
    return True


# predefined macro -> the feature name a Target records
_FEATURE_MACROS = {"__SSE2__": "sse2", "__AVX__": "avx", "__AVX2__": "avx2", "__FMA__": "fma",
                   "__AVX512F__": "avx512f", "__ARM_NEON": "neon", "__x86_64__": "x86_64",
                   "__aarch64__": "aarch64"}


def _probe_isa(comp: Compiler, march: str) -> dict | None:
    cmd = [*comp.argv, "-dM", "-E", "-x", "c", "-"]
    if march:
        cmd.insert(len(comp.argv), f"-march={march}")
    try:
        res = run_tool(cmd, what="asking the C compiler for its vector width and features", stdin="")
    except CompilerTimeout:
        return None
    except BuildError:
        return {"vector_bytes": DEFAULT_VECTOR_BYTES, "features": []}
    if res.returncode != 0 and march not in ("", "native"):
        raise BuildError(f"the C compiler {comp.path} does not know the CPU -march={march} of the target: "
                         f"{res.stderr.strip()[:400]}; name one it knows (e.g. -mcpu=skylake-avx512) or drop -mcpu")
    defined = {ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("#define ") and len(ln.split()) > 1}
    return {"vector_bytes": next((n for m, n in _VECTOR_MACROS if m in defined), DEFAULT_VECTOR_BYTES),
            "features": sorted(f for m, f in _FEATURE_MACROS.items() if m in defined)}


def _probe_file() -> Path:
    return cache_dir() / "compilers.json"


def _load_probes() -> dict:
    try:
        data = read_json(_probe_file())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _saved(stamp: str) -> tuple[str, dict[str, bool | int]] | None:
    """The remembered version and features of a compiler; a damaged record is ignored (and
    answers that do not have the right type are asked again)."""
    entry = _load_probes().get(stamp)
    if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
        return None
    features = entry.get("features")
    features = features if isinstance(features, dict) else {}
    return entry["version"], {k: v for k, v in features.items() if _valid_answer(k, v)}


def _valid_answer(feature: str, value: object) -> bool:
    if feature in _PROBES:
        return type(value) is bool
    if feature.startswith("isa:"):  # Compiler.isa: {"vector_bytes": n, "features": [...]}
        if not isinstance(value, dict):
            return False
        n, feats = value.get("vector_bytes"), value.get("features")
        return (type(n) is int and n >= 8 and not n & (n - 1) and isinstance(feats, list)
                and all(isinstance(f, str) for f in feats))
    return False


def _save_probes(comp: Compiler) -> None:
    """Remember a compiler's answers; losing a race with another process only costs a re-probe."""
    try:
        stat = os.stat(comp.path)
        stamp = f"{' '.join(comp.argv)}|{stat.st_size}|{stat.st_mtime_ns}"
        data = _load_probes()
        data[stamp] = {"version": comp.version, "features": comp.features}
        path = _probe_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1))
    except OSError:
        pass


def compile_shared(comp: Compiler, source: str, out_path: str, flags: list[str], name: str,
                   object_only: bool = False) -> None:
    """Compile ``source`` into the shared object ``out_path`` (``object_only``: an object file
    to link later, TVM's ``Module.save``), or raise BuildError.

    ``name`` is the user's kernel name: it appears in messages only, never in a path or argument
    (a name is data: ``-v``, ``../../x`` or ``/etc/x`` must not become options or file names)."""
    with scratch_dir("tessel-cc-") as tmp:
        # a fixed relative file name keeps the object file identical across processes
        fname = "kernel.c"
        Path(tmp, fname).write_bytes(encode_text(source))
        if object_only:
            cmd = [*comp.argv, *(f for f in flags if f != "-shared"), "-c", fname, "-o", os.path.abspath(out_path)]
        else:
            cmd = [*comp.argv, *flags, fname, "-o", os.path.abspath(out_path), "-lm"]
        res = run_tool(cmd, what=f"compiling kernel {name!r}", cwd=tmp)
    if res.returncode != 0 or not os.path.exists(out_path) or os.path.getsize(out_path) == 0:
        message = (res.stderr or res.stdout).strip() or (
            f"(no message; exit status {res.returncode}, and no shared object was written: "
            "is $CC a C compiler?)")
        raise BuildError(format_compile_error(name, fname, source, cmd, message))


def format_compile_error(name: str, fname: str, source: str, cmd: list[str], message: str,
                         context: int = 2, max_places: int = 5) -> str:
    """The compiler's message followed by the numbered source lines it refers to."""
    lines = source.splitlines()
    places: list[int] = []
    for m in re.finditer(rf"{re.escape(fname)}:(\d+)", message):
        n = int(m.group(1))
        if n not in places:
            places.append(n)
    shown: set[int] = set()
    for n in places[:max_places]:
        shown.update(range(max(1, n - context), min(len(lines), n + context) + 1))
    if not places:  # nothing to point at: show the start of the source
        shown = set(range(1, min(len(lines), 40) + 1))
    out = [f"the C compiler failed on kernel {name!r}", f"command: {shlex.join(cmd)}",
           "compiler output:", message.rstrip()[:4000], f"source ({fname}):"]
    prev = 0
    for n in sorted(shown):
        if prev and n != prev + 1:
            out.append("  ...")
        mark = ">>" if n in places else "  "
        out.append(f"{mark}{n:5d} | {lines[n - 1]}")
        prev = n
    return "\n".join(out)
