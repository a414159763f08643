"""The test suite. `make test` runs it in two worker processes (pytest-xdist) on a machine of two
cores or more; each would otherwise leave one core idle most of the time (most tests run one
thread of Python).

Beside another busy process, OpenMP's default spin takes the cores the other process needs,
and both crawl (aiayn/runtime/threads.py). So the workers' PyTorch, and the commands the tests
start, take the short spin of processes that share the cores, the one ``aiayn train`` takes;
set here, before PyTorch loads; a policy the user set is kept."""

from aiayn.runtime.threads import set_wait_policy

set_wait_policy("train")
