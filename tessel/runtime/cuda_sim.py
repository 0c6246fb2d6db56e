"""The ``cuda-sim`` runtime: GPU kernels run on the CPU with GPU semantics, and races refused.

The generated code (:mod:`tessel.codegen.cuda_sim`) writes each kernel as a Python generator
function of one thread's indices: it yields at a barrier (``(BAR, statement)``) and at a warp
shuffle (``(SHFL, statement, kind, value, lane, width)``, whose answer is sent back in). A
launch runs the blocks one after another, in a shuffled order (a GPU promises none), and in a
block advances every thread to its next yield, phase by phase:

* all threads at the same barrier: the phase ends, the next begins (shared memory is then
  visible to all); some at a barrier while others finished or wait at another one: a
  :class:`~tessel.errors.DivergentBarrierError`;
* threads at a shuffle: once no thread of the block can run any further, each warp's waiting
  lanes exchange their values (lanes are linear thread ids modulo 32, as CUDA numbers them).

Race detection: every access to shared memory, and to global memory a kernel writes, is
logged per address with the thread, its block's phase, the value written and the statement.
Two different threads conflict on an address when they are in different blocks (nothing orders
blocks within a launch) or in one block within one phase; a conflict where one of them writes
is a :class:`~tessel.errors.RaceError`, except writes of one same value (redundant computation,
which TVM emits for stages not bound to threads) and a thread reading back the value it wrote
itself when every writer wrote that value. Global memory only read by a kernel is not logged.
"""

from __future__ import annotations

import linecache
import random
from collections.abc import Callable
from itertools import count

import numpy as np

from ..errors import DivergentBarrierError, KernelRuntimeError, RaceError
from ..ir.checked_array import CheckedArray
from ..ir.names import comment, shown
from ..ir.stmt import PrimFunc
from .args import ArgSpec
from .loader import compile_refusal
from .module import PythonKernel

BAR, SHFL = 0, 1  # what a thread yields: a barrier of its block, or a warp operation
SYNC = 3  # the warp operation that is a barrier of the warp (the shuffles are 0, 1 and 2)
WARP = 32
_COUNTER = count()


class Sim:
    """One call of a kernel: the running thread, its block's phase, the launch number."""

    __slots__ = ("block", "bdims", "cur", "epoch", "gdims", "kernel", "order_seed", "phase", "stmts", "wphase")

    def __init__(self, kernel: str, stmts: tuple[str, ...], order_seed: int = 0):
        self.kernel, self.stmts, self.order_seed = kernel, stmts, order_seed
        self.block = self.cur = self.phase = self.epoch = 0
        self.gdims = self.bdims = (1, 1, 1)
        self.wphase: list[int] = [0]  # per thread of the running block: the warp barriers it passed

    def who(self, key: tuple[int, int]) -> str:
        """``block (x, y, z) thread (x, y, z)`` of a logged (block, thread) pair."""
        return f"block {_coords(key[0], self.gdims)} thread {_coords(key[1], self.bdims)}"


