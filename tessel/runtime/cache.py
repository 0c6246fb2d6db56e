"""The on-disk cache of compiled kernels.

An entry is ``<key>.so`` plus a ``<key>.json`` sidecar holding the object's size and sha256;
the key hashes everything that determines the object (source, compiler identity, flags), and
file names are made of the key alone (never of a user's name). An entry is trusted only when the
sidecar matches the bytes, so a truncated, corrupt or damaged entry is rebuilt rather than handed
to the dynamic loader. Writers compile into a temporary file in the cache directory and
``os.replace`` it into place, under a per-key lock (see :mod:`.files`): two processes building
the same kernel at once both succeed, and only one of them runs the compiler.

A loaded library stays loaded while something refers to it (a kernel, or a function pointer
taken from it) and is unloaded (``dlclose``) when nothing does: a program that builds thousands
of candidate kernels does not keep thousands of libraries mapped.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import platform
import re
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError
from ..ir.functor import forget_hashes
from .compiler import Compiler, compile_shared
from .files import (
    cache_dir,
    encode_text,
    key_lock,
    note_written,
    owner_tag,
    read_json,
    read_regular,
    sweep_leftovers,
    touch,
    write_atomic,
)

__all__ = ["Library", "cache_dir", "cache_key", "clear_memory_cache", "load_lowered", "load_or_build",
           "store_lowered"]

_VERSION = "1"  # bump when the layout of entries or the calling convention changes


def cache_key(source: str, comp: Compiler, flags: list[str]) -> str:
    h = hashlib.sha256()
    # -march=native code may not run on another CPU sharing this cache directory (NFS homes)
    cpu = host_cpu() if "-march=native" in flags else ""
    for part in (_VERSION, source, comp.identity(), "\0".join(flags), cpu):
        h.update(encode_text(part))
        h.update(b"\0\1\0")
    return h.hexdigest()


@functools.cache
def host_cpu() -> str:
    """What -march=native compiles for: the CPU model and feature flags (Linux), else the machine."""
    try:
        with open("/proc/cpuinfo") as f:
            head = f.read(16384).split("\n\n")[0]
        keep = [ln for ln in head.splitlines() if ln.split(":")[0].strip() in
                ("vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part")]
        if keep:
            return "\n".join(keep)
    except OSError:
        pass
    return f"{platform.machine()}|{platform.processor()}"


@dataclass
class Library:
    lib: ctypes.CDLL
    path: str
    cache_hit: bool
    seconds: float


# loaded libraries by cache key, weakly: a library no kernel refers to any more is unloaded
_LOADED: dict[str, weakref.ref] = {}
_MEMO_LOCK = threading.Lock()
_SWEPT: set[str] = set()  # cache directories this process has swept of leftovers


def load_or_build(source: str, name: str, symbol: str, comp: Compiler, flags: list[str]) -> Library:
    """The loaded shared object for ``source``: from this process, from disk, or freshly compiled."""
    key = cache_key(source, comp, flags)
    t0 = time.perf_counter()
    root = cache_dir() / "kernels"
    so_path = root / f"{key}.so"
    memo = f"{root}/{key}"
    with _MEMO_LOCK:
        ref = _LOADED.get(memo)
        lib = ref() if ref is not None else None
    if lib is not None:
        return Library(lib, str(so_path), True, time.perf_counter() - t0)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cannot create the kernel cache directory {root}: {e.strerror}; set TESSEL_CACHE_DIR") from None
    openmp = "-fopenmp" in flags
    lib = _load_verified(so_path, symbol, openmp)
    hit = lib is not None
    if lib is None:
        _sweep_once(root.parent)
        with key_lock(root / f"{key}.lock", f"building kernel {name!r}"):
            lib = _load_verified(so_path, symbol, openmp)  # another process may have built it meanwhile
            hit = lib is not None
            if lib is None:
                lib = _build_and_load(source, name, symbol, comp, flags, so_path)
    with _MEMO_LOCK:
        _LOADED[memo] = weakref.ref(lib, functools.partial(_forget, memo))
    if not hit:
        note_written(_entry_bytes(so_path), _in_use(), root.parent)
    return Library(lib, str(so_path), hit, time.perf_counter() - t0)


def _build_and_load(source: str, name: str, symbol: str, comp: Compiler, flags: list[str],
                    so_path: Path) -> ctypes.CDLL:
    try:
        _build_entry(source, name, comp, flags, so_path)
    except OSError as e:
        raise BuildError(f"cannot write kernel {name!r} into the cache at {so_path.parent}: {e}; "
                         "set TESSEL_CACHE_DIR to a writable directory") from None
    lib = _load(so_path, symbol, "-fopenmp" in flags)
    if lib is None:
        raise BuildError(f"kernel {name!r} compiled to {so_path}, but the library does not load "
                         f"or lacks the symbol {symbol!r}")
    return lib


def _entry_bytes(so_path: Path) -> int:
    total = 0
    for suffix in (".so", ".json", ".c"):
        with contextlib.suppress(OSError):
            total += so_path.with_suffix(suffix).stat().st_size
    return total


def _forget(memo: str, ref: weakref.ref) -> None:
    """A library was collected: drop its memo entry (unless a newer load replaced it)."""
    if _LOADED.get(memo) is ref:
        _LOADED.pop(memo, None)


def _in_use() -> set[str]:
    """The keys of the libraries this process has loaded and still uses (never evicted)."""
    with _MEMO_LOCK:
        loaded = _LOADED.copy()  # a copy made in one step: a collection meanwhile may drop entries
    return {m.rsplit("/", 1)[1] for m, r in loaded.items() if r() is not None}


def _sweep_once(root: Path) -> None:
    """Remove killed builds' leftovers, once per process and cache directory (on the first miss)."""
    if str(root) not in _SWEPT:
        _SWEPT.add(str(root))
        sweep_leftovers(root)


