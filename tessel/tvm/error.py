"""``tvm.error``: TVM's error classes, as tessel's.

Code that catches ``tvm.error.TVMError`` must catch what tessel raises, so TVMError is
tessel's base error (``tessel.errors.TVMError`` where tessel defines one, else
:class:`~tessel.errors.TesselError` itself).
"""

from __future__ import annotations

from .. import errors as _errors
from ._names import missing_names

TVMError = getattr(_errors, "TVMError", _errors.TesselError)
InternalError = _errors.InternalError

__getattr__ = missing_names(__name__, ("tessel.errors",))
