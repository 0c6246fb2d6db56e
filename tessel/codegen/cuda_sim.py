"""The ``cuda-sim`` target's generator: the device IR as Python that runs with GPU semantics.

It runs the very kernels the CUDA target compiles (``tessel.passes.gpu.device_pipeline``: the
host/device split, virtual threads, cross-thread reductions as shuffles, barriers), read as
that target reads them: everything in a kernel is run by every thread of every block; a loop
bound to ``threadIdx.x`` inside it is not a loop but ``var = min + threadIdx.x`` (skipped by
threads past its extent), a thread's variable read outside its loops is its index, and a
statement under no thread loop is run redundantly by every thread, as TVM means it.
``vthread`` loops left by the pipeline are serial loops of each thread.

Each kernel becomes a nested generator function of one thread's indices, defined where the
launch happens (so it sees the host's variables) and handed to the runtime's ``_launch``
(:mod:`tessel.runtime.cuda_sim`), which runs the threads of a block phase by phase: a barrier
is a ``yield``, a warp shuffle a ``yield`` whose answer is the other lane's value. Accesses to
shared memory, and to global buffers the kernel writes, go through ``ld``/``st`` with the
number of their statement, so the runtime can name both statements of a race. Names are data:
buffer names reach the source only as Python string literals (``names.python_string``),
identifiers through the name table.
"""

from __future__ import annotations

import numpy as np

from ..errors import BuildError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import collect, free_vars
from ..ir.names import comment, python_string
from ..ir.stmt import LoopKind
from ..passes.gpu.kernel import host_loop
from . import Generated
from .common import check_func, written_buffers
from .python import _ATOM, _namespace, _np_name, _PyGen

#: thread axes a launch has, in CUDA's order, and the kernel function's parameter for each
LAUNCH_TAGS = S.LAUNCH_TAGS
_INDEX = ("_bx", "_by", "_bz", "_tx", "_ty", "_tz")
#: the barrier (TVM's spelling) and the warp shuffles: kind 0 reads a lane, 1 a lane down, 2 up
BARRIER = "tvm_storage_sync"
SHUFFLES = {"tvm_warp_shuffle": 0, "tvm_warp_shuffle_down": 1, "tvm_warp_shuffle_up": 2}
ACTIVEMASK = "tvm_warp_activemask"
_OWN = {"_launch", "_SimBuf", "_empty", "_sim", "_blk", "_STMTS", *_INDEX}


def _is_virtual(tag: str) -> bool:
    return tag.startswith(("vthread", "cthread"))


def _is_launch_loop(s) -> bool:
    return isinstance(s, S.For) and s.kind == LoopKind.THREAD_BINDING and not _is_virtual(s.thread_tag)