def _build_entry(source: str, name: str, comp: Compiler, flags: list[str], so_path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=so_path.parent, prefix=f".{so_path.stem[:16]}{owner_tag()}", suffix=".so.tmp")
    os.close(fd)
    try:
        compile_shared(comp, source, tmp, flags, name)
        data = Path(tmp).read_bytes()
        meta = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "name": name,
                "compiler": comp.identity(), "flags": flags}
        os.replace(tmp, so_path)
        write_atomic(so_path.with_suffix(".json"), json.dumps(meta, indent=1))
        write_atomic(so_path.with_suffix(".c"), source)  # for people reading the cache; never trusted
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load_verified(so_path: Path, symbol: str, openmp: bool) -> ctypes.CDLL | None:
    """Load a cache entry only if its bytes match its sidecar; None means "build it"."""
    sidecar = so_path.with_suffix(".json")
    try:
        meta = read_json(sidecar)
        data = read_regular(so_path)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or len(data) != meta.get("size") or \
            hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return None
    touch(sidecar)  # when it was last used: what eviction orders by
    return _load(so_path, symbol, openmp)


def _load(so_path: Path, symbol: str, openmp: bool) -> ctypes.CDLL | None:
    """Load a library that is unloaded again when the returned object is collected (its symbol is
    looked up without ``lib[symbol]`` or ``getattr``: see :func:`c_function`)."""
    try:
        lib = ctypes.CDLL(str(so_path))
    except OSError:
        return None
    if not openmp or _pin_openmp_runtime():
        weakref.finalize(lib, _dlclose, lib._handle).atexit = False
    try:
        _address(lib, symbol)
    except (AttributeError, OSError):
        return None
    return lib


def c_function(lib: ctypes.CDLL, symbol: str, restype: type, argtypes: list[type]) -> Callable:
    """``symbol`` of ``lib`` as a ctypes function that keeps ``lib`` loaded while it lives.

    Not ``lib[symbol]``: CPython's function objects taken from a library refer to themselves,
    a cycle only a garbage collection breaks, so every library would stay mapped until one
    reached it (one that survived a collection while in use: until a much later one)."""
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(_address(lib, symbol))
    fn.lib = lib
    return fn


def _address(lib: ctypes.CDLL, symbol: str) -> int:
    try:
        from _ctypes import dlsym
    except ImportError:  # pragma: no cover - not POSIX
        return ctypes.cast(lib[symbol], ctypes.c_void_p).value
    return dlsym(lib._handle, symbol)


def _dlclose(handle: int) -> None:
    try:
        from _ctypes import dlclose
    except ImportError:  # pragma: no cover - not POSIX: the library stays loaded
        return
    try:
        dlclose(handle)
    except OSError:
        pass


_PINNED: set[str] = set()
_OPENMP_RUNTIME = re.compile(r"\S*/lib(?:g|i?)omp[^/\s]*\.so[^/\s]*$")


