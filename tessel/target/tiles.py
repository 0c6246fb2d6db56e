"""Tile shapes derived from a Target: register tiles that fit its register file, cache blocks
that fit its caches, vector splits of its width.

A schedule written with numbers tuned on one machine is slow on the next: a 6 x 64 float32
register tile is 24 AVX-512 registers, but 48 AVX2 ones, and GCC spills most of them to the
stack. The functions here compute those numbers from what the Target says about the machine,
by the analytical model of a register-blocked product (as in the BLIS papers), so the same
schedule is right for AVX2, AVX-512, NEON or a machine with no vectors at all:

* one step of the reduction broadcasts ``rows`` values of one operand, loads ``vectors``
  vectors of the other and does ``rows x vectors`` FMAs into as many accumulators;
* everything must live in registers: accumulators, the loaded vectors,
  :data:`BROADCAST_REGISTERS` broadcast value (the core renames registers, so the next
  broadcast may load into the same one while FMAs still read the last) and
  :data:`SPARE_REGISTERS` for the C compiler's own scheduling;
* unrolled, the reduction lets the compiler start the next steps' loads early, each in a
  register of its own: a tile that fills the register file (no register past the spare) is
  unrolled by :data:`FULL_K_UNROLL` only, others by :data:`K_UNROLL`. That costs the compiler
  its freedom, so a full tile is a candidate only where the best tile that leaves a register
  free has no accumulator beyond the latency's need (AVX2: 5 x 16's 10 are exactly 5 cycles x
  2 pipes; on AVX-512 6 x 64's 24 are plenty, and it stays the tile; on an 8-register machine
  no tile with a register free hides the latency, and the full one is taken). On AVX2 the 6 x
  16 tile unrolled by 4 had 4 register moves and 6 stack accesses in its loop and ran at 85
  GFLOP/s on one core of 101 (matmul 1024); unrolled by 2 it has one move and ran at 90-92,
  the 5 x 16 tile (unrolled by 4) at 88-89 and OpenBLAS at 93 (interleaved, 10th percentile of
  150 runs each);
* the FMA pipes must never wait for a result: at least ``FMA_LATENCY x fma_units``
  independent accumulators;
* the loads must keep pace: FMAs per loaded value (``rows x vectors / (rows + vectors)``)
  at least ``fma_units / LOAD_PORTS``;
* among the tiles that pass, the one with the most FMAs per load (the least pressure on the
  load ports and caches), then the most accumulators, then the fewest vectors.

Nothing here asks the machine: give it a Target (``tessel.target.host()`` for this one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BuildError
from .target import Target

FMA_LATENCY = 5  # cycles from an FMA's inputs to its result on current x86 and Arm cores (4-5)
LOAD_PORTS = 2  # vector loads per cycle a core sustains from L1 (two on every core targeted)
BROADCAST_REGISTERS = 1  # the broadcast operand (renamed by the core for the next one)
SPARE_REGISTERS = 1  # left to the C compiler, to load an operand ahead while the last is in use
K_UNROLL = 4  # reduction steps per unrolled body: loop overhead amortized, code still in the uop cache
FULL_K_UNROLL = 2  # the same for a tile that fills the register file (see the module's model)
MIN_GROUPS = 8  # panel groups a product leaves for the threads to share (see panel_group)
REUSE_COLUMNS = 64  # a panel this wide pays for its row block's reload alone (panel_group)
PEAK_OPERANDS = 2  # registers the FMA-peak loop needs besides its accumulators (multiplier, addend)


@dataclass(frozen=True)
class RegisterTile:
    """``rows`` broadcast rows x ``vectors`` vectors of ``lanes`` lanes, reduction unrolled by
    ``k_unroll``: the accumulators of one tile of the output."""

    rows: int
    vectors: int
    lanes: int
    k_unroll: int = K_UNROLL

    @property
    def cols(self) -> int:
        return self.vectors * self.lanes

    @property
    def accumulators(self) -> int:
        return self.rows * self.vectors

    @property
    def registers(self) -> int:
        """Vector registers the tile's inner step needs."""
        return self.accumulators + self.vectors + BROADCAST_REGISTERS + SPARE_REGISTERS

    @property
    def fmas_per_load(self) -> float:
        return self.accumulators / (self.rows + self.vectors)

    def __str__(self) -> str:
        return (f"{self.rows}x{self.cols} ({self.accumulators} accumulators of {self.lanes} lanes, "
                f"{self.registers} registers, k unrolled by {self.k_unroll})")