class _SimGen(_PyGen):
    def __init__(self, func: S.PrimFunc):
        super().__init__(func)
        self.names.reserved = frozenset(self.names.reserved | _OWN)
        self.stmts: list[str] = []
        self._sid: dict[int, int] = {}
        self.current: object = None  # the statement whose accesses are being written
        self.kernel: S.For | None = None
        self.watched: set[int] = set()  # ids of the buffers the current kernel's accesses are logged for
        self.kernels = 0
        self.slots = 0
        self.consts: dict[tuple, str] = {}
        self.const_values: dict[str, object] = {}

    # ---- statement numbers (for race reports) --------------------------------------------
    def sid(self) -> int:
        node = self.current
        k = self._sid.get(id(node))
        if k is None:
            k = self._sid[id(node)] = len(self.stmts)
            self.stmts.append(_one_line(node))
        return k

    def _at(self, node, fn, *args):
        old, self.current = self.current, node
        try:
            return fn(*args)
        finally:
            self.current = old

    # ---- constants: made once (a NumPy scalar costs microseconds to construct) ------------
    def visit_IntImm(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype.is_bool:
            return super().visit_IntImm(e)
        return self._const(e.dtype, e.value), _ATOM

    def visit_FloatImm(self, e: E.FloatImm) -> tuple[str, int]:
        return self._const(e.dtype, e.value), _ATOM

    def _const(self, dt, value) -> str:
        key = (str(dt), type(value).__name__, repr(value))
        found = self.consts.get(key)
        if found is None:
            token = object()  # its own name from the name table: never a user's
            found = self.names.get(token, f"k_{_np_name(dt)}")
            self.consts[key] = found
            self.const_values[found] = np.dtype(_np_name(dt)).type(value)
        return found

    # ---- memory --------------------------------------------------------------------------
    def visit_BufferLoad(self, e: E.BufferLoad) -> tuple[str, int]:
        if self.kernel is None or id(e.buffer) not in self.watched:
            return super().visit_BufferLoad(e)
        buf = self.names.get(e.buffer, e.buffer.name)
        fn = "vld" if e.indices[0].dtype.lanes > 1 else "ld"
        return f"{buf}.{fn}({self.expr(e.indices[0])}, {self.sid()})", _ATOM

    def visit_BufferStore(self, s: S.BufferStore, depth: int) -> None:
        if self.kernel is None or id(s.buffer) not in self.watched:
            return self._at(s, super().visit_BufferStore, s, depth)
        self.current = s
        buf = self.names.get(s.buffer, s.buffer.name)
        fn = "vst" if s.indices[0].dtype.lanes > 1 else "st"
        self.emit(depth, f"{buf}.{fn}({self.expr(s.indices[0])}, {self.expr(s.value)}, {self.sid()})")
        self.current = None

    def visit_Allocate(self, s: S.Allocate, depth: int) -> None:
        b = s.buffer
        size = " * ".join(f"int({self.expr(x)})" for x in b.shape) or "1"
        name = self.names.get(b, b.name)
        dt = _np_name(b.dtype)
        scope = b.scope or "global"
        if scope in ("shared", "warp"):  # the block's (or warp's): the runtime hands every thread one buffer
            self.slots += 1
            self.watched.add(id(b))
            self.emit(depth, f"{name} = _blk.{scope}({self.slots}, {size}, {dt}, {python_string(b.name)})")
        else:  # local, or global inside a kernel, which the CUDA target also makes the thread's own
            text = python_string(b.name)
            self.emit(depth, f"{name} = _SimBuf(_empty({size}, {dt}, {text}, _sim), {text}, _sim)")
        self.stmt(s.body, depth)

    # ---- control -------------------------------------------------------------------------
    def visit_IfThenElse(self, s: S.IfThenElse, depth: int) -> None:
        self._at(s, super().visit_IfThenElse, s, depth)

    def visit_LetStmt(self, s: S.LetStmt, depth: int) -> None:
        self._at(s, super().visit_LetStmt, s, depth)

    def visit_Evaluate(self, s: S.Evaluate, depth: int) -> None:
        v = s.value
        if isinstance(v, E.Call) and v.op == BARRIER:
            scope = v.args[0].value if v.args and isinstance(v.args[0], E.StringImm) else "shared"
            if self.kernel is None:
                raise BuildError(f"kernel {self.func.name!r}: a barrier ({BARRIER}) outside any thread-bound loop")
            self.current = s  # __syncwarp is a warp operation of its own kind (3), __syncthreads a barrier
            self.emit(depth, f"yield (1, {self.sid()}, 3, None, 0, 32)" if scope == "warp" else f"yield (0, {self.sid()})")
            self.current = None
            return
        self._at(s, super().visit_Evaluate, s, depth)

    def visit_Call(self, e: E.Call) -> tuple[str, int]:
        if e.op in SHUFFLES:
            if self.kernel is None:
                raise BuildError(f"kernel {self.func.name!r}: {e.op} outside any thread-bound loop")
            _, value, lane, width = e.args[:4]
            args = ", ".join((str(self.sid()), str(SHUFFLES[e.op]), self.expr(value), self.expr(lane),
                              self.expr(width)))
            self.pinned = True
            return f"(yield (1, {args}))", _ATOM
        if e.op == ACTIVEMASK:  # every lane: the lanes waiting at a shuffle are the ones taking part
            return self._const(e.dtype, (1 << e.dtype.bits) - 1 if e.dtype.is_uint else -1), _ATOM
        if e.op == BARRIER:
            raise BuildError(f"kernel {self.func.name!r}: {BARRIER} is a statement, not a value")
        return super().visit_Call(e)

    def visit_For(self, s: S.For, depth: int) -> None:
        if not _is_launch_loop(s):
            return self._at(s, super().visit_For, s, depth)
        tag = s.thread_tag
        index = _INDEX[LAUNCH_TAGS.index(tag)]
        self.current = s
        lo, ext = self._loop_bound(s.min), self._loop_bound(s.extent)
        self.current = None
        name = self.names.get(s.loop_var, s.loop_var.name)
        self.emit(depth, f"if {index} < {ext}:  # " + comment(f"{s.loop_var.name} bound to {tag}"))
        if lo != "0":
            self.emit(depth + 1, f"{name} = {_np_name(s.loop_var.dtype)}({lo} + {index})")
        self.block(s.body, depth + 1)
        if lo != "0":
            self.emit(depth, f"{name} = {_np_name(s.loop_var.dtype)}({index})")

    def _launch(self, k, depth: int) -> None:
        """One kernel (a ``tessel.passes.gpu.Kernel``): its thread function, then its launch."""
        s = k.body
        loops = collect(s, _is_launch_loop)
        for loop in loops:
            if loop.thread_tag not in LAUNCH_TAGS:
                raise BuildError(f"kernel {self.func.name!r}: loop {loop.loop_var.name} is bound to "
                                 f"{loop.thread_tag!r}; thread axes are {', '.join(LAUNCH_TAGS)} and vthread")
        self.kernels += 1
        kname = f"_k{self.kernels}"
        self.watched = {id(n.buffer) for n in collect(s, lambda n: isinstance(n, S.BufferStore))
                        if (n.buffer.scope or "global") == "global"}
        self.emit(depth, f"def {kname}({', '.join(_INDEX)}, _blk):  # " + comment(f"kernel {k.name}"))
        self.kernel = s
        threads = {id(loop.loop_var): loop for loop in loops}
        for loop in threads.values():  # a thread's var may be read outside its loops: it is the thread's index
            self.bound.add(id(loop.loop_var))
            index = _INDEX[LAUNCH_TAGS.index(loop.thread_tag)]
            self.emit(depth + 1, f"{self.names.get(loop.loop_var, loop.loop_var.name)} = "
                                 f"{_np_name(loop.loop_var.dtype)}({index})")
        self.block(s, depth + 1)
        for key in threads:
            self.bound.discard(key)
        self.emit(depth + 1, "return")
        self.emit(depth + 1, "yield  # a generator: barriers and shuffles yield")
        self.kernel, self.watched = None, set()
        for tag, ext in k.launch:
            late = sorted(v.name for v in free_vars(ext) if id(v) not in self.bound)
            if late:
                raise BuildError(
                    f"kernel {self.func.name!r}: the extent of {tag} ({ext}) depends on {', '.join(late)}, known only "
                    "inside the kernel; a launch's extents must be known before it starts (split by a constant factor)")
        grid = ", ".join(self.expr(e) for e in k.grid)
        block = ", ".join(self.expr(e) for e in k.block)
        self.emit(depth, f"_launch(_sim, {kname}, ({grid}), ({block}))")

    def function(self, kernels) -> str:
        self.begin("cuda-sim", ("_sim",))
        temps: dict[int, S.Buffer] = {}
        for k in kernels:
            temps.update((id(b), b) for b in k.temporaries)
        for b in temps.values():  # global temporaries: the host allocates them before the launches
            size = " * ".join(f"int({self.expr(x)})" for x in b.shape) or "1"
            text = python_string(b.name)
            self.emit(1, f"{self.names.get(b, b.name)} = _SimBuf(_empty({size}, {_np_name(b.dtype)}, {text}, "
                         f"_sim), {text}, _sim)")
        todo = list(kernels)
        self._host(self.func.body, 1, todo)
        for k in todo:  # launches the host walk did not meet (hand-built kernels): in order
            self._launch(k, 1)
        self.emit(1, "return")
        return "\n".join(self.lines) + "\n"

    def _host(self, s: S.Stmt, depth: int, todo: list) -> None:
        """The host's program: its launches in order, inside the loops it runs around them."""
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self._host(x, depth, todo)
        elif isinstance(s, S.AttrStmt | S.Allocate):
            self._host(s.body, depth, todo)
        elif _is_launch_loop(s) and todo:
            self._launch(todo.pop(0), depth)
        elif host_loop(s):  # a scan's steps: one launch (or several) per iteration
            v = s.loop_var
            lo, ext = self._loop_bound(s.min), self._loop_bound(s.extent)
            self.bound.add(id(v))
            name = self.names.get(v, v.name)
            self.emit(depth, f"for {name} in _loop({_np_name(v.dtype)}, {lo}, {ext}):  # on the host")
            mark = len(self.lines)
            self._host(s.body, depth + 1, todo)
            if len(self.lines) == mark:
                self.emit(depth + 1, "pass")
            self.bound.discard(id(v))


def _one_line(node) -> str:
    """A statement as a report quotes it: one line (a loop or branch by its head only)."""
    if isinstance(node, S.For):
        return f"for ({node.loop_var.name}, {node.min}, {node.extent})  [{node.kind} {node.thread_tag}]".rstrip()
    if isinstance(node, S.IfThenElse):
        return f"if ({node.condition})"
    if isinstance(node, S.LetStmt):
        return f"{node.var.name} = {node.value}"
    if isinstance(node, S.Evaluate):
        return str(node.value)
    return " ".join(str(node).split()) if node is not None else "?"


def generate_cuda_sim(func: S.PrimFunc, kernels, target=None) -> Generated:
    """The Python of ``func``'s ``kernels`` (``tessel.passes.gpu.device_pipeline``'s, the device
    IR the CUDA target compiles) as thread generators and their launches (the runtime execs it)."""
    check_func(func)
    gen = _SimGen(func)
    source = gen.function(kernels)
    if gen.externs:
        raise BuildError(f"kernel {func.name!r}: cuda-sim cannot call functions outside the kernel "
                         f"({len(gen.externs)} of them); build with the python or C target")
    written = written_buffers(func) | set(func.outputs)
    outputs = tuple(k for k, b in enumerate(func.params) if b in written)
    ns = _namespace()
    ns["_STMTS"] = tuple(gen.stmts)
    ns.update(gen.const_values)
    return Generated("cuda-sim", func.name, gen.names.get(func, func.name), source, outputs, namespace=ns)


__all__ = ["BARRIER", "SHUFFLES", "generate_cuda_sim"]
