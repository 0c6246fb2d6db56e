"""The cuda target's runtime: nvcc, a disk cache, static figures, and a launcher.

``load_cuda`` compiles the generated source with ``nvcc`` for the target's architecture
(``sm_80`` unless ``-arch=`` says otherwise) into a cubin and PTX, cached on disk like the C
path (keyed by the source, the architecture and nvcc's version; written atomically under a
lock, so two processes building one kernel both succeed). The module it returns can be
inspected without a GPU: ``source``, ``ptx``, ``resources`` (per kernel: registers, shared
memory, spills, stack, parsed from ptxas' ``--resource-usage`` report), ``sass_stats``
(instruction counts by opcode from ``cuobjdump -sass``, else from the PTX),
``sass_instructions`` (each kernel's machine instructions, read from the cubin itself) and
``occupancy`` (resident warps per SM from registers, shared memory and block size). Calling it launches through the CUDA driver
(:mod:`.cuda_driver`) and raises :class:`~tessel.errors.NoDeviceError` where there is none.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BuildError, NoDeviceError, TesselWarning
from ..ir import stmt as S
from .args import ArgSpec, eval_int
from .cubin import cubin_instructions
from .files import cache_dir, key_lock, write_atomic
from .module import Kernel

DEFAULT_ARCH = "sm_80"
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
NVCC_TIMEOUT = 300.0


@dataclass(frozen=True)
class SMLimits:
    """What one streaming multiprocessor holds (NVIDIA's occupancy tables for the architecture)."""

    max_warps: int
    max_blocks: int
    registers: int
    shared_bytes: int  # usable by blocks (the carve-out's maximum)
    reg_granularity: int = 256  # registers are given to warps in units of this many
    shared_granularity: int = 128
    shared_reserved: int = 1024  # per block, for the system


LIMITS = {"sm_80": SMLimits(64, 32, 65536, 167936), "sm_86": SMLimits(48, 16, 65536, 102400),
          "sm_89": SMLimits(48, 24, 65536, 102400), "sm_90": SMLimits(64, 32, 65536, 233472)}


def find_nvcc() -> str:
    path = shutil.which(os.environ.get("NVCC", "nvcc"))
    if path is None:
        raise BuildError("the cuda target needs nvcc (the CUDA toolkit) on the PATH, or $NVCC naming it; "
                         "install the toolkit, or use target='cuda-sim' to run GPU schedules on the CPU")
    return path


@functools.lru_cache(maxsize=8)  # asked at every build; the toolkit does not change under a process
def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def _run(cmd: list[str], what: str, source: str = "") -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=NVCC_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what}: {cmd[0]} took longer than {NVCC_TIMEOUT:.0f} s") from None
    if proc.returncode != 0:
        lines = source.splitlines()
        shown = "\n".join(f"{k + 1:5d}  {x[:160]}" for k, x in enumerate(lines[:400]))
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()[:4000]}"
                         + (f"\n---- source ----\n{shown}" if shown else ""))
    return proc.stdout + proc.stderr


@dataclass(frozen=True)
class Built:
    cubin: bytes
    ptx: str
    report: str  # ptxas' resource usage
    sass: str
    path: Path
    cache_hit: bool


def compile_cuda(source: str, name: str, arch: str = DEFAULT_ARCH, flags: tuple[str, ...] = ()) -> Built:
    """The cubin, PTX, resource report and SASS of ``source`` (from the cache when present)."""
    nvcc = find_nvcc()
    key = hashlib.sha256("\0".join([source, arch, *flags, _nvcc_version(nvcc)]).encode()).hexdigest()[:32]
    root = cache_dir() / "cuda" / key
    files = {k: root / f"kernel.{k}" for k in ("cubin", "ptx", "report", "sass")}
    if all(p.exists() for p in files.values()):
        return _read(files, root, True)
    root.mkdir(parents=True, exist_ok=True)
    with key_lock(root / "lock", f"building CUDA kernel {name!r}"):
        if all(p.exists() for p in files.values()):
            return _read(files, root, True)
        cu = root / "kernel.cu"
        write_atomic(cu, source)
        tmp = root / f"tmp{os.getpid()}"
        tmp.mkdir(exist_ok=True)
        # the front end once (to PTX), then ptxas for the cubin and its resource report
        _run([nvcc, f"-arch={arch}", "-std=c++17", "-O3", "-diag-suppress=177", *flags, "-ptx", "-o",
              str(tmp / "k.ptx"), str(cu)], f"nvcc for kernel {name!r} ({arch})", source)
        report = _run([_ptxas(nvcc), f"-arch={arch}", "-O3", "-v", "-o", str(tmp / "k.cubin"), str(tmp / "k.ptx")],
                      f"ptxas for kernel {name!r} ({arch})")
        sass = _sass(tmp / "k.cubin")
        write_atomic(files["ptx"], (tmp / "k.ptx").read_text())
        write_atomic(files["report"], report)
        write_atomic(files["sass"], sass)
        write_atomic(files["cubin"], (tmp / "k.cubin").read_bytes())  # last: its presence means complete
        shutil.rmtree(tmp, ignore_errors=True)
    return _read(files, root, False)