def register_tile(target: Target, dtype: str = "float32", *, max_rows: int | None = None,
                  max_cols: int | None = None, rows_divide: int | None = None,
                  max_vectors: int | None = None) -> RegisterTile:
    """The register tile for an FMA reduction on ``target`` (see the module's model).

    ``max_rows``/``max_cols``: the output's extents, so a tile is not wider than what it
    covers (at least one vector stays); ``rows_divide``: an extent the rows must divide (a
    windowed conv's output channels, :func:`stencil_rows_divide`); ``max_vectors``: at most
    this many vectors (a conv with its channels in the lanes: see tessel.autosched.conv)."""
    lanes = target.vector_lanes(dtype)
    need = FMA_LATENCY * target.fma_pipes
    min_ratio = target.fma_pipes / LOAD_PORTS

    def merit(t: RegisterTile) -> tuple:
        return (min(t.accumulators, need), t.fmas_per_load >= min_ratio, round(t.fmas_per_load, 6),
                t.accumulators, -t.vectors)

    cands = [t for t in _tiles(target.registers, lanes, max_rows, max_cols, rows_divide)
             if max_vectors is None or t.vectors <= max_vectors]
    if not cands:  # a register file too small for any tile with its operands beside it
        return RegisterTile(1, 1, lanes)
    roomy = [t for t in cands if t.registers < target.registers]
    if roomy and max(roomy, key=merit).accumulators > need:
        cands = roomy  # the best tile with a register free keeps a chain to spare: no full tile
    return resized(target, max(cands, key=merit), None)


def resized(target: Target, tile: RegisterTile, rows: int | None) -> RegisterTile:
    """``tile`` with ``rows`` rows (None: as it is), its reduction unrolled as the model
    unrolls a tile of that size (by :data:`FULL_K_UNROLL` only where it fills the register
    file): for a schedule that must cut the rows to a divisor of the extent (a TVM peer)."""
    t = RegisterTile(tile.rows if rows is None else rows, tile.vectors, tile.lanes)
    full = t.registers >= target.registers
    return RegisterTile(t.rows, t.vectors, t.lanes, FULL_K_UNROLL if full else K_UNROLL)


def stencil_rows_divide(channels: int | None, window_steps: int) -> int | None:
    """What the channel block of a convolution's register tile must divide (``register_tile``'s
    ``rows_divide``): the output channels where the reduction ends in a window unrolled whole (a
    partial block is a second copy of that unrolled nest: on AVX2 a 3 x 3 conv, 64 channels, ran
    at 0.88x the speed with 6-channel blocks than with 4); nothing without a window (a 1 x 1
    conv: 6 channels x 2 vectors, 12 accumulators, ran 1.10x faster than 4 x 2 on one core
    and 1.11x on two; interleaved, 200 calls each)."""
    return channels if window_steps > 1 else None


