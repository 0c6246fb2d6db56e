"""``tvm.contrib.nvcc``: CUDA source to PTX or a cubin with the toolkit's nvcc, and the questions
TVM's scripts ask of a compute capability (fp16, int8, tensor cores).

``compile_cuda`` runs the nvcc that tessel's cuda target uses ($NVCC, else on the PATH) in a
temporary directory; its options are passed as separate arguments, never through a shell.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ...errors import BuildError
from ...runtime.compiler import run_tool
from ...runtime.cuda import DEFAULT_ARCH, find_nvcc

FORMATS = ("ptx", "cubin", "fatbin")


def compile_cuda(code: str, target_format: str = "ptx", arch: str | list | None = None,
                 options: list[str] | str | None = None, path_target: str | None = None) -> bytearray:
    """``code`` compiled by nvcc to ``target_format`` for ``arch`` (``sm_80``; tessel's default
    architecture when None), as bytes (TVM returns a bytearray)."""
    if target_format not in FORMATS:
        raise BuildError(f"tvm.contrib.nvcc.compile_cuda: target_format {target_format!r}; write one of {FORMATS}")
    archs = [arch or DEFAULT_ARCH] if not isinstance(arch, list) else arch
    opts = [options] if isinstance(options, str) else list(options or [])
    with tempfile.TemporaryDirectory(prefix="tessel-nvcc-") as tmp:
        src, out = Path(tmp) / "my_kernel.cu", Path(path_target or Path(tmp) / f"my_kernel.{target_format}")
        src.write_text(code)
        cmd = [find_nvcc(), f"--{target_format}", "-O3", *(f"-arch={a}" for a in archs), *opts, "-o", str(out), str(src)]
        res = run_tool(cmd, what="tvm.contrib.nvcc.compile_cuda")  # stopped past $TESSEL_CC_TIMEOUT
        if res.returncode != 0:
            raise BuildError(f"tvm.contrib.nvcc.compile_cuda: nvcc failed:\n{(res.stderr or res.stdout).strip()}")
        return bytearray(out.read_bytes())


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """``"8.6"`` as ``(8, 6)``."""
    major, _, minor = str(compute_version).partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise BuildError(f"tvm.contrib.nvcc: compute version {compute_version!r} is not MAJOR.MINOR, such as '8.0'")
    return int(major), int(minor)


def have_fp16(compute_version: str) -> bool:
    major, minor = parse_compute_version(compute_version)
    return (major, minor) >= (5, 3) and (major, minor) != (6, 1)


def have_int8(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (6, 1)


def have_tensorcore(compute_version: str | None = None, target=None) -> bool:
    """False: the GPU may have tensor cores, but tessel's cuda target emits no wmma code."""
    return False


__all__ = ["compile_cuda", "have_fp16", "have_int8", "have_tensorcore", "parse_compute_version"]
