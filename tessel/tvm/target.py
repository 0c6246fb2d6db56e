"""``tvm.target``: TVM's target strings mapped onto tessel's targets (:mod:`tessel.target`).

``"llvm"`` is tessel's C target for this machine (the C compiler plays LLVM's part);
``"llvm -mcpu=skylake-avx512"`` compiles for that CPU (``-march=``); ``-mattr=+avx2,+fma``
becomes the compiler's ``-mavx2 -mfma``; ``-mtriple`` is accepted when it names this
machine's architecture (tessel does not cross-compile). ``"c"`` and ``"python"`` are tessel's
own target strings and take tessel's options. ``"cuda"`` is tessel's cuda target (nvcc, run on
the GPU where there is one and on the simulator where there is none; TVM's options for it --
``-arch``, ``-max_num_threads`` and the like -- are read as the GPU's description and do not
change the code). Other GPU kinds make a Target (TVM allows that without a GPU) that refuses to
build, saying why.
"""

from __future__ import annotations

import platform
import shlex

from .. import target as _tt
from ..errors import BuildError
from ..target.target import CUDA_ARCHS
from ._names import ADVICE, RefusesMissing, missing_names

_GPU_KINDS = frozenset({"cuda", "rocm", "opencl", "metal", "vulkan", "nvptx", "hexagon", "webgpu"})
_LLVM_OPTIONS = ("-mcpu", "-mattr", "-mtriple", "-keys", "-tag")
_ARCH = {"x86_64": ("x86_64", "amd64"), "aarch64": ("aarch64", "arm64"), "arm64": ("aarch64", "arm64")}


class TargetKind:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Target(RefusesMissing):
    """``tvm.target.Target("llvm -mcpu=core-avx2", host="llvm")``; ``.tessel`` is the tessel Target."""

    _tvm_name = "tvm.target.Target"

    _stack: list[Target] = []

    def __init__(self, target: str | Target | _tt.Target, host: str | Target | None = None):
        if isinstance(target, Target):
            text, tessel = target.text, target._tessel
        elif isinstance(target, _tt.Target):
            text, tessel = target.describe(), target
        elif isinstance(target, str):
            text, tessel = target.strip(), None
        else:
            raise BuildError(f"tvm.target.Target: expected a target string such as 'llvm', got {target!r:.80}")
        words = _split(text)
        self.text = text
        self.kind = TargetKind(words[0])
        self.attrs = {w.partition("=")[0].lstrip("-"): w.partition("=")[2] for w in words[1:]}
        self.keys = ("gpu",) if words[0] in _GPU_KINDS else ("cpu",)
        self.host = Target(host) if host is not None and not isinstance(host, Target) else host
        self._tessel = tessel if tessel is not None else _map(words, text)

    @property
    def mcpu(self) -> str | None:
        return self.attrs.get("mcpu")

    @property
    def tessel(self) -> _tt.Target:
        """The tessel target this one builds for (refused for a GPU kind, which tessel lacks)."""
        if self._tessel is None:
            raise BuildError(f"target {self.text!r}: tessel does not offer a {self.kind.name} target; {ADVICE['rocm']}")
        return self._tessel

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        if Target._stack:
            return Target._stack[-1]
        if allow_none:
            return None
        raise BuildError("tvm.target.Target.current(allow_none=False): no target is in scope (use `with Target(...)`)")

    def __enter__(self) -> Target:
        Target._stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        Target._stack.pop()

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Target({self.text!r})"


def _split(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise BuildError(f"target string {text!r} does not parse: {e}") from None
    if not words:
        raise BuildError("empty target string; use 'llvm' (this machine's CPU), 'c' or 'python'")
    return words


def _map(words: list[str], text: str) -> _tt.Target | None:
    kind = words[0]
    if kind == "cuda":  # TVM's cuda options describe the GPU; tessel's cuda target reads -arch only
        arch = next((w.partition("=")[2] for w in words[1:] if w.startswith("-arch=")), "")
        return _tt.Target("cuda", mcpu=arch if arch in CUDA_ARCHS else None)
    if kind in _GPU_KINDS:
        return None
    if kind in _tt.KINDS:
        return _tt.parse(text)
    if kind != "llvm":
        raise BuildError(f"target {text!r}: unknown kind {kind!r}; tessel builds 'llvm' (this machine's CPU, "
                         f"through the C compiler), 'c' and 'python'")
    fields: dict = {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if key not in _LLVM_OPTIONS or not eq:
            raise BuildError(f"target {text!r}: option {w!r} is not one tessel honours for 'llvm'; it takes "
                             f"{', '.join(o + '=...' for o in _LLVM_OPTIONS)}")
        if key == "-mcpu":
            fields["mcpu"] = value
        elif key == "-mattr":
            fields["flags"] = tuple(_attr_flag(a, text) for a in value.split(",") if a)
        elif key == "-mtriple":
            _check_triple(value, text)
    return _tt.Target("c", **fields)


def _attr_flag(attr: str, text: str) -> str:
    if attr[0] not in "+-" or not attr[1:].replace(".", "").replace("_", "").replace("-", "").isalnum():
        raise BuildError(f"target {text!r}: -mattr entries are +feature or -feature (e.g. +avx2), got {attr!r}")
    return f"-m{attr[1:]}" if attr[0] == "+" else f"-mno-{attr[1:]}"


def _check_triple(triple: str, text: str) -> None:
    arch = triple.split("-")[0]
    here = platform.machine().lower()
    if arch not in _ARCH.get(here, (here,)):
        raise BuildError(f"target {text!r}: tessel compiles for this machine ({here}) only, not for {arch}; "
                         "leave -mtriple out")


def create(text: str) -> Target:
    return Target(text)


__getattr__ = missing_names(__name__)
