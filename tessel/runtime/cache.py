"""The on-disk cache of compiled kernels.

An entry is ``<key>.so`` plus a ``<key>.json`` sidecar holding the object's size and sha256;
the key hashes everything that determines the object (source, compiler identity, flags). An
entry is trusted only when the sidecar matches the bytes, so a truncated or corrupt file is
rebuilt rather than handed to the dynamic loader. Writers compile into a temporary file in
the cache directory and ``os.replace`` it into place, under a per-key ``flock`` where the file
system offers one: two processes building the same kernel at once both succeed, and only one
of them runs the compiler.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import platform
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError
from .compiler import Compiler, compile_shared

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: atomic replace alone still keeps entries whole
    fcntl = None  # type: ignore[assignment]

_VERSION = "1"  # bump when the layout of entries or the calling convention changes


def cache_dir() -> Path:
    """``$TESSEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tessel``, else ``~/.cache/tessel``."""
    explicit = os.environ.get("TESSEL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tessel"


def cache_key(source: str, comp: Compiler, flags: list[str]) -> str:
    h = hashlib.sha256()
    # -march=native code may not run on another CPU sharing this cache directory (NFS homes)
    cpu = host_cpu() if "-march=native" in flags else ""
    for part in (_VERSION, source, comp.identity(), "\0".join(flags), cpu):
        h.update(part.encode())
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


_LOADED: dict[str, Library] = {}
_MEMO_LOCK = threading.Lock()


def load_or_build(source: str, name: str, symbol: str, comp: Compiler, flags: list[str]) -> Library:
    """The loaded shared object for ``source``: from this process, from disk, or freshly compiled."""
    key = cache_key(source, comp, flags)
    t0 = time.perf_counter()
    root = cache_dir() / "kernels"
    memo = f"{root}/{key}"
    with _MEMO_LOCK:
        if memo in _LOADED:
            old = _LOADED[memo]
            return Library(old.lib, old.path, True, time.perf_counter() - t0)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cannot create the kernel cache directory {root}: {e.strerror}; set TESSEL_CACHE_DIR") from None
    so_path = root / f"{key}.so"
    lib = _load_verified(so_path, symbol)
    hit = lib is not None
    if lib is None:
        with _key_lock(root / f"{key}.lock"):
            lib = _load_verified(so_path, symbol)  # another process may have built it meanwhile
            hit = lib is not None
            if lib is None:
                try:
                    _build_entry(source, name, comp, flags, so_path)
                except OSError as e:
                    raise BuildError(f"cannot write kernel {name!r} into the cache at {root}: {e}; "
                                     "set TESSEL_CACHE_DIR to a writable directory") from None
                lib = _load(so_path, symbol)
                if lib is None:
                    raise BuildError(f"kernel {name!r} compiled to {so_path}, but the library does not load "
                                     f"or lacks the symbol {symbol!r}")
    out = Library(lib, str(so_path), hit, time.perf_counter() - t0)
    with _MEMO_LOCK:
        _LOADED[memo] = out
    return out


@contextlib.contextmanager
def _key_lock(path: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # e.g. a file system without locks: atomic replace still protects entries
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _build_entry(source: str, name: str, comp: Compiler, flags: list[str], so_path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=so_path.parent, prefix=f".{so_path.stem[:16]}-", suffix=".so.tmp")
    os.close(fd)
    try:
        compile_shared(comp, source, tmp, flags, name)
        data = Path(tmp).read_bytes()
        meta = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "name": name,
                "compiler": comp.identity(), "flags": flags}
        os.replace(tmp, so_path)
        _write_atomic(so_path.with_suffix(".json"), json.dumps(meta, indent=1))
        _write_atomic(so_path.with_suffix(".c"), source)  # for people reading the cache; never trusted
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _load_verified(so_path: Path, symbol: str) -> ctypes.CDLL | None:
    """Load a cache entry only if its bytes match its sidecar; None means "build it"."""
    try:
        meta = json.loads(so_path.with_suffix(".json").read_text())
        data = so_path.read_bytes()
    except (OSError, ValueError):
        return None
    if len(data) != meta.get("size") or hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return None
    return _load(so_path, symbol)


def _load(so_path: Path, symbol: str) -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(str(so_path))
    except OSError:
        return None
    return lib if hasattr(lib, symbol) else None


def clear_memory_cache() -> None:
    """Forget libraries loaded by this process (they stay mapped while kernels use them), and
    the generated code remembered for lowered kernels."""
    with _MEMO_LOCK:
        _LOADED.clear()
        _LOWERED.clear()


# ---- generated code by lowered kernel ------------------------------------------------------------
# ``tessel.build`` spends most of a cached build in the passes after lowering and in the C
# generator (unrolled register tiles are thousands of IR nodes). Their output is a function of the
# lowered IR and of tessel's own code, so it is remembered under a hash of both: an entry is
# ``lowered/<key>.json`` holding the C source (with its sha256, checked on reading) and what the
# compiler flags and the calling convention need.
_LOWERED: dict[str, dict] = {}
_LOWERED_FIELDS = {"source": str, "source_sha256": str, "symbol": str, "name": str, "openmp": bool,
                   "guarded_loads": bool, "float16": bool, "outputs": list}


@functools.cache
def code_version() -> str:
    """A hash of tessel's own source files: generated code depends on the generator's version."""
    h = hashlib.sha256(_VERSION.encode())
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def load_lowered(key: str) -> dict | None:
    """The remembered code for ``key``, or None (missing, unreadable or damaged: build afresh)."""
    with _MEMO_LOCK:
        if key in _LOWERED:
            return _LOWERED[key]
    try:
        entry = json.loads((cache_dir() / "lowered" / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or any(not isinstance(entry.get(k), t) for k, t in _LOWERED_FIELDS.items()):
        return None
    if hashlib.sha256(entry["source"].encode()).hexdigest() != entry["source_sha256"]:
        return None
    with _MEMO_LOCK:
        _LOWERED[key] = entry
    return entry


def store_lowered(key: str, entry: dict) -> None:
    """Remember ``entry`` (see ``_LOWERED_FIELDS``) under ``key``; a failure to write is not an error."""
    entry = dict(entry, source_sha256=hashlib.sha256(entry["source"].encode()).hexdigest())
    with _MEMO_LOCK:
        _LOWERED[key] = entry
    root = cache_dir() / "lowered"
    try:
        root.mkdir(parents=True, exist_ok=True)
        _write_atomic(root / f"{key}.json", json.dumps(entry))
    except OSError:
        pass  # the kernel itself is built; only the next process's shortcut is lost
