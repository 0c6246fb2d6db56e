"""The files tessel keeps in its cache directory, and keeping that directory tidy.

Everything tessel writes lives under :func:`cache_dir`: ``kernels/`` (compiled objects and
their sidecars), ``lowered/`` (remembered generated code), ``tmp/`` (the compiler's scratch
folders), ``compilers.json`` (what each compiler can do). A file that is being written carries
its writer's host and process id in its name, so a build that was killed leaves leftovers that a
later process recognises and removes (:func:`sweep_leftovers`). Per-entry locks are removed by
their holder, waits on them are bounded (``$TESSEL_LOCK_TIMEOUT``), and the cache is kept under
a size limit (``$TESSEL_CACHE_MAX_MB``) by evicting the entries used least recently.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: atomic replace alone still keeps entries whole
    fcntl = None  # type: ignore[assignment]

DEFAULT_MAX_MB = 1024.0  # $TESSEL_CACHE_MAX_MB: 0 means no limit
EVICT_TO = 0.8  # eviction brings the cache down to this fraction of the limit (not on every build)
STALE_AGE_S = 6 * 3600  # a leftover of a live (or foreign) process is removed only when older than this


def cache_dir() -> Path:
    """``$TESSEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tessel``, else ``~/.cache/tessel``."""
    explicit = os.environ.get("TESSEL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "tessel").absolute()


def encode_text(text: str) -> bytes:
    """The bytes tessel hashes and writes for generated text. ``surrogatepass``: a lone surrogate
    that reached a name is data, and must not turn a build into a UnicodeEncodeError."""
    return text.encode("utf-8", "surrogatepass")


def env_seconds(var: str, default: float) -> float:
    """A positive number of seconds from the environment, or a BuildError that says how to fix it."""
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise BuildError(f"{var}={raw!r} is not a positive number of seconds (default {default:g}); "
                         f"fix or unset {var}")
    return value


# ---- leftovers of killed builds ----------------------------------------------------------------------
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_OWNER = re.compile(r"\.([0-9a-f]{8})-(\d+)\.")
# What tessel names its work in progress, and nothing else matches: the owner tag, then the 8
# characters ``tempfile`` draws at random. A file written whole (write_atomic, the object being
# compiled) and a scratch folder of the compiler (scratch_dir) -- the sweep's exact rule.
_TOKEN = r"\.[0-9a-f]{8}-\d+\.[a-z0-9_]{8}"
_WIP_FILE = re.compile(r"\.[^/]{0,16}" + _TOKEN + r"(?:\.so)?\.tmp")
_SCRATCH = re.compile(r"tessel-[a-z]+-" + _TOKEN)


def owner_tag() -> str:
    """``.<host>-<pid>.``: what names a file or folder as this process's work in progress."""
    return f".{_HOST}-{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def is_stale(name: str, mtime: float, now: float | None = None) -> bool:
    """Whether a work-in-progress file is a leftover: its writer (on this host) is gone, or it is
    older than any build takes (the writer may be on another host sharing the directory)."""
    m = _OWNER.search(name)
    if m and m.group(1) == _HOST and int(m.group(2)) != os.getpid() and not _pid_alive(int(m.group(2))):
        return True
    return (now if now is not None else time.time()) - mtime > STALE_AGE_S


def _leftovers(root: Path) -> Iterator[os.DirEntry]:
    """tessel's work-in-progress files (in the root, ``kernels/``, ``lowered/``) and compiler
    folders (in ``tmp/``), by their exact names: the cache may be a folder the user also keeps
    files in, and a name merely ending in ``.tmp`` is not proof that tessel made it."""
    for sub, pattern in (("kernels", _WIP_FILE), ("lowered", _WIP_FILE), (".", _WIP_FILE), ("tmp", _SCRATCH)):
        with contextlib.suppress(OSError), os.scandir(root / sub) as it:
            for e in it:
                if pattern.fullmatch(e.name):
                    yield e


def _remove_scratch(path: str) -> None:
    """Empty a compiler's folder of its files and remove it; never a tree: a folder inside it is
    not what tessel or the compiler puts there, so the folder stays (rmdir fails)."""
    with os.scandir(path) as it:
        for e in it:
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.path)
    os.rmdir(path)


