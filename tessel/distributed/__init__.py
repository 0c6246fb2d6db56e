"""Distributed execution over MPI ranks: ``s[T].distribute(axis)``, the exact communication
plan (``plan``), per-rank kernels with halo exchanges and Allreduce (``build``), and the
communicators they run over (MPI through mpi4py, one process, or in-process threads for tests).
See docs/distributed.md."""

from __future__ import annotations

from ..poly.distribute import Box
from .api import build, plan
from .comm import Comm, MPIComm, SelfComm, ThreadComm, run_ranks, world
from .kernel import DistArray, DistKernel
from .plan import Plan, Split, Transfer, grid_shape
from .timeloop import StepKernel, StepPlan, Window

__all__ = ["Box", "Comm", "DistArray", "DistKernel", "MPIComm", "Plan", "SelfComm", "Split", "StepKernel", "StepPlan",
           "ThreadComm", "Transfer", "Window",
           "build", "grid_shape", "plan", "run_ranks", "world"]
