"""Warp-scope buffers as registers and shuffles (TVM's "warp" memory).

A stage with ``set_scope("warp")`` holds one element per lane of a warp: InferBound sizes it by
the warp's lanes (``threadIdx.x``). On a GPU no memory is needed for it: each lane keeps its own
element in a register, and a read of lane ``e``'s element is a shuffle from lane ``e``
(``tvm_warp_shuffle``, width the lanes). What is accepted: the buffer has as many elements as
``threadIdx.x`` has threads (a power of two up to 32, the block's whole x extent), every store
is at the lane's own index, and every load sits in a ``threadIdx.x`` loop over all lanes (so the
whole warp takes part in the shuffle). Other warp buffers are refused with what to use instead.
"""

from __future__ import annotations

from ...errors import GpuError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import Mutator, collect, structural_equal
from ...ir.stmt import LoopKind
from .kernel import Kernel

WARP = 32


def _lanes(kernel: Kernel, buf: S.Buffer) -> int:
    """The lanes of ``buf`` (its element count), after checking the block fits the rule."""
    size = 1
    for d in buf.shape:
        size *= d.value if isinstance(d, E.IntImm) else -1
    x = kernel.extent("threadIdx.x")
    ok = isinstance(x, E.IntImm) and x.value == size and 0 < size <= WARP and size & (size - 1) == 0
    if not ok:
        raise GpuError(f"kernel {kernel.name!r}: warp buffer {buf.name!r} has {size if size > 0 else 'a symbolic number of'} "
                       f"elements for a block whose threadIdx.x extent is {x}; warp memory is one element per lane "
                       "(as many elements as threadIdx.x threads, a power of two up to 32): bind the stage's axis "
                       "to threadIdx.x with that extent, or use scope 'shared'")
    return size


class _Lower(Mutator):
    def __init__(self, kernel: Kernel, buf: S.Buffer, lanes: int):
        super().__init__()
        self.kernel, self.buf, self.lanes = kernel, buf, lanes
        self.reg = S.Buffer(f"{buf.name}.reg", buf.dtype, (E.IntImm(1, "int32"),), scope="local")
        self.lane: list[E.Var] = []  # the enclosing threadIdx.x loop variables
        self.full: list[bool] = []

    def visit_For(self, s: S.For):
        if s.kind == LoopKind.THREAD_BINDING and s.thread_tag == "threadIdx.x":
            self.lane.append(s.loop_var)
            self.full.append(isinstance(s.extent, E.IntImm) and s.extent.value == self.lanes)
            try:
                return self.generic_visit(s)
            finally:
                self.lane.pop()
                self.full.pop()
        return self.generic_visit(s)

    def visit_BufferStore(self, s: S.BufferStore):
        value = self.visit(s.value)
        if s.buffer is not self.buf:
            return S.BufferStore(s.buffer, value, [self.visit(i) for i in s.indices])
        if not self.lane or not structural_equal(s.indices[0], self.lane[-1]):
            raise GpuError(f"kernel {self.kernel.name!r}: warp buffer {self.buf.name!r} is stored at "
                           f"{s.indices[0]}, not at the lane's own index (threadIdx.x); use scope 'shared'")
        return S.BufferStore(self.reg, value, [E.IntImm(0, "int32")])

    def visit_BufferLoad(self, e: E.BufferLoad):
        if e.buffer is not self.buf:
            return self.generic_visit(e)
        own = E.BufferLoad(self.reg, [E.IntImm(0, "int32")])
        if self.lane and structural_equal(e.indices[0], self.lane[-1]):
            return own
        if not self.lane or not self.full[-1]:
            raise GpuError(f"kernel {self.kernel.name!r}: warp buffer {self.buf.name!r} is read where not every "
                           "lane of the warp runs (outside a threadIdx.x loop over all lanes), so no shuffle can "
                           "serve it; use scope 'shared'")
        src = self.visit(e.indices[0])
        mask = E.Call("uint32", "tvm_warp_activemask", [])
        return E.Call(self.buf.dtype, "tvm_warp_shuffle",
                      [mask, own, src, E.IntImm(self.lanes, "int32"), E.IntImm(WARP, "int32")])


class _Allocs(Mutator):
    statements_only = True

    def __init__(self, kernel: Kernel):
        super().__init__()
        self.kernel = kernel

    def visit_Allocate(self, s: S.Allocate):
        body = self.visit(s.body)
        if s.buffer.scope != "warp":
            return s if body is s.body else S.Allocate(s.buffer, body)
        low = _Lower(self.kernel, s.buffer, _lanes(self.kernel, s.buffer))
        return S.Allocate(low.reg, low.visit(body))


def lower_warp_memory(kernel: Kernel) -> Kernel:
    """``kernel`` with every warp-scope buffer in registers, its cross-lane reads as shuffles."""
    if not collect(kernel.body, lambda n: isinstance(n, S.Allocate) and n.buffer.scope == "warp"):
        return kernel
    return kernel.with_body(_Allocs(kernel).visit(kernel.body))


__all__ = ["lower_warp_memory"]