def sweep_leftovers(root: Path | None = None) -> int:
    """Remove what killed builds left behind (files, folders, lock files nobody holds); returns
    how many files and folders were removed."""
    root = root or cache_dir()
    with contextlib.suppress(OSError), os.scandir(root / "kernels") as it:
        for e in it:
            if e.name.endswith(".lock") and _KEY.fullmatch(e.name[:-5]):
                with key_lock(Path(e.path), "sweeping", wait=False):
                    pass  # taken, hence nobody's: removed on release
    removed = 0
    now = time.time()
    for e in _leftovers(root):
        try:
            if not is_stale(e.name, e.stat(follow_symlinks=False).st_mtime, now):
                continue
            if e.is_dir(follow_symlinks=False):
                _remove_scratch(e.path)
            else:
                os.unlink(e.path)
            removed += 1
        except OSError:
            pass
    return removed


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """A private folder for the compiler's files, inside the cache (so that a killed build's
    folder is found and swept), else in the system's temporary directory."""
    parent: Path | None = cache_dir() / "tmp"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        parent = None
    path = tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}", dir=parent)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``path`` whole or not at all (readers never see half a file)."""
    raw = encode_text(data) if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}{owner_tag()}", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise



MAX_NESTING = 64  # tessel's own JSON files nest a few levels: a deeper one is damage
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file, else OSError: a FIFO or a device in a cache file's place
    would block the read (and every build with it), so it is opened without waiting and its
    type checked before a byte is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def check_nesting(raw: bytes | str, what: object) -> bytes:
    """``raw`` as bytes, once its JSON nesting is counted: ValueError (naming ``what``) past
    :data:`MAX_NESTING`. ``json`` recurses in C once per level, and text nested 100,000 deep
    would run a thread whose recursion limit is raised (``tessel.deep``) past its stack."""
    text = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    depth = 0
    for m in re.finditer(rb"[\[\]{}]", _JSON_STRING.sub(b'""', text)):
        depth += 1 if m.group() in b"[{" else -1
        if depth > MAX_NESTING:
            raise ValueError(f"{what}: nested more than {MAX_NESTING} levels deep")
    return text


def loads_json(raw: bytes | str, what: object) -> object:
    """JSON that tessel wrote (a cache file, a tuning record, a library's metadata), read
    without trusting it: ValueError naming ``what`` (a path or a description) when it is not."""
    text = check_nesting(raw, what)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{what}: not JSON ({e})") from None


def read_json(path: Path) -> object:
    """A cache file's JSON; OSError or ValueError when it is damaged."""
    return loads_json(read_regular(path), path)

# ---- per-entry locks ---------------------------------------------------------------------------------
DEFAULT_CC_TIMEOUT_S = 300.0  # $TESSEL_CC_TIMEOUT


def cc_timeout() -> float:
    """``$TESSEL_CC_TIMEOUT``: seconds one run of the C compiler may take (default 300)."""
    return env_seconds("TESSEL_CC_TIMEOUT", DEFAULT_CC_TIMEOUT_S)


def lock_timeout() -> float:
    """``$TESSEL_LOCK_TIMEOUT``: how long to wait for another process building the same kernel;
    by default the compiler's timeout plus a minute (the holder may be compiling that long)."""
    return env_seconds("TESSEL_LOCK_TIMEOUT", cc_timeout() + 60.0)


@contextlib.contextmanager
def key_lock(path: Path, what: str, wait: bool = True) -> Iterator[bool]:
    """Hold the lock file ``path`` (created if need be, removed on release), waiting at most
    :func:`lock_timeout` for its holder; with ``wait=False`` yield False at once if it is held.
    Without file locks, entries stay whole anyway (atomic replace): then it yields True."""
    if fcntl is None:
        yield True
        return
    deadline = time.monotonic() + (lock_timeout() if wait else 0.0)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            yield True
            return
        if not _acquire(fd, deadline):
            holder = _holder(fd)
            os.close(fd)
            if not wait:
                yield False
                return
            raise BuildError(_lock_message(path, what, holder))
        # the previous holder removes the file on release: the lock only counts on the file the
        # path names now (else two processes could each hold a lock, on different files)
        try:
            same = os.path.samestat(os.stat(path), os.fstat(fd))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)  # closing releases the lock


def _acquire(fd: int, deadline: float) -> bool:
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:  # a file system without locks: atomic replace still keeps entries whole
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _holder(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip())
    return None


def _lock_message(path: Path, what: str, pid: int | None) -> str:
    who = f"process {pid}" if pid else "another process"
    state = ""
    with contextlib.suppress(OSError, IndexError):
        if pid and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "Tt":
            state = " (it is stopped: resume it with `kill -CONT " + str(pid) + "` or end it)"
    return (f"{what}: waited {lock_timeout():g} s for {who}{state}, which is building the same kernel "
            f"and holds the lock {path}; if no such build is running, delete that file; "
            "$TESSEL_LOCK_TIMEOUT sets how long to wait")


