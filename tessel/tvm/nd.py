"""``tvm.nd`` and TVM's devices: arrays that live in NumPy, on the CPU.

A :class:`NDArray` owns one C-contiguous NumPy array; a compiled kernel writes its outputs
into it in place, and ``.numpy()`` returns a copy, as TVM's does. Devices follow TVM's
``Device(device_type, device_id)``. Arrays live on the CPU; an array "on" a CUDA device
(``tvm.cuda(0)``) is one too, since a module built for ``"cuda"`` runs its kernels on the GPU
where there is one (copying in and out) and on the simulator where there is none. An array asked
for on any other device is refused with what to use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError
from ._names import RefusesMissing, missing_names

# DLPack's device type codes, as TVM numbers them
_TYPES = {"cpu": 1, "llvm": 1, "c": 1, "stackvm": 1, "python": 1, "cuda": 2, "gpu": 2, "nvptx": 2,
          "cl": 4, "opencl": 4, "vulkan": 7, "metal": 8, "vpi": 9, "rocm": 10, "ext_dev": 12,
          "hexagon": 16, "webgpu": 15}
_NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm", 12: "ext_dev",
          15: "webgpu", 16: "hexagon"}


@dataclass(frozen=True)
class Device:
    """``tvm.device("llvm", 0)``, ``tvm.cpu(0)``: where an array lives (here: the CPU)."""

    device_type: int
    device_id: int = 0

    @property
    def exist(self) -> bool:
        """The CPU, and CUDA: its kernels run on the GPU or on the simulator (``cuda-sim``)."""
        return self.device_type in (1, 2)

    def sync(self) -> None:
        """Kernels run synchronously on the CPU: nothing to wait for."""

    def __str__(self) -> str:
        return f"{_NAMES.get(self.device_type, self.device_type)}({self.device_id})"

    __repr__ = __str__


def device(dev_type: str | int, dev_id: int = 0) -> Device:
    """A device by TVM's name (``"llvm"``, ``"cpu"``, ``"cuda"`` ...) or type code."""
    if isinstance(dev_type, str):
        kind = dev_type.split()[0].lower() if dev_type.strip() else ""
        if kind not in _TYPES:
            raise ArgumentError(f"tvm.device({dev_type!r}): unknown device; tessel runs on 'cpu' (also "
                                "spelled 'llvm' or 'c')")
        return Device(_TYPES[kind], int(dev_id))
    if isinstance(dev_type, int) and dev_type in _NAMES:
        return Device(dev_type, int(dev_id))
    raise ArgumentError(f"tvm.device({dev_type!r}): a device is a name such as 'cpu' or a DLPack type code")


def cpu(dev_id: int = 0) -> Device:
    return Device(1, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """``tvm.cuda(0)`` (``tvm.gpu`` before TVM 0.8): arrays for modules built for ``"cuda"``."""
    return Device(2, dev_id)


gpu = cuda


def _on_cpu(dev: Device | None, what: str) -> None:
    if dev is not None and (not isinstance(dev, Device) or not dev.exist):
        raise ArgumentError(f"{what}: tessel's TVM arrays live on the CPU (or CUDA), not on {dev}; "
                            "pass tvm.cpu(0) or leave the device out")


class NDArray(RefusesMissing):
    """An array a kernel reads or writes; ``.numpy()`` copies it out."""

    _tvm_name = "tvm.nd.NDArray"

    def __init__(self, data: np.ndarray, dev: Device | None = None):
        # always our own C-ordered copy (TVM's arrays do not alias the NumPy source); not
        # np.ascontiguousarray, which makes a 0-d array 1-d and so breaks rank-0 tensors
        self._data = np.array(data, order="C", copy=True)
        self.device = dev or cpu(0)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> str:
        return str(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numpy(self) -> np.ndarray:
        return self._data.copy()

    asnumpy = numpy  # TVM before 0.8

    def copyfrom(self, source) -> NDArray:
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self.shape:
            raise ArgumentError(f"NDArray.copyfrom: shape {src.shape} does not match the array's {self.shape}")
        self._data[...] = src.astype(self._data.dtype, copy=False)
        return self

    def copyto(self, target):
        """Into another array (an NDArray, or the NumPy array a packed function was handed), or
        onto a device (a new NDArray)."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        if isinstance(target, np.ndarray):
            if target.shape != self.shape:
                raise ArgumentError(f"NDArray.copyto: shape {self.shape} does not match the target's {target.shape}")
            target[...] = self._data
            return target
        _on_cpu(target, "NDArray.copyto")
        return NDArray(self._data, target)

    def __setitem__(self, key, value) -> None:
        if not (isinstance(key, slice) and key == slice(None)):
            raise ArgumentError("NDArray supports only a[:] = value (as TVM's); use .numpy() for element access")
        self.copyfrom(value)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"


def array(arr, device: Device | None = None) -> NDArray:
    """``tvm.nd.array(np_array, dev)``: a copy of ``arr`` as an NDArray."""
    _on_cpu(device, "tvm.nd.array")
    if isinstance(arr, NDArray):
        arr = arr.numpy()
    return NDArray(np.asarray(arr), device)


def empty(shape, dtype: str = "float32", device: Device | None = None) -> NDArray:
    _on_cpu(device, "tvm.nd.empty")
    return NDArray(np.empty(tuple(int(s) for s in shape), dtype=dtype), device)


__getattr__ = missing_names(__name__)
