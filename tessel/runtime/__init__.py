"""Running generated code: compiler invocation, the kernel cache, argument checks, kernels."""

from __future__ import annotations

from .args import ArgSpec
from .blas import share_blas_threads
from .export import export_library
from .loader import load_module
from .module import CKernel, Kernel, KernelRuntimeError, PythonKernel

__all__ = ["ArgSpec", "CKernel", "Kernel", "KernelRuntimeError", "PythonKernel", "export_library", "load_module",
           "share_blas_threads"]
