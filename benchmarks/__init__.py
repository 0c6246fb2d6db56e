"""tessel's benchmarks: ``python -m benchmarks`` (``--quick`` for a smoke run).

Each kernel is timed with the schedule a user writes (``examples/fast_*.py``) beside NumPy and,
when installed (``pip install .[peers]``), Halide and TVM; see docs/performance.md (how) and benchmarks/results/ (the runs).
"""
