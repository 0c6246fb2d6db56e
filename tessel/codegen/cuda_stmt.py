"""CUDA device code: the C statement and expression printers, extended where CUDA differs.

Only what a GPU changes is written here; everything else (literals, wrapping arithmetic,
division helpers, intrinsics through the table) is the C generator's:

* a ``thread_binding`` loop over a launch tag is no loop: its variable is the thread's
  (block's) index plus the loop's min, and a guard skips the body for threads past its extent
  when that is shorter than the launch; ``vthread`` and unrolled loops get ``#pragma unroll``;
* ``shared`` allocations are ``__shared__`` arrays (per block); every other allocation inside a
  kernel is per thread (registers, or local memory when indexed dynamically);
* the barrier and warp intrinsics of the device IR are ``__syncthreads()``, ``__shfl_*_sync``;
* a vector store of a vector load of 16 (or 8) contiguous, aligned bytes is one ``float4``
  (``float2``, ``int4`` ...) load and store; other vector statements are written lane by lane.
"""

from __future__ import annotations

import math

from ..arith import Analyzer
from ..errors import BuildError, GpuError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import collect
from ..ir.names import comment
from ..ir.stmt import LoopKind
from .c_expr import ATOM, RESERVED
from .c_helpers import ctype
from .c_stmt import CStmtWriter
from .common import NameTable

LAUNCH_TAGS = S.LAUNCH_TAGS
CUDA_RESERVED = RESERVED | set("""
threadIdx blockIdx blockDim gridDim warpSize float2 float4 int2 int4 uint2 uint4 half half2 __half
__half2 dim3 atomicAdd min max new delete this class template namespace public private operator
""".split())
# (element dtype, lanes) -> the CUDA vector type one load or store moves
VECTOR_TYPES = {("float32", 4): "float4", ("float32", 2): "float2", ("int32", 4): "int4", ("int32", 2): "int2",
                ("uint32", 4): "uint4", ("uint32", 2): "uint2", ("float64", 2): "double2"}
_SHUFFLES = {"tvm_warp_shuffle": "__shfl_sync", "tvm_warp_shuffle_down": "__shfl_down_sync",
             "tvm_warp_shuffle_up": "__shfl_up_sync"}