# ---- the size limit ----------------------------------------------------------------------------------
def max_bytes() -> int | None:
    """``$TESSEL_CACHE_MAX_MB`` (default 1024) in bytes; None when it is 0 (no limit)."""
    raw = os.environ.get("TESSEL_CACHE_MAX_MB", "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        mb = -1.0
    if not 0 <= mb < float("inf"):
        raise BuildError(f"TESSEL_CACHE_MAX_MB={raw!r} is not a size in megabytes (0: no limit; "
                         f"default {DEFAULT_MAX_MB:g}); fix or unset it")
    return int(mb * 2**20) if mb else None


@dataclass
class Entry:
    """One cache entry: a compiled kernel (object, sidecar, source copy) or a remembered plan."""

    kind: str  # "kernel" or "lowered"
    key: str
    files: list[Path]
    size: int
    used: float  # when it was last loaded (the sidecar's modification time, touched on each load)


_KEY = re.compile(r"[0-9a-f]{64}")


def entries(root: Path | None = None) -> list[Entry]:
    """Every entry in the cache (files that are not tessel's are not entries, and never touched)."""
    root = root or cache_dir()
    found: dict[tuple[str, str], Entry] = {}
    for kind, sub, suffixes in (("kernel", "kernels", (".so", ".json", ".c")), ("lowered", "lowered", (".json",))):
        with contextlib.suppress(OSError), os.scandir(root / sub) as it:
            for e in it:
                stem, dot, ext = e.name.partition(".")
                if not _KEY.fullmatch(stem) or dot + ext not in suffixes:
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                entry = found.setdefault((kind, stem), Entry(kind, stem, [], 0, 0.0))
                entry.files.append(Path(e.path))
                entry.size += st.st_size
                if ext == "json" or not entry.used:
                    entry.used = st.st_mtime
    return list(found.values())


def touch(path: Path) -> None:
    """Note that an entry was used now (what eviction orders by; access times are unreliable)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def remove_entry(entry: Entry, root: Path | None = None) -> bool:
    """Delete an entry unless it is being written; the sidecar goes first, so a reader that
    comes meanwhile finds the entry unverifiable and rebuilds it."""
    root = root or cache_dir()
    if entry.kind != "kernel":
        with contextlib.suppress(OSError):
            os.unlink(entry.files[0])
        return True
    with key_lock(root / "kernels" / f"{entry.key}.lock", "evicting", wait=False) as held:
        if not held:
            return False
        for f in sorted(entry.files, key=lambda p: p.suffix != ".json"):
            with contextlib.suppress(OSError):
                os.unlink(f)
    return True


RECOUNT_S = 60.0  # the cache is counted afresh at most this often, or when it may pass its limit
_USAGE: dict[str, tuple[int, float]] = {}  # cache root -> (bytes as last counted plus written since, when counted)


def note_written(nbytes: int, in_use: set[str], root: Path | None = None) -> int:
    """This process wrote ``nbytes`` into the cache: evict if that may take it past its limit.
    Counting a big cache means a stat per file, so it is done only when the estimate (the last
    count plus what this process wrote since) passes the limit, or the count is old (other
    processes write too). Returns how many entries went."""
    limit = max_bytes()
    if limit is None:
        return 0
    root = root or cache_dir()
    counted, when = _USAGE.get(str(root), (0, -RECOUNT_S))
    now = time.monotonic()
    if counted + nbytes <= limit and now - when < RECOUNT_S:
        _USAGE[str(root)] = (counted + nbytes, when)
        return 0
    removed, total = evict(in_use, root)
    _USAGE[str(root)] = (total, now)
    return removed


def evict(in_use: set[str], root: Path | None = None) -> tuple[int, int]:
    """Bring the cache under its size limit, the least recently used entries first; never one in
    ``in_use`` (loaded by this process) or being written. Returns how many entries went, and the
    bytes the cache holds then."""
    limit = max_bytes()
    found = entries(root)
    total = sum(e.size for e in found)
    if limit is None or total <= limit:
        return 0, total
    removed = 0
    for e in sorted(found, key=lambda e: e.used):
        if total <= limit * EVICT_TO:
            break
        if e.key not in in_use and remove_entry(e, root):
            total -= e.size
            removed += 1
    return removed, total


def info(root: Path | None = None) -> dict:
    """What ``tessel cache info`` prints: where the cache is, what it holds, and its limit."""
    root = root or cache_dir()
    found = entries(root)
    limit = max_bytes()
    return {"location": str(root), "kernels": sum(e.kind == "kernel" for e in found),
            "lowered": sum(e.kind == "lowered" for e in found), "bytes": sum(e.size for e in found),
            "limit_bytes": limit, "leftovers": sum(1 for _ in _leftovers(root))}


def clear(root: Path | None = None) -> int:
    """Remove every entry, the compilers' answers and killed builds' leftovers (what a running
    build is writing stays); files that are not tessel's are left alone. Returns entries removed."""
    root = root or cache_dir()
    removed = sum(remove_entry(e, root) for e in entries(root))
    with contextlib.suppress(OSError):
        os.unlink(root / "compilers.json")
    sweep_leftovers(root)
    return removed