def _ptxas(nvcc: str) -> str:
    """The ptxas beside nvcc (the toolkit's own), else the one on the PATH."""
    beside = Path(nvcc).parent / "ptxas"
    found = str(beside) if beside.exists() else shutil.which("ptxas")
    if found is None:
        raise BuildError(f"the cuda target needs ptxas (part of the CUDA toolkit) beside {nvcc} or on the PATH")
    return found


def _sass(cubin: Path) -> str:
    tool = shutil.which("cuobjdump")
    if tool is None:
        return ""
    return _run([tool, "-sass", str(cubin)], "cuobjdump -sass")


def _read(files: dict[str, Path], root: Path, hit: bool) -> Built:
    return Built(files["cubin"].read_bytes(), files["ptx"].read_text(), files["report"].read_text(),
                 files["sass"].read_text(), root, hit)


# ---- static figures ------------------------------------------------------------------------
_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_resources(report: str) -> dict[str, dict[str, int]]:
    """Per kernel: ``registers``, ``shared_bytes``, ``stack_bytes``, ``spill_stores``, ``spill_loads``."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in report.splitlines():
        m = _FUNC.search(line)
        if m:
            current = out.setdefault(m.group(1), {"registers": 0, "shared_bytes": 0, "stack_bytes": 0,
                                                  "spill_stores": 0, "spill_loads": 0})
            continue
        if current is None:
            continue
        if (m := _SPILL.search(line)) is not None:
            current.update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        if (m := _REGS.search(line)) is not None:
            current["registers"] = int(m.group(1))
        if (m := _SMEM.search(line)) is not None:
            current["shared_bytes"] = int(m.group(1))
    return out


_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[\w.]+)?")
_SASS_FUNC = re.compile(r"Function : (\S+)")


def parse_sass(sass: str) -> dict[str, dict[str, int]]:
    """Per kernel, SASS instruction counts by opcode (``total`` among them)."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in sass.splitlines():
        m = _SASS_FUNC.search(line)
        if m:
            current = out.setdefault(m.group(1), {"total": 0})
            continue
        if current is None:
            continue
        m = _SASS_LINE.search(line)
        if m:
            op = m.group(1)
            current[op] = current.get(op, 0) + 1
            current["total"] += 1
    return out


_PTX_ENTRY = re.compile(r"\.entry\s+(\w+)\(")
_PTX_INSN = re.compile(r"^\s+(?:@!?%\w+\s+)?([a-z][a-z0-9]*)(?:\.[\w.]+)?\s")