class CudaWriter(CStmtWriter):
    """One ``__global__`` function: a kernel's body with its launch extents in view."""

    def __init__(self, func: S.PrimFunc, kernel):
        super().__init__(func)
        self.names = NameTable("c", CUDA_RESERVED, ("tsl_", "omp_", "__"))
        self.symbol = self.names.get(kernel, kernel.name)
        self.kernel = kernel
        self.ana = Analyzer()
        self.vector_moves = 0
        self.shared_bytes = 0
        # a thread's variable read outside its loop is the thread's index (TVM's meaning: the init
        # of a cross-thread reduction tests threadIdx.x == 0 before the loop bound to it)
        self.thread_vars = {id(x.loop_var): x for x in collect(
            kernel.body, lambda n: isinstance(n, S.For) and n.kind == LoopKind.THREAD_BINDING
            and n.thread_tag in LAUNCH_TAGS)}

    def visit_Var(self, e: E.Var) -> tuple[str, int]:
        loop = self.thread_vars.get(id(e))
        if loop is not None and id(e) not in self.bound and _is_zero(loop.min):
            return f"(({ctype(e.dtype)}){loop.thread_tag})", ATOM
        return super().visit_Var(e)

    # ---- loops -------------------------------------------------------------------------
    def visit_For(self, s: S.For) -> None:
        if s.kind == LoopKind.THREAD_BINDING and s.thread_tag in LAUNCH_TAGS:
            return self._bound_loop(s)
        if s.kind == LoopKind.PARALLEL:
            raise GpuError(f"kernel {self.kernel.name!r}: loop {s.loop_var.name!r} is parallel; on a GPU bind it "
                           "to blockIdx/threadIdx instead of s[T].parallel(...)")
        return super().visit_For(s)

    def _bound_loop(self, s: S.For) -> None:
        v = s.loop_var
        self.bound.add(id(v))
        name = self.names.get(v, v.name)
        tag = s.thread_tag
        index = f"(({ctype(v.dtype)}){tag})"
        lo = "" if _is_zero(s.min) else f" + {self.expr(s.min, 6)}"
        self.open("")
        self.emit(f"const {ctype(v.dtype)} {name} = {index}{lo};  // bound to {tag}")
        launch = self.kernel.extent(tag)
        if self.ana.can_prove(E.ge(s.extent, launch)):
            self.stmt(s.body)
        else:
            self.open(f"if ({index} < {self.expr(s.extent, 5)})")
            self.stmt(s.body)
            self.close()
        self.close()
        self.bound.discard(id(v))

    def _loop_pragmas(self, s: S.For, region: bool, per_thread: tuple = ()) -> list[str]:
        if s.kind == LoopKind.UNROLLED or (s.kind == LoopKind.THREAD_BINDING and s.thread_tag.startswith("vthread")):
            self.emit("#pragma unroll")
        elif s.kind == LoopKind.THREAD_BINDING:
            self.emit(f"// bound to {comment(s.thread_tag)}: a serial loop of each thread")
        return []

    # ---- memory ------------------------------------------------------------------------
    def visit_Allocate(self, s: S.Allocate) -> None:
        b = s.buffer
        dims = list(b.shape)
        if not all(isinstance(x, E.IntImm) for x in dims):
            raise GpuError(f"kernel {self.kernel.name!r}: buffer {b.name!r} (scope {b.scope}) has the symbolic size "
                           f"{' * '.join(str(x) for x in dims)}; GPU temporaries need a constant size: split the "
                           "axes computed inside the kernel by constant factors")
        count = max(math.prod(x.value for x in dims), 1)
        name = self.names.get(b, b.name)
        self.open("")
        if b.scope.startswith("shared"):
            self.shared_bytes += count * max(b.dtype.bits // 8, 1)
            self.emit(f"__shared__ __align__(16) {ctype(b.dtype)} {name}[{count}];  // {comment(b.name)}, per block")
        else:
            self.emit(f"{ctype(b.dtype)} {name}[{count}];  // {comment(b.name)}, scope {comment(b.scope)}: per thread")
        self.stmt(s.body)
        self.close()

    # ---- barriers and warp operations --------------------------------------------------
    def visit_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        if isinstance(v, E.Call) and v.op == "tvm_storage_sync":
            scope = v.args[0].value if v.args and isinstance(v.args[0], E.StringImm) else "shared"
            self.emit("__syncwarp();" if scope == "warp" else "__syncthreads();")
            return
        super().visit_Evaluate(s)

    def visit_Call(self, e: E.Call) -> tuple[str, int]:
        if e.op in _SHUFFLES:
            mask, value, lane, width, _ = e.args
            return (f"{_SHUFFLES[e.op]}({self.expr(mask)}, {self.expr(value)}, {self.expr(lane)}, "
                    f"{self.expr(width)})"), ATOM
        if e.op == "tvm_warp_activemask":
            return "__activemask()", ATOM
        if e.op == "tvm_storage_sync":
            return "(__syncthreads(), 0)", ATOM
        if e.op == "prefetch":
            return "0", ATOM
        return super().visit_Call(e)

    # ---- vectors -----------------------------------------------------------------------
    def visit_BufferStore(self, s: S.BufferStore) -> None:
        idx = s.indices[0]
        if idx.dtype.lanes == 1 and s.value.dtype.lanes == 1:
            return super().visit_BufferStore(s)
        move = self._vector_move(s)
        if move is not None:
            self.vector_moves += 1
            self.emit(move)
            return
        for lane in range(idx.dtype.lanes):
            super().visit_BufferStore(S.BufferStore(s.buffer, lane_of(s.value, lane), [lane_of(idx, lane)]))

    def _vector_move(self, s: S.BufferStore) -> str | None:
        """``*(float4*)(dst + i) = *(const float4*)(src + j)`` when both are aligned and dense."""
        load, idx = s.value, s.indices[0]
        if not isinstance(load, E.BufferLoad) or not isinstance(idx, E.Ramp):
            return None
        src = load.indices[0]
        lanes = idx.dtype.lanes
        vt = VECTOR_TYPES.get((str(s.buffer.dtype), lanes))
        if vt is None or load.buffer.dtype != s.buffer.dtype or not isinstance(src, E.Ramp):
            return None
        if not (_is_one(idx.stride) and _is_one(src.stride)):
            return None
        for base in (idx.base, src.base):
            if not self.ana.can_prove(E.eq(E.floormod(base, E.IntImm(lanes, base.dtype)), E.IntImm(0, base.dtype))):
                return None
        dst_name = self.names.get(s.buffer, s.buffer.name)
        src_name = self.names.get(load.buffer, load.buffer.name)
        return (f"*({vt}*)({dst_name} + {self.expr(idx.base, 6)}) = "
                f"*(const {vt}*)({src_name} + {self.expr(src.base, 6)});  // {vt}: one {lanes * s.buffer.dtype.bits // 8}-byte move")

    def visit(self, node):
        """Vector expressions outside a store (a reduction over lanes...) are not written here."""
        if isinstance(node, E.PrimExpr) and (node.dtype.lanes != 1 or isinstance(node, E.Ramp | E.Broadcast)):
            raise BuildError(f"kernel {self.kernel.name!r}: the cuda target writes vector code only as whole "
                             f"stores; `{node}` is a vector elsewhere (remove the vectorize of that loop)")
        return super().visit(node)


def lane_of(e: E.PrimExpr, lane: int) -> E.PrimExpr:
    """Lane ``lane`` of a vector expression, as a scalar expression."""
    if e.dtype.lanes == 1 and not isinstance(e, E.Ramp | E.Broadcast):
        return e
    if isinstance(e, E.Ramp):
        return E.add(e.base, E.mul(e.stride, E.IntImm(lane, e.stride.dtype))) if lane else e.base
    if isinstance(e, E.Broadcast):
        return e.value
    if isinstance(e, E.BufferLoad):
        return E.BufferLoad(e.buffer, [lane_of(e.indices[0], lane)])
    if isinstance(e, E.Cast):
        return E.Cast(e.dtype.element, lane_of(e.value, lane))
    if isinstance(e, E.Call):
        return E.Call(e.dtype.element, e.op, [lane_of(a, lane) for a in e.args])
    if isinstance(e, E.Select):
        return E.Select(lane_of(e.condition, lane), lane_of(e.true_value, lane), lane_of(e.false_value, lane))
    if isinstance(e, E.Not):
        return E.Not(lane_of(e.a, lane))
    if isinstance(e, E.BinaryOp):
        return type(e)(lane_of(e.a, lane), lane_of(e.b, lane))
    raise BuildError(f"the cuda target cannot take lane {lane} of `{e}` ({type(e).__name__})")


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def _is_one(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 1


__all__ = ["CUDA_RESERVED", "VECTOR_TYPES", "CudaWriter", "lane_of"]