def _pin_openmp_runtime() -> bool:
    """Keep the OpenMP runtime loaded for good: its pooled threads sleep inside it, so it must not
    go with the last kernel that used it. False if that cannot be made sure (then the kernel
    itself is never unloaded)."""
    try:
        with open("/proc/self/maps") as f:
            found = {m.group(0) for ln in f if (m := _OPENMP_RUNTIME.search(ln.rstrip()))}
    except OSError:
        return False
    for path in found - _PINNED:
        try:
            ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD | os.RTLD_NODELETE)
        except (OSError, AttributeError):
            return False
        _PINNED.add(path)
    return bool(found)


def clear_memory_cache() -> None:
    """Forget libraries loaded by this process (they stay mapped while kernels use them), and
    the generated code remembered for lowered kernels."""
    with _MEMO_LOCK:
        _LOADED.clear()
        _LOWERED.clear()
    forget_hashes()


# ---- generated code by lowered kernel ------------------------------------------------------------
# ``tessel.build`` spends most of a cached build in the passes after lowering and in the C
# generator (unrolled register tiles are thousands of IR nodes). Their output is a function of the
# lowered IR and of tessel's own code, so it is remembered under a hash of both: an entry is
# ``lowered/<key>.json`` holding the C source and what the compiler flags and the calling
# convention need, with the sha256 of all of it (checked on reading: a damaged field of any kind
# means "generate afresh").
_LOWERED: dict[str, dict] = {}
_LOWERED_KEEP = 512  # entries remembered in memory (the oldest is forgotten first)
_LOWERED_FIELDS = {"source": str, "symbol": str, "name": str, "openmp": bool,
                   "guarded_loads": bool, "float16": bool, "vectorized": bool, "outputs": list,
                   # the table of outside functions: [name, kind, return dtype, [argument dtypes]]
                   "externs": list,
                   # the index guards of symbolic sizes (seed 002) and the sizes they speak of, as a
                   # tessel-ir document (ir.serialize: data only); "" for a kernel of constant sizes
                   "guards": str}


@functools.cache
def code_version() -> str:
    """A hash of tessel's own source files: generated code depends on the generator's version
    (read once per process: it is on every build's path)."""
    h = hashlib.sha256(_VERSION.encode())
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _entry_sha256(entry: dict) -> str:
    """The checksum of a plan: every field, in a canonical form."""
    fields = {k: entry[k] for k in _LOWERED_FIELDS}
    return hashlib.sha256(encode_text(json.dumps(fields, sort_keys=True))).hexdigest()


def _valid_plan(entry: object, n_params: int | None) -> bool:
    if not isinstance(entry, dict) or any(type(entry.get(k)) is not t for k, t in _LOWERED_FIELDS.items()):
        return False
    outputs = entry["outputs"]
    if any(type(k) is not int or k < 0 or (n_params is not None and k >= n_params) for k in outputs):
        return False
    if not all(isinstance(x, list) and len(x) == 4 and all(type(v) is str for v in x[:3]) and isinstance(x[3], list)
               and all(type(v) is str for v in x[3]) for x in entry["externs"]):
        return False
    return entry.get("sha256") == _entry_sha256(entry)


def load_lowered(key: str, n_params: int | None = None) -> dict | None:
    """The remembered code for ``key`` (a kernel of ``n_params`` parameters), or None (missing,
    unreadable or damaged in any way: build afresh)."""
    with _MEMO_LOCK:
        if key in _LOWERED:
            return _LOWERED[key]
    path = cache_dir() / "lowered" / f"{key}.json"
    try:
        entry = read_json(path)
    except (OSError, ValueError):
        return None
    if not _valid_plan(entry, n_params):
        return None
    touch(path)
    _remember(key, entry)
    return entry


def _remember(key: str, entry: dict) -> None:
    with _MEMO_LOCK:
        _LOWERED[key] = entry
        while len(_LOWERED) > _LOWERED_KEEP:
            del _LOWERED[next(iter(_LOWERED))]


def store_lowered(key: str, entry: dict) -> None:
    """Remember ``entry`` (see ``_LOWERED_FIELDS``) under ``key``; a failure to write is not an error."""
    entry = {k: entry[k] for k in _LOWERED_FIELDS}
    entry["sha256"] = _entry_sha256(entry)
    _remember(key, entry)
    root = cache_dir() / "lowered"
    try:
        root.mkdir(parents=True, exist_ok=True)
        write_atomic(root / f"{key}.json", json.dumps(entry))
    except OSError:
        pass  # the kernel itself is built; only the next process's shortcut is lost