def parse_ptx(ptx: str) -> dict[str, dict[str, int]]:
    """Per kernel, PTX instruction counts by opcode (upper-cased, ``total`` among them): what the
    figures fall back to where ``cuobjdump`` (which reads the cubin's SASS) is not installed."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in ptx.splitlines():
        m = _PTX_ENTRY.search(line)
        if m:
            current = out.setdefault(m.group(1), {"total": 0})
            continue
        if current is None or line.lstrip().startswith((".", "//", "{", "}", "$")) or ";" not in line:
            continue
        m = _PTX_INSN.match(line)
        if m:
            op = m.group(1).upper()
            current[op] = current.get(op, 0) + 1
            current["total"] += 1
    return out


def occupancy(arch: str, threads: int, registers: int, shared_bytes: int) -> dict[str, float]:
    """Resident blocks and warps per SM, and the fraction of the SM's warps, with the limiter."""
    lim = LIMITS.get(arch, LIMITS[DEFAULT_ARCH])
    warps = -(-max(threads, 1) // 32)
    by = {"warps": lim.max_warps // warps, "blocks": lim.max_blocks}
    if registers:
        per_warp = -(-registers * 32 // lim.reg_granularity) * lim.reg_granularity
        by["registers"] = (lim.registers // per_warp) // warps
    if shared_bytes:
        per_block = -(-(shared_bytes + lim.shared_reserved) // lim.shared_granularity) * lim.shared_granularity
        by["shared"] = lim.shared_bytes // per_block
    limiter = min(by, key=lambda k: by[k])
    blocks = max(by[limiter], 0)
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": round(blocks * warps / lim.max_warps, 4), "limited_by": limiter}


class CudaModule(Kernel):
    """A compiled CUDA program: inspectable everywhere, callable where a CUDA device is; where
    none is, a call runs ``simulator()`` (the same kernels on the CPU) instead when one was
    given, saying so on the first call (``simulated`` tells afterwards)."""

    target = "cuda"
    threaded = False
    simulator: Callable[[], Kernel] | None = None
    simulated = False

    def __init__(self, func: S.PrimFunc, gen, spec: ArgSpec, built: Built, arch: str):
        super().__init__(func, gen.source, spec)
        self.kernels = tuple(gen.namespace["kernels"])
        self.symbols = tuple(gen.namespace["symbols"])
        self.codegen_stats = tuple(gen.namespace["stats"])
        self.arch, self.ptx, self.cubin = arch, built.ptx, built.cubin
        self.resource_report, self.cache_hit, self.path = built.report, built.cache_hit, built.path
        self.resources = parse_resources(built.report)
        self.sass = built.sass
        # instruction counts of the cubin's SASS (cuobjdump), else of the PTX: which one says
        self.instruction_source = "sass" if built.sass else "ptx"
        self.sass_stats = parse_sass(built.sass) if built.sass else parse_ptx(built.ptx)
        # the machine instructions each kernel holds, read from the cubin itself (no tool needed)
        self.sass_instructions = cubin_instructions(built.cubin)
        missing = [s for s in self.symbols if s not in self.resources]
        if missing:
            raise BuildError(f"kernel {func.name!r}: nvcc's report names no kernel {missing[0]!r}; "
                             f"it lists {sorted(self.resources)}")

    @property
    def occupancy(self) -> dict[str, dict]:
        """Per kernel whose block size is known at build time: see :func:`occupancy`."""
        out = {}
        for k, sym in zip(self.kernels, self.symbols):
            n = k.threads_per_block()
            if n is not None:
                r = self.resources[sym]
                out[sym] = occupancy(self.arch, n, r["registers"], r["shared_bytes"])
        return out

    def figures(self) -> list[dict]:
        """One row per kernel: the static figures a benchmark prints."""
        rows = []
        occ = self.occupancy
        for k, sym in zip(self.kernels, self.symbols):
            r, s = self.resources[sym], self.sass_stats.get(sym, {})
            o = occ.get(sym, {})
            rows.append({"kernel": sym, "arch": self.arch, "block": k.threads_per_block(), **r,
                         "occupancy": o.get("occupancy"), "limited_by": o.get("limited_by"),
                         "sass_instructions": self.sass_instructions.get(sym),
                         "counted_in": self.instruction_source, "instructions": s.get("total", 0),
                         "fma": s.get("FFMA", 0) + s.get("FMA", 0) + s.get("HFMA2", 0),
                         "loads": sum(v for op, v in s.items() if op.startswith(("LDG", "LDS", "LD"))),
                         "shuffles": s.get("SHFL", 0), "barriers": s.get("BAR", 0)})
        return rows

    def launch_dims(self, sizes: list[int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Grid and block of each kernel for a call whose size vars have the values ``sizes``."""
        env = {id(v): x for v, x in zip(self._spec.vars, sizes)}
        return [(tuple(eval_int(e, env, self.name) for e in k.grid), tuple(eval_int(e, env, self.name) for e in k.block))
                for k in self.kernels]

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int], threads: int) -> None:
        from .cuda_driver import run_kernels

        if not self.simulated:
            try:
                run_kernels(self, arrays, sizes)
                return
            except NoDeviceError as e:
                if self.simulator is None:
                    raise
                warnings.warn(f"kernel {self.name!r}: {str(e).split(',')[0]}; it runs on the simulator (cuda-sim) "
                              "instead", TesselWarning, stacklevel=3)
                self._simulation, self.simulated = self.simulator(), True
        self._simulation._run(arrays, ptrs, sizes, threads)


def load_cuda(func: S.PrimFunc, gen, target, finish=None) -> CudaModule:
    """Compile ``gen`` with nvcc for ``target``'s architecture and wrap it as a module."""
    arch = getattr(target, "mcpu", None) or DEFAULT_ARCH
    built = compile_cuda(gen.source, func.name, arch, tuple(getattr(target, "flags", ())))
    spec = ArgSpec(func, {func.params[k] for k in gen.outputs})
    return CudaModule(func, gen, spec, built, arch)


__all__ = ["ARCHS", "DEFAULT_ARCH", "LIMITS", "CudaModule", "compile_cuda", "find_nvcc", "load_cuda", "occupancy",
           "parse_ptx", "parse_resources", "parse_sass"]
