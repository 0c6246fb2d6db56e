"""``python -m benchmarks.gpu_static``: the GPU examples' static figures, no GPU needed.

Each example of ``examples/gpu`` is compiled with nvcc for sm_80 and sm_90 and one row per
kernel is printed: threads per block, registers, shared memory, spills, the occupancy
estimate (resident warps per SM from registers, shared memory and block size, and what limits
it), the machine instructions each kernel holds (``sass_instructions``, read from the cubin's
ELF sections without any tool) and counts by kind (SASS where ``cuobjdump`` is installed, else
PTX: the ``counted_in`` column says which). A change in a schedule or in the generator that costs
registers, spills or occupancy shows here without a GPU. Writes ``results/gpu_static.json``
too (``--out`` to move it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from examples.gpu import conv2d, gemm, row_reduce, softmax
from examples.gpu.report import figures, show

CASES = (
    ("gemm 256^3: shared tiles, vthreads, cooperative fetch", gemm.schedule, {}),
    ("conv2d 14x14x32x64 -> 64, 3x3: shared + local caches", conv2d.schedule, {}),
    ("row sums 1024x1000, 32 threads/row: warp shuffles", row_reduce.schedule, {}),
    ("row sums 1024x1000, 256 threads/row: shuffles + shared partials", row_reduce.schedule,
     {"threads": 256, "rows_per_block": 1}),
    ("softmax 256x1000: three kernels", softmax.schedule, {}),
)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="folder for gpu_static.json")
    opts = ap.parse_args(argv)
    table = []
    for title, make, kwargs in CASES:
        s, args = make(**kwargs)
        rows = figures(s, args)
        show(title, rows)
        table += [{"case": title, **r} for r in rows]
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_static.json").write_text(json.dumps(table, indent=1))
    return table


if __name__ == "__main__":
    main()
