"""GPU schedules (TVM's GPU tutorials and tests, written for tessel): each module has a
``schedule(...)`` function returning ``(s, args)`` that the tests import, and run as a script
it compiles for the cuda target and prints the kernels' static figures."""
