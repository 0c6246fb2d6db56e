"""Runnable examples; the ``fast_*`` ones are the schedules ``python -m benchmarks`` times."""
