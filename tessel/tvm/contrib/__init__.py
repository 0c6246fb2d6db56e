"""``tvm.contrib``: the parts of TVM's contrib that tessel offers (tedd, utils, cc, clang, cblas, nvcc)."""

from .._names import missing_names

__getattr__ = missing_names(__name__)