def _coords(lin: int, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    return lin % dims[0], lin // dims[0] % dims[1], lin // (dims[0] * dims[1])


def _ordered(other: tuple, p: int, q: int, me: tuple, phase: int, wp: int) -> bool:
    """Whether an access by ``other`` (in its block's phase ``p``, its warp's phase ``q``) is
    ordered before one by ``me`` now: the same thread, or one block with a barrier between, or
    one warp with a warp barrier between. Different blocks are never ordered within a launch."""
    if other == me:
        return True
    if other[0] != me[0]:
        return False
    return p != phase or (other[1] // WARP == me[1] // WARP and q != wp)


def _same(a, b) -> bool:
    return bool(a == b) or (a != a and b != b)  # one NaN written twice is one value


class SimBuf(CheckedArray):
    """A flat array that refuses out-of-bounds indices and, in kernels, logs who touched what.

    ``ld``/``st`` (and ``vld``/``vst`` for vectors) are what kernel code calls on the buffers
    it must watch; plain indexing (host code, read-only inputs) is not logged."""

    __slots__ = ("epoch", "log", "sim")

    def __init__(self, a: np.ndarray, name: str, sim: Sim):
        super().__init__(a, name)
        self.sim = sim
        self.log: dict[int, list] = {}
        self.epoch = sim.epoch

    def _oob(self, what: str, i) -> KernelRuntimeError:
        return KernelRuntimeError(
            f"kernel {self.sim.kernel!r}: {self.sim.who((self.sim.block, self.sim.cur))} {what} "
            f"{shown(self.name)}[{int(i)}], outside its {self.n} elements (caught by cuda-sim; on a GPU "
            "this corrupts memory or faults)")

    # ---- logged accesses ---------------------------------------------------------------------
    def _cell(self, i: int) -> list:
        sim = self.sim
        if self.epoch != sim.epoch:  # a new launch: nothing of the last one conflicts
            self.log, self.epoch = {}, sim.epoch
        cell = self.log.get(i)
        if cell is None:
            # writes: thread -> (phase, warp phase, value, sid); reads: thread -> (phase, warp phase, sid, own)
            cell = self.log[i] = [{}, {}]
        return cell

    def ld(self, i, sid: int):
        v = self[i]
        self._read(int(i), sid)
        return v

    def st(self, i, v, sid: int) -> None:
        self[i] = v
        self._write(int(i), self.a[int(i)], sid)

    def vld(self, i: np.ndarray, sid: int) -> np.ndarray:
        v = self.vget(i)
        for k in i.tolist():
            self._read(k, sid)
        return v

    def vst(self, i: np.ndarray, v, sid: int) -> None:
        self.vset(i, v)
        for k in i.tolist():
            self._write(k, self.a[k], sid)

    def _read(self, i: int, sid: int) -> None:
        sim = self.sim
        me, phase, wp = (sim.block, sim.cur), sim.phase, sim.wphase[sim.cur]
        writes, reads = self._cell(i)
        mine = writes.get(me)
        own = mine[2] if mine is not None and mine[0] == phase and mine[1] == wp else None
        for other, (p, q, v, s) in writes.items():
            if not _ordered(other, p, q, me, phase, wp) and (own is None or not _same(own, v)):
                raise self._race(i, other, s, f"wrote {v}", me, sid, "reads it")
        reads[me] = (phase, wp, sid, own)

    def _write(self, i: int, v, sid: int) -> None:
        sim = self.sim
        me, phase, wp = (sim.block, sim.cur), sim.phase, sim.wphase[sim.cur]
        if self.epoch == sim.epoch and i not in self.log:  # the first access: nothing to conflict with
            self.log[i] = [{me: (phase, wp, v, sid)}, {}]
            return
        writes, reads = self._cell(i)
        for other, (p, q, w, s) in writes.items():
            if not _ordered(other, p, q, me, phase, wp) and not _same(w, v):
                raise self._race(i, other, s, f"wrote {w}", me, sid, f"writes {v}")
        for other, (p, q, s, own) in reads.items():
            if not _ordered(other, p, q, me, phase, wp) and (own is None or not _same(own, v)):
                raise self._race(i, other, s, "read it", me, sid, f"writes {v}")
        writes[me] = (phase, wp, v, sid)

    def _race(self, i: int, a: tuple, sa: int, what_a: str, b: tuple, sb: int, what_b: str) -> RaceError:
        sim = self.sim
        where = "in different blocks" if a[0] != b[0] else "between the same two barriers"
        ta, tb = sim.who(a), sim.who(b)
        sta, stb = sim.stmts[sa], sim.stmts[sb]
        msg = (f"kernel {sim.kernel!r}: data race on {shown(self.name)}[{i}] {where}:\n"
               f"  {ta} {what_a} in: {sta}\n  {tb} {what_b} in: {stb}\n"
               "the value depends on which thread runs first; put a barrier between the two accesses "
               "(a shared stage read by other threads needs its producer completed first), or make each "
               "address written by one thread only")
        return RaceError(msg, buffer=self.name, threads=(_split(a, sim), _split(b, sim)), statements=(sta, stb))


def _split(key: tuple[int, int], sim: Sim) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return _coords(key[0], sim.gdims), _coords(key[1], sim.bdims)


class Block:
    """One block's shared memory (and warp memory), made on the first thread's request."""

    __slots__ = ("bufs", "sim")

    def __init__(self, sim: Sim):
        self.sim, self.bufs = sim, {}

    def shared(self, slot: int, n, dtype, name: str) -> SimBuf:
        buf = self.bufs.get(slot)
        if buf is None:
            buf = self.bufs[slot] = SimBuf(_empty(n, dtype, name, self.sim), name, self.sim)
        return buf

    def warp(self, slot: int, n, dtype, name: str) -> SimBuf:
        """Warp memory, as TVM lowers it: one copy per group of ``threadIdx.x`` lanes (a warp,
        or a row of the block when ``threadIdx.x`` spans fewer than 32 threads)."""
        key = (slot, self.sim.cur // min(self.sim.bdims[0], WARP))
        buf = self.bufs.get(key)
        if buf is None:
            buf = self.bufs[key] = SimBuf(_empty(n, dtype, name, self.sim), name, self.sim)
        return buf


def _empty(n, dtype, name: str, sim: Sim) -> np.ndarray:
    try:
        return np.full(max(int(n), 0), np.nan if np.dtype(dtype).kind == "f" else 0, dtype=dtype)
    except (MemoryError, ValueError):
        raise KernelRuntimeError(f"kernel {sim.kernel!r} could not allocate {shown(name)} of {int(n)} elements") from None


def launch(sim: Sim, kernel: Callable, grid: tuple, block: tuple) -> None:
    """Run ``kernel`` over every block of ``grid``, each with ``block`` threads."""
    grid, block = tuple(max(int(g), 0) for g in grid), tuple(max(int(b), 0) for b in block)
    if 0 in grid or 0 in block:
        return
    sim.gdims, sim.bdims = grid, block
    sim.epoch += 1
    blocks = list(range(grid[0] * grid[1] * grid[2]))
    random.Random(sim.order_seed).shuffle(blocks)
    for b in blocks:
        _run_block(sim, kernel, b)


def _run_block(sim: Sim, kernel: Callable, b: int) -> None:
    """Every thread of block ``b``, phase by phase (the module docstring says how)."""
    bx, by, bz = _coords(b, sim.gdims)
    dims = sim.bdims
    n = dims[0] * dims[1] * dims[2]
    blk = Block(sim)
    sim.block, sim.phase = b, 0
    sim.wphase = [0] * n
    gens = []
    for t in range(n):
        tx, ty, tz = _coords(t, dims)
        sim.cur = t
        gens.append(kernel(bx, by, bz, tx, ty, tz, blk))
    order = list(range(n - 1, -1, -1))  # the last thread first: readers that run before writers show
    todo: dict[int, object] = dict.fromkeys(order)
    at_bar: dict[int, int] = {}
    at_shfl: dict[int, tuple] = {}
    done: list[int] = []
    while True:
        for t, value in list(todo.items()):
            sim.cur = t
            try:
                req = gens[t].send(value)
            except StopIteration:
                done.append(t)
                continue
            (at_bar if req[0] == BAR else at_shfl)[t] = req[1] if req[0] == BAR else req
        todo.clear()
        if at_shfl:
            todo.update(_shuffle(sim, at_shfl))
            at_shfl.clear()
            continue
        if not at_bar:
            return
        _check_barrier(sim, at_bar, done)
        sim.phase += 1
        for buf in blk.bufs.values():  # shared memory forgets the phase that ended; global memory
            buf.log = {}  # keeps its log: other blocks are not ordered by this block's barrier
        todo.update(dict.fromkeys(order))
        at_bar.clear()


def _check_barrier(sim: Sim, at_bar: dict[int, int], done: list[int]) -> None:
    sids = sorted(set(at_bar.values()))
    t0 = min(at_bar)
    if done:
        raise DivergentBarrierError(
            f"kernel {sim.kernel!r}: divergent barrier in block {_coords(sim.block, sim.gdims)}: "
            f"thread {_coords(t0, sim.bdims)} waits at `{sim.stmts[at_bar[t0]]}` but thread "
            f"{_coords(min(done), sim.bdims)} (and {len(done) - 1} more) finished without reaching it; "
            "every thread of a block must reach every barrier (move it out of the condition)")
    if len(sids) > 1:
        t1 = min(t for t, s in at_bar.items() if s != at_bar[t0])
        raise DivergentBarrierError(
            f"kernel {sim.kernel!r}: divergent barrier in block {_coords(sim.block, sim.gdims)}: thread "
            f"{_coords(t0, sim.bdims)} waits at `{sim.stmts[at_bar[t0]]}`, thread {_coords(t1, sim.bdims)} "
            f"at another one, `{sim.stmts[at_bar[t1]]}`; every thread of a block must reach the same barriers")


def _shuffle(sim: Sim, waiting: dict[int, tuple]) -> dict[int, object]:
    """The values the waiting lanes of each warp exchange (CUDA's __shfl_sync, _down, _up), or
    their warp barrier (__syncwarp)."""
    out: dict[int, object] = {}
    warps: dict[int, dict[int, tuple]] = {}
    for t, req in waiting.items():
        warps.setdefault(t // WARP, {})[t] = req
    for lanes in warps.values():
        sids = {req[1] for req in lanes.values()}
        if len(sids) > 1:
            a, b = sorted(lanes)[0], next(t for t in sorted(lanes) if lanes[t][1] != lanes[sorted(lanes)[0]][1])
            raise DivergentBarrierError(
                f"kernel {sim.kernel!r}: divergent warp shuffle in block {_coords(sim.block, sim.gdims)}: thread "
                f"{_coords(a, sim.bdims)} is at `{sim.stmts[lanes[a][1]]}`, thread {_coords(b, sim.bdims)} of the "
                f"same warp at `{sim.stmts[lanes[b][1]]}`")
        for t, (_, sid, kind, _value, arg, width) in lanes.items():
            if kind == SYNC:  # __syncwarp: what the lanes wrote before it, they all see after it
                sim.wphase[t] += 1
                out[t] = None
                continue
            src = _source_lane(t, kind, int(arg), int(width))
            if src not in lanes:
                raise KernelRuntimeError(
                    f"kernel {sim.kernel!r}: in block {_coords(sim.block, sim.gdims)}, thread "
                    f"{_coords(t, sim.bdims)} shuffles from lane {src % WARP}, which is not taking part in "
                    f"`{sim.stmts[sid]}` (it exited, waits elsewhere or does not exist): the value is undefined")
            out[t] = lanes[src][3]
    return out


def _source_lane(t: int, kind: int, arg: int, width: int) -> int:
    """The linear thread id lane ``t`` reads: ``kind`` 0 from lane ``arg`` of its segment of
    ``width`` lanes, 1 from ``arg`` lanes down (up the ids), 2 from ``arg`` lanes up; a lane
    whose source leaves its segment reads itself, as CUDA's do."""
    lane = t % WARP
    base = t - lane + (lane // width) * width
    pos = lane % width
    if kind == 0:
        return base + arg % width
    src = pos + arg if kind == 1 else pos - arg
    return base + src if 0 <= src < width else t


class SimKernel(PythonKernel):
    """A kernel for ``target="cuda-sim"``: the generated host function with its launches."""

    target = "cuda-sim"

    def __init__(self, func: PrimFunc, source: str, spec: ArgSpec, impl: Callable, size_types: list,
                 stmts: tuple[str, ...], names: tuple[str, ...]):
        super().__init__(func, source, spec, impl, size_types)
        self._stmts, self._names = stmts, names
        self.block_order_seed = 0  # which (fixed) shuffled order the blocks run in

    def _run(self, arrays: tuple[np.ndarray, ...], ptrs: list[int], sizes: list[int], threads: int) -> None:
        sim = Sim(self.name, self._stmts, self.block_order_seed)
        bufs = [SimBuf(a.reshape(-1), name, sim) for a, name in zip(arrays, self._names)]
        typed = [t(v) for t, v in zip(self._size_types, sizes)]
        with np.errstate(all="ignore"):
            self._impl(sim, *bufs, *typed)


def load_cuda_sim(func: PrimFunc, gen, target=None, finish: Callable | None = None) -> SimKernel:
    """Exec the generated code with the simulator's helpers and wrap its entry point."""
    source = gen.source
    spec = ArgSpec(func, {func.params[k] for k in gen.outputs})
    filename = f"<tessel-cuda-sim {comment(func.name, 60)} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns = dict(gen.namespace or {})
    ns.update(_launch=launch, _SimBuf=SimBuf, _empty=_empty)
    try:
        exec(compile(source, filename, "exec"), ns)
    except (SyntaxError, RecursionError, MemoryError) as e:
        raise compile_refusal(func.name, source, e) from e
    size_types = [np.dtype("bool" if v.dtype.is_bool else str(v.dtype)).type for v in func.size_vars]
    return SimKernel(func, source, spec, ns[gen.symbol], size_types, ns["_STMTS"],
                     tuple(b.name for b in func.params))
