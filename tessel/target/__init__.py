"""Targets as values: what a kernel is compiled for, and this machine probed as one.

``tessel.build(s, args, target=...)`` takes a :class:`Target`, a string (``"c"``,
``"python"``, ``"c -mcpu=skylake-avx512 -vector-bytes=32"``) or nothing (this machine's C
target, :func:`host`). The passes and code generators receive the resolved Target as an
argument; nothing below the driver asks the machine. ``tessel.target.tiles`` derives schedule
shapes (register tiles, cache blocks) from a Target's registers, lanes and caches.
"""

from .backends import Backend, backend, register_backend
from .host import host, resolve
from .target import KINDS, STREAMING_STORES, Target, as_target, parse

__all__ = ["KINDS", "STREAMING_STORES", "Backend", "Target", "as_target", "backend", "host", "parse",
           "register_backend", "resolve"]
