"""The 30 kernels of PolyBench/C 4.2, written as PolyBench states them, in tessel's own words.

Each module holds one of PolyBench's categories; :data:`KERNELS` lists them all. A kernel is
checked against a NumPy transcription of PolyBench's loops (``common.check``) and measured by
``python -m benchmarks.polybench``.
"""

from __future__ import annotations

from . import blas, datamining, kernels, medley, solvers, stencils
from .common import Kernel, Program, check, footprint, run

KERNELS: list[Kernel] = [*blas.KERNELS, *kernels.KERNELS, *solvers.KERNELS, *datamining.KERNELS,
                          *medley.KERNELS, *stencils.KERNELS]
BY_NAME: dict[str, Kernel] = {k.name: k for k in KERNELS}

__all__ = ["BY_NAME", "KERNELS", "Kernel", "Program", "check", "footprint", "run"]
