"""The test suite. `make test` runs it in two worker processes (pytest-xdist) on a machine of two
cores or more; each would otherwise leave one core idle most of the time (most tests run one
thread of Python).

Beside another busy process, OpenMP's default spin (its idle threads spin about 300,000
iterations before sleeping) takes the cores the other process needs, and both crawl
(aiayn/runtime/threads.py): the workers' PyTorch, and the commands the tests start, take the
short spin aiayn's own commands take on a busy machine. Set here, before PyTorch loads; a spin
the user set is kept."""

import os

if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "3000")  # threads.SHARED_SPIN_COUNT
