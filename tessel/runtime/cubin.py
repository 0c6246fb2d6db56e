"""Instruction counts read straight from a cubin, for machines without ``cuobjdump``.

A cubin is an ELF file; each kernel's machine code (SASS) is the section ``.text.<kernel>``.
From Volta on (every architecture the cuda target accepts) each SASS instruction is encoded in
128 bits, so a section's size divided by 16 is the number of instructions the kernel holds
(the alignment padding at its end included: ``BRA`` to itself and ``NOP``). That needs no tool
at all, so the static figures count real machine instructions even where the toolkit was
installed without its binary utilities, as on these machines (CUDA 13's nvcc and ptxas only).
"""

from __future__ import annotations

import struct

from ..errors import BuildError

SASS_BYTES = 16  # one instruction, sm_70 and later


def cubin_instructions(cubin: bytes) -> dict[str, int]:
    """Per kernel, the number of SASS instructions in its ``.text.<kernel>`` section."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise BuildError("the cubin nvcc wrote is not a 64-bit little-endian ELF file; "
                         "cannot count its instructions")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    names_at = sections[shstrndx][4]
    out: dict[str, int] = {}
    for name_off, _type, _flags, _addr, _offset, size in sections:
        end = cubin.index(b"\0", names_at + name_off)
        name = cubin[names_at + name_off:end].decode("ascii", "replace")
        if name.startswith(".text."):
            out[name[len(".text."):]] = size // SASS_BYTES
    return out


__all__ = ["SASS_BYTES", "cubin_instructions"]