def _tiles(regs: int, lanes: int, max_rows: int | None, max_cols: int | None,
           rows_divide: int | None) -> list[RegisterTile]:
    """Every tile whose step fits ``regs`` registers (within the extents given)."""
    col_cap = max(1, -(-max_cols // lanes)) if max_cols else regs
    out: list[RegisterTile] = []
    for nv in range(1, min(col_cap, regs) + 1):
        mr = 1
        while RegisterTile(mr, nv, lanes).registers <= regs and (max_rows is None or mr <= max_rows):
            if rows_divide is None or rows_divide % mr == 0:
                out.append(RegisterTile(mr, nv, lanes))
            mr += 1
    return out


def panel_group(target: Target, tile: RegisterTile, k_extent: int, itemsize: int = 4,
                panels: int | None = None) -> int:
    """How many packed panels (``k_extent x tile.cols`` each) one row block of the other operand
    sweeps before moving on: at least as many as fit in half of L2 together (the other half
    holds that row block and the output). Given the ``panels`` there are: for panels narrower
    than :data:`REUSE_COLUMNS` columns, as many as leave :data:`MIN_GROUPS` groups (the loop
    the threads share), however large the group then is; for panels that wide, just those
    that fit; and never so many that fewer than :data:`MIN_GROUPS` groups are left (one panel
    each where there are fewer panels).

    The row block is read from memory once per group and from L1/L2 for every panel after the
    first, while each panel is streamed, in order, once per row block. A group of narrow panels
    reloads the row block often, and that costs more than streaming the panels from L3, which
    the prefetchers keep ahead of: on AVX2 (2 cores, 512 KiB L2, 16-column panels) a 2048 x
    2048 product ran 1.12x faster with 16 panels per group (2 MiB, in L3) than with the 2 that
    fit in half of L2. A 64-column AVX-512 panel alone already uses each row block value for 64
    columns, and streaming more panels from L3 then costs more than it saves:
    on AVX-512 (Zen 5, 1 MiB L2) at 2048 one panel per group (512 KiB, in L2) ran 1.10x faster
    than the 4 that left 8 groups (478 against 435 GFLOP/s, interleaved, two threads). Wide
    panels too leave :data:`MIN_GROUPS` groups where there are that many panels: on Zen 4 (2 MiB
    L2) the 8 panels of a 512 product all fitted, so one group held them all and the threads'
    loop ran once (188 GFLOP/s on two threads; 399 with groups of one panel; 1024 and 2048 went
    from 335 and 349 to 367 and 409, `python -m benchmarks --only matmul --repeat 9 --no-auto`)."""
    panel = max(k_extent * tile.cols * itemsize, 1)
    fit = max(1, (target.l2_bytes // 2) // panel)
    if panels is None:
        return fit
    group = fit if tile.cols >= REUSE_COLUMNS else max(fit, -(-panels // MIN_GROUPS))
    return max(1, min(group, panels, panels // MIN_GROUPS))  # MIN_GROUPS groups left for the threads


def strip_rows(target: Target, row_bytes: int, halo: int = 0) -> int:
    """Rows of a strip whose intermediate (``rows + halo`` rows of ``row_bytes``) fits in half
    of L2, at least one and a multiple of 4 past 4: the blur's horizontal pass per strip."""
    rows = max(1, (target.l2_bytes // 2) // max(row_bytes, 1) - halo)
    return rows if rows < 4 else rows - rows % 4


def reduction_lanes(target: Target, dtype: str = "float32") -> int:
    """Partial results a row reduction keeps (``rfactor`` over a split by this many, vectorized):
    whole vectors, as many independent ones as the add latency times the pipes asks for (a
    power of two, at most half the register file), so a reduction over data in L1 runs at
    the pipes' pace rather than the latency's."""
    chains = min(FMA_LATENCY * target.fma_pipes, max(target.registers // 2, 1))
    return target.vector_lanes(dtype) * (1 << (chains.bit_length() - 1))


CACHE_LINE_BYTES = 64  # x86-64 and most ARM cores; a larger line only makes half the hints redundant


def prefetch_step(target: Target, dtype: str = "float32") -> int:
    """Elements between two prefetch hints in a row's pass: a cache line's worth, at least a
    vector (one hint per line: a second to the same line is an instruction spent for nothing)."""
    from ..ir.dtype import dtype as as_dtype

    return max(target.vector_lanes(dtype), CACHE_LINE_BYTES // max(as_dtype(dtype).bits // 8, 1))


def stream_chunk(target: Target, itemsize: int = 4) -> int:
    """Elements per parallel chunk of a streaming loop: half of L2, so a thread's chunk of each
    operand is a few hundred KiB (long enough for the prefetchers, small enough to share out)."""
    return max(target.vector_lanes("float32"), (target.l2_bytes // 2) // itemsize)


def fma_chains(target: Target) -> int:
    """Independent accumulator chains an FMA-peak loop can keep in registers: every register
    but the multiplier and the addend. Fewer leave pipes idle when latency x pipes is large;
    more spill to the stack, and the loop measures loads and stores instead of FMAs."""
    chains = target.registers - PEAK_OPERANDS
    if chains < 1:
        raise BuildError(f"target {target}: {target.registers} vector registers leave none for an "
                         "accumulator; give the target at least 3 (vector_registers=...)")
    return chains
