"""Declared buffers: a view (shape, strides, element offset) that code outside tessel's loops
works on, bound to a region of a tensor when the kernel is lowered.

``te.extern`` hands its function one per input and output, and a tensor intrinsic declares one
per operand (``decl_tensor_intrin``). The view speaks of *its own* coordinates; only the bind
(an ``AttrStmt`` ``buffer_bind_scope`` around the code that uses it, resolved by storage
flattening) says which tensor and which region it stands for. So the same micro-kernel body
serves every tile it is applied to: its element offset and strides are variables that the bind
sets from where the tile lies.

Everything a user may take from a view is an ordinary expression, so no new statement kind
is needed: ``access_ptr`` is the address of its first element (``address_of`` of a load),
``vload``/``vstore`` read and write at ``elem_offset + sum(index * stride)``, and an array
handed whole to a packed call is ``tsl_array(first element, mask, shape..., strides...)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DefinitionError
from . import expr as E
from .dtype import DTypeLike
from .dtype import dtype as to_dtype
from .stmt import Buffer, BufferStore

#: the Call ops built here (entries of the one intrinsic table, ``ir/intrinsics.py``)
ADDRESS_OF = "address_of"
ARRAY = "tsl_array"


class DeclBuffer(Buffer):
    """``decl_buffer``: a strided view with an element offset, bound to a tensor region later.

    ``strides`` are in elements; a view declared without them is compact (row-major over its
    shape) and can be bound only to a region laid out that way. ``elem_offset`` is 0 for
    ``offset_factor=0`` (the view starts where the tensor starts), else a variable the bind
    sets. ``writes`` says whether code may write through it (an extern's outputs, an
    intrinsic's result): arrays and pointers taken from it carry that as their access mask.
    """

    __slots__ = ("strides", "elem_offset", "offset_factor", "data_alignment", "compact", "writes")

    def __init__(self, name: str, dtype: DTypeLike, shape, strides=None, elem_offset=None,
                 scope: str = "global", offset_factor: int = 0, data_alignment: int = -1):
        super().__init__(name, dtype, shape, scope)
        if self.dtype.lanes != 1 or self.dtype.is_handle:
            raise DefinitionError(f"decl_buffer {name}: dtype {self.dtype} is not a scalar element type")
        for k, n in enumerate(self.shape):
            if not n.dtype.is_integer:
                raise DefinitionError(f"decl_buffer {name}: dimension {k} is `{n}` of dtype {n.dtype}; sizes are integers")
        self.compact = not strides
        if strides:
            if len(strides) != len(self.shape):
                raise DefinitionError(f"decl_buffer {name}: {len(strides)} strides for {len(self.shape)} dimensions")
            self.strides = tuple(E.convert(s) for s in strides)
        else:
            self.strides = _compact_strides(self.shape)
        if not isinstance(offset_factor, int) or offset_factor < 0:
            raise DefinitionError(f"decl_buffer {name}: offset_factor must be an int >= 0, got {offset_factor!r}")
        if elem_offset is None:
            elem_offset = E.const(0) if offset_factor == 0 else E.Var(f"{name}_elem_offset", "int32")
        self.elem_offset = E.convert(elem_offset)
        self.offset_factor = offset_factor
        self.data_alignment = data_alignment
        self.writes = True

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def offset_of(self, indices) -> E.PrimExpr:
        """The element offset of ``indices`` (in the view's coordinates) in the bound storage."""
        if not isinstance(indices, list | tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise DefinitionError(f"buffer {self.name} has {self.ndim} dimension(s), indexed with {len(indices)}")
        off = self.elem_offset
        for i, s in zip(indices, self.strides):
            off = E.add(off, E.mul(i, s))
        return off

    @property
    def data(self) -> E.PrimExpr:
        """The start of the bound storage (TVM's ``buffer.data``), before ``elem_offset``."""
        return address_of(self, E.const(0), "rw" if self.writes else "r")

    def access_ptr(self, access_mask="rw", ptr_type: str = "handle", content_lanes: int = 1, offset=0,
                   extent=None) -> E.PrimExpr:
        """The address of the view's first element (plus ``offset`` elements), for an extern call
        (``extent``, TVM's hint of how much is touched, changes nothing here)."""
        mask = _mask_text(access_mask, self.name)
        return address_of(self, E.add(self.elem_offset, offset), mask)

    def vload(self, begin, dtype: DTypeLike | None = None) -> E.PrimExpr:
        """The element at ``begin`` (one index per dimension)."""
        if dtype is not None and to_dtype(dtype) != self.dtype:
            raise DefinitionError(f"buffer {self.name}: vload of {dtype} from a {self.dtype} buffer; tessel loads "
                                  "one element of the buffer's own dtype (cast the result instead)")
        return E.BufferLoad(self, (self.offset_of(begin),))

    def vstore(self, begin, value) -> BufferStore:
        """A store of ``value`` at ``begin``: a statement for an extern's or intrinsic's body."""
        value = E.cast(value, self.dtype)
        return BufferStore(self, value, (self.offset_of(begin),))

    def __getitem__(self, indices) -> E.PrimExpr:
        return self.vload(indices if isinstance(indices, tuple) else (indices,))

    __hash__ = object.__hash__


def _compact_strides(shape) -> tuple[E.PrimExpr, ...]:
    out: list[E.PrimExpr] = []
    acc: E.PrimExpr = E.const(1)
    for n in reversed(shape):
        out.append(acc)
        acc = E.mul(acc, n)
    return tuple(reversed(out))


def _mask_text(mask, name: str) -> str:
    """TVM's access masks: "r", "w", "rw" or the bits 1 (read) and 2 (write)."""
    if isinstance(mask, int) and not isinstance(mask, bool) and mask in (1, 2, 3):
        return {1: "r", 2: "w", 3: "rw"}[mask]
    if isinstance(mask, str) and mask and set(mask) <= {"r", "w"}:
        return "".join(c for c in "rw" if c in mask)
    raise DefinitionError(f"buffer {name}: access_mask {mask!r} must be 'r', 'w', 'rw' (or 1, 2, 3)")


def address_of(buf: Buffer, offset, mask: str = "rw") -> E.PrimExpr:
    """A pointer to element ``offset`` of ``buf`` (the load is never executed, only its address)."""
    return E.Call("handle", ADDRESS_OF, (E.BufferLoad(buf, (E.convert(offset),)), E.StringImm(mask)))


def array_arg(buf: DeclBuffer) -> E.PrimExpr:
    """A whole view as one argument of a packed call: data, shape and strides (a DLTensor)."""
    first = E.BufferLoad(buf, (buf.elem_offset,))
    mask = E.StringImm("rw" if buf.writes else "r")
    return E.Call("handle", ARRAY, (first, mask, *(E.cast(n, "int64") for n in buf.shape),
                                    *(E.cast(s, "int64") for s in buf.strides)))


def array_parts(call: E.Call) -> tuple[E.BufferLoad, str, Sequence[E.PrimExpr], Sequence[E.PrimExpr]]:
    """The first element, access mask, shape and strides of a ``tsl_array`` call."""
    first, mask, *rest = call.args
    n = len(rest) // 2
    return first, mask.value, rest[:n], rest[n:]


class BufferBind:
    """What a ``buffer_bind_scope`` attribute binds: the view ``buffer`` to ``tensor``; the
    region (one Range per tensor dimension) is the attribute's value, so loop variables in it
    are substituted like any expression."""

    __slots__ = ("buffer", "tensor")

    def __init__(self, buffer: DeclBuffer, tensor):
        self.buffer, self.tensor = buffer, tensor

    @property
    def name(self) -> str:
        return f"{self.buffer.name} -> {self.tensor.name}"


class DimAlign:
    """What a ``buffer_dim_align`` attribute asks of the storage of ``tensors`` (storage_align):
    dimension -> (factor, offset), the stride of that dimension being ``k*factor + offset``."""

    __slots__ = ("align", "tensors")

    def __init__(self, tensors, align: dict[int, tuple[int, int]]):
        self.tensors, self.align = tuple(tensors), dict(align)

    @property
    def name(self) -> str:
        return ", ".join(t.name for t in self.tensors) + " " + ", ".join(
            f"dim {d}: stride % {f} == {o}" for d, (f, o) in sorted(self.align.items()))


def aligned_strides(extents, align: dict[int, tuple[int, int]]) -> tuple[list, object]:
    """Row-major strides of ``extents`` with the strides of the dimensions in ``align`` padded
    up to ``k*factor + offset``; and the number of elements the layout spans."""
    strides: list = [None] * len(extents)
    acc = E.const(1, extents[-1].dtype) if extents else E.const(1)
    for k in range(len(extents) - 1, -1, -1):
        if k in align:
            f, off = align[k]
            acc = E.add(acc, E.floormod(E.sub(E.const(f + off, acc.dtype), E.floormod(acc, f)), f))
        strides[k] = acc
        acc = E.mul(acc, extents[k])
    return strides, acc


def decl_buffer(shape, dtype: DTypeLike = "float32", name: str = "buffer", data=None, strides=None,
                elem_offset=None, scope: str = "", data_alignment: int = -1, offset_factor: int = 0,
                buffer_type: str = "", axis_separators=None, span=None) -> DeclBuffer:
    """A view to bind to a tensor region (TVM's ``tvm.tir.decl_buffer``; ``data`` is not taken:
    the storage is always the bound tensor's)."""
    if data is not None:
        raise DefinitionError(f"decl_buffer {name}: data= is not supported; the view's storage is the tensor it "
                              "is bound to (te.extern's inputs and outputs, a tensor intrinsic's operands)")
    if isinstance(shape, int | E.PrimExpr):
        shape = (shape,)
    return DeclBuffer(name, dtype, shape, strides, elem_offset, scope or "global", offset_factor, data_alignment)


__all__ = ["ADDRESS_OF", "ARRAY", "BufferBind", "DeclBuffer", "DimAlign", "aligned_strides", "address_of", "array_arg", "array_parts", "decl_buffer"]
